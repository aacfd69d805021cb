"""MetisAllocation's scale-free action and heuristic hints (issue 13).

``action="hints"``: the action is ``MultiDiscrete([len(options)] * J)``; entry ``k`` picks
one of the env's options for slot ``k`` (:func:`options_of`; by default :data:`OPTIONS`):
*follow* a candidate heuristic (its GPU count for the slot's job in this slice; the env's
``hint_policies``, by default :data:`HINT_POLICIES`), *keep* the job's current GPUs, or
*pause* it (0). The env
turns the picks into per-slot GPU requests and projects them as it projects the default
action's counts, so the action does not depend on the cluster size, and an agent that
picks heuristic ``h`` on every slot plays ``h`` exactly (tests/test_metis_hints.py).

The heuristics are asked as :class:`~cluster_envs.envs.rollout.HeuristicAgent` asks them
when it plays them: built by the env's :meth:`policy` (the registry; the core names no
layer above it), reseeded with the episode seed at every reset, and asked
``decide(sim.view())`` once per decision point, with the env's ``action_for`` turning the
decision into per-slot counts. They read what they read when they play (estimated, never
true, job lengths). A decision the env cannot express makes that option unavailable.

``observation="scale_free_hints"``: the scale-free observation
(:mod:`~cluster_envs.envs.metis_scale_free`) with, per slot, each option's GPU count as a
share of the job's maximum (``option=<o>``) and in nodes, squashed as
:func:`~cluster_envs.envs.scale_free.in_nodes` (``option_nodes=<o>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.envs.hint_panel import HeuristicPanel
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.metis_slots import held_gpus
from cluster_envs.errors import InfeasibleDecisionError, InvalidActionError

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import Decision

#: The heuristics an option follows: the winners of some family
#: (generalization_heuristics.md: slaq, optimus, tiresias) and the fair share.
HINT_POLICIES = ("slaq", "optimus", "tiresias", "fair")
#: The two options after the heuristics: keep the job's GPUs, pause it.
FIXED_OPTIONS = ("keep", "pause")


def options_of(policies: tuple[str, ...]) -> tuple[str, ...]:
    """Every option of a slot, in action order, when the options follow ``policies``."""
    return (*policies, *FIXED_OPTIONS)


def hint_fields(policies: tuple[str, ...]) -> tuple[str, ...]:
    """The per-slot hint fields (``pause`` is always 0: not shown)."""
    shown = (*policies, "keep")
    return tuple(f"{kind}={o}" for kind in ("option", "option_nodes") for o in shown)


#: Every option of a slot with the default ``hint_policies``, in action order.
OPTIONS = options_of(HINT_POLICIES)
KEEP, PAUSE = OPTIONS.index("keep"), OPTIONS.index("pause")
#: The values of MetisConfig.action.
ACTIONS = ("counts", "hints")
#: The per-slot hint fields with the default ``hint_policies``.
HINT_FIELDS = hint_fields(HINT_POLICIES)


class MetisHints(HeuristicPanel):
    """Each option's GPU count per slot now (see the module docstring).

    Args:
        make_policy: Builds a configured heuristic by name (the env's ``policy``).
        action_for: The env's ``action_for`` (a decision as per-slot counts).
        policies: The heuristics the options follow (the env's ``hint_policies``).

    Attributes:
        policies: Those names; ``options`` every option in action order (the heuristics,
            keep, pause); ``keep`` and ``pause`` the indices of the last two.
    """

    def __init__(
        self,
        make_policy: Callable[[str], Any],
        action_for: Callable[[Decision], Any],
        policies: tuple[str, ...] = HINT_POLICIES,
    ) -> None:
        super().__init__(tuple(policies), make_policy, action_for)
        self.policies = tuple(policies)
        self.options = options_of(self.policies)
        self.keep, self.pause = len(self.policies), len(self.policies) + 1
        self._table: np.ndarray | None = None

    def reset(self, seed: int | None) -> None:
        """A new episode: reseed every heuristic with the episode's seed."""
        self._reseed(seed)
        self._table = None

    def clear(self) -> None:
        """A new slice: the next :meth:`table` asks the heuristics again."""
        self._table = None

    def table(self, sim: Simulator, slots: list[int | None]) -> np.ndarray:
        """``(len(options), J)`` GPU counts per option and slot (-1: unavailable), the
        heuristics asked once per slice."""
        if self._table is not None:
            return self._table
        if self._policies is None:
            self.reset(self._seed)
        assert self._policies is not None
        out = np.zeros((len(self.options), len(slots)), dtype=np.int64)
        out[self.keep] = held_gpus(slots, sim)
        if sim.queue or sim.active:  # the episode's end: nothing to decide
            for i, policy in enumerate(self._policies):
                planned = getattr(policy, "planned_counts", None)
                if planned is not None and policy.settles_in_one_decision:
                    # An AllocationPolicy with the default decide and placement: its
                    # projected counts, which that placement carries out exactly (what
                    # action_for reads back from the decision), without placing them.
                    counts = planned(sim.view())
                    out[i] = [0 if j is None else counts[j] for j in slots]
                    continue
                try:
                    out[i] = self._action_for(policy.decide(sim.view()))
                except InfeasibleDecisionError:
                    out[i] = -1
        self._table = out
        return out


def option_mask(table: np.ndarray, slots: list[int | None]) -> np.ndarray:
    """``(J, len(options))``: available options per slot (an empty slot: only pause, the
    last option)."""
    mask = (table >= 0).T.copy()
    for k, j in enumerate(slots):
        if j is None:
            mask[k] = False
            mask[k, -1] = True
    return mask


def decode_options(
    values: np.ndarray,
    table: np.ndarray,
    slots: list[int | None],
    options: tuple[str, ...] | None = None,
) -> tuple[np.ndarray, bool]:
    """Per-slot GPU requests of the picked options, and whether a pick was masked (an
    unavailable heuristic keeps the job's GPUs; an empty slot requests 0).

    Raises:
        InvalidActionError: An entry that names no option.
    """
    num = len(table)  # the options: the heuristics, keep, pause
    bad = np.flatnonzero((values < 0) | (values >= num))
    if len(bad):
        k = int(bad[0])
        names = (
            options if options is not None else (*(f"h{i}" for i in range(num - 2)), *FIXED_OPTIONS)
        )
        raise InvalidActionError(
            f"slot {k}: option {int(values[k])} is not one of 0..{num - 1} "
            f"({', '.join(f'{i}={o}' for i, o in enumerate(names))})"
        )
    idx = np.arange(len(slots))
    invalid = not option_mask(table, slots)[idx, values].all()
    counts = table[values, idx]
    counts = np.where(counts < 0, table[num - 2], counts)  # unavailable: keep
    empty = np.array([j is None for j in slots], dtype=bool)
    return np.where(empty, 0, counts), invalid


class HintsMetisEncoder:
    """The scale-free encoder's observation with the hint fields (:func:`hint_fields` of
    the env's ``hint_policies``) after each slot's fields (see the module docstring)."""

    def __init__(self, base: Any, hints: MetisHints, node_gpus: int) -> None:
        self.base, self.hints, self.node_gpus = base, hints, float(node_gpus)
        inner: ObsLayout = base.layout
        self.inner = inner
        self.layout = ObsLayout(
            (*inner.slot_fields, *hint_fields(hints.policies)),
            inner.num_slots,
            inner.global_fields,
        )
        self.size, self.space = self.layout.size, self.layout.space()

    def __getattr__(self, name: str) -> Any:  # the rest of the encoder API: the base's
        return getattr(self.base, name)

    def describe(self) -> list[str]:
        """Every index's field name."""
        return self.layout.describe()

    def reset(self, seed: int) -> None:
        """Forget per-episode caches (the base encoder's)."""
        self.base.reset(seed)

    def encode(self, sim: Simulator, slots: list[int | None], pending: np.ndarray) -> np.ndarray:
        """The base observation, each slot row followed by its hint fields."""
        inner = self.base.encode(sim, slots, pending)
        rows, glob = self.inner.split(inner)
        table = self.hints.table(sim, slots)[:-1].T.astype(np.float32)  # (J, H + 1): no pause
        tops = np.array([sim.jobs[j].max_gpus if j is not None else 1 for j in slots])
        present = np.array([j is not None for j in slots], dtype=np.float32)[:, None]
        ok = (table >= 0) * present
        share = np.clip(table, 0, None) / np.maximum(tops, 1)[:, None]
        x = np.clip(table, 0, None) / self.node_gpus
        nodes = x / (1.0 + x)  # in_nodes, elementwise
        extra = np.concatenate([share * ok, nodes * ok], axis=1).astype(np.float32)
        out = np.concatenate([np.concatenate([rows, extra], axis=1).reshape(-1), glob])
        return out.astype(np.float32)
