"""Heuristic hints of MoldableScheduling (``observation="scale_free_hints"``).

The scale-free moldable observation with, per window slot, one more field per candidate
heuristic (:data:`HINT_POLICIES`) and level: ``pick=<h>@<L>`` is 1 when heuristic ``h``,
asked now, starts this slot's job at ``L`` GPUs (a one-hot over the env's levels, so the
fields are the same at every cluster size), 0 otherwise. The global block gains
``wait=<h>``: 1 when ``h`` starts nothing now. A heuristic whose decision the env cannot
express (a job outside the window, a size that is no level) hints nothing.

The heuristics are asked exactly as :class:`~cluster_envs.envs.rollout.HeuristicAgent`
asks them when it plays them: built by the env's :meth:`policy` (the registry; the core
names no layer above it), reseeded with the episode seed at every reset, and asked
``decide(sim.view())`` once per decision point, with the env's ``action_for`` turning the
decision's first start into the hinted action. So an agent that always follows
``h``'s hint plays ``h`` exactly (tests/test_moldable_hints.py). The heuristics read
what they read when they play (estimated, never true, job lengths).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.envs.hint_panel import HeuristicPanel
from cluster_envs.errors import InfeasibleDecisionError

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import Decision

#: The heuristics hinted: the lookahead teacher's candidates (agents/teacher.py), the
#: heuristics that win some family plus the greedy extremes.
HINT_POLICIES = (
    "threshold-eta", "sjf", "tetris", "easy-backfill", "best-threshold", "max-parallelism",
)  # fmt: skip


def slot_fields(levels: tuple[int, ...]) -> tuple[str, ...]:
    """The per-slot hint fields, heuristic-major: ``pick=<h>@<L>``."""
    return tuple(f"pick={h}@{lv}" for h in HINT_POLICIES for lv in levels)


#: The global hint fields: ``wait=<h>``.
GLOBAL_FIELDS = tuple(f"wait={h}" for h in HINT_POLICIES)


class MoldableHints(HeuristicPanel):
    """Each hinted heuristic's action now (see the module docstring).

    Args:
        make_policy: Builds a configured heuristic by name (the env's ``policy``).
        action_for: The env's ``action_for`` (a decision's first start as an action).
        window: K, the env's window.
        levels: The env's levels.
    """

    def __init__(
        self,
        make_policy: Callable[[str], Any],
        action_for: Callable[[Decision], int],
        window: int,
        levels: tuple[int, ...],
    ) -> None:
        super().__init__(HINT_POLICIES, make_policy, action_for)
        self.window, self.num_levels = window, len(levels)
        self._key: tuple[Any, int, float] | None = None
        self._actions: list[int | None] = []

    def reset(self, seed: int | None) -> None:
        """A new episode: reseed every heuristic with the episode's seed."""
        self._reseed(seed)
        self._key, self._actions = None, []

    def actions(self, sim: Simulator) -> list[int | None]:
        """Each heuristic's action now (``None``: not expressible), asked once per state."""
        key = (sim, sim.state_version, sim.now_s)
        if self._key is not None and key[0] is self._key[0] and key[1:] == self._key[1:]:
            return self._actions
        if self._policies is None:
            self.reset(self._seed)
        assert self._policies is not None
        out: list[int | None] = []
        for policy in self._policies:
            try:
                out.append(self._action_for(policy.decide(sim.view())))
            except InfeasibleDecisionError:
                out.append(None)
        self._key, self._actions = key, out
        return out

    def fields(self, sim: Simulator) -> tuple[np.ndarray, np.ndarray]:
        """``(K, H * P)`` per-slot ``pick`` fields and ``(H,)`` ``wait`` fields."""
        h, p = len(HINT_POLICIES), self.num_levels
        slots = np.zeros((self.window, h * p), dtype=np.float32)
        waits = np.zeros(h, dtype=np.float32)
        if not sim.queue:  # the episode's end: nothing to decide (no heuristic is asked)
            return slots, waits
        wait = self.window * p
        for i, action in enumerate(self.actions(sim)):
            if action is None:
                continue
            if action == wait:
                waits[i] = 1.0
            else:
                k, level = divmod(action, p)
                slots[k, i * p + level] = 1.0
        return slots, waits
