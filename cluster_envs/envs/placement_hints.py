"""Heuristic hints of JobPlacement (``observation="scale_free_hints"``).

The scale-free placement observation with one more per-node field per placement rule of
the FIFO heuristics (:data:`HINT_RULES`): ``next=<rule>`` is 1 on the node where that rule
puts the current job's next GPU, 0 elsewhere. A set policy that reads these fields can
reproduce each heuristic exactly (the node choice of consolidated first-fit depends on
node ids, which no permutation-invariant network sees), so cloning one is near-exact and
a learned policy departs from it only where it has learned to.

How "next" is defined, for a job of ``n`` GPUs with ``t`` GPUs tentatively placed: the
rule's placement of all ``n`` GPUs on the free GPUs when the job's placement began,
written node by node in ascending order (as the env plays a heuristic's placement,
:meth:`~cluster_envs.envs.placement.JobPlacementEnv.action_for`), gives a plan; while
the ``t`` GPUs placed so far are the plan's first ``t``, the next node is the plan's
next one. Once the placement has left the plan, it is the first node (ascending) of the
rule's placement of the ``n - t`` GPUs left on the GPUs still free.

Pure numpy over the simulator's inventory; the same state gives the same hints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cluster_envs.policies.placement import SpreadPlacement, consolidate

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: The rules hinted, as the FIFO heuristics ``fifo``, ``fifo-best-fit``, ``fifo-spread``
#: place jobs (consolidated first-fit and best-fit on the fastest type first; spread).
HINT_RULES = ("first_fit", "best_fit", "spread")
HINT_FIELDS = tuple(f"next={rule}" for rule in HINT_RULES)


def rule_nodes(rule: str, free: np.ndarray, speed: np.ndarray, num_gpus: int) -> list[int]:
    """``rule``'s placement of ``num_gpus`` GPUs on ``free``: one node id per GPU,
    ascending (empty when fewer GPUs are free)."""
    if rule == "spread":
        # SpreadPlacement reads only the free GPUs (its view and job arguments are unused).
        found = SpreadPlacement().place(cast(Any, None), cast(Any, None), num_gpus, free)
    else:
        strategy = "first-fit" if rule == "first_fit" else "best-fit"
        found = consolidate(free, speed, num_gpus, strategy)
    plan: list[int] = []
    for node, gpus in sorted(found or ()):
        plan += [int(node)] * int(gpus)
    return plan


class PlacementHints:
    """The ``next=<rule>`` fields (see the module docstring), cached per job start."""

    def __init__(self) -> None:
        self._sim: Simulator | None = None
        self._key: tuple[int, int] | None = None
        self._plans: list[list[int]] = []

    def fields(self, sim: Simulator, head: int, tentative: np.ndarray) -> np.ndarray:
        """``(num_nodes, len(HINT_RULES))`` zeros and ones: each rule's next node."""
        inv = sim.inventory
        need = sim.jobs[head].num_gpus
        placed = int(np.add.reduce(tentative))
        key = (sim.state_version, head)
        if sim is not self._sim or key != self._key:
            # The plans on the GPUs free when the job's placement began: the simulator's
            # own free GPUs (tentative ones are the env's, not yet taken from them).
            self._plans = [rule_nodes(r, inv.free, inv.speed, need) for r in HINT_RULES]
            self._sim, self._key = sim, key
        out = np.zeros((inv.num_nodes, len(HINT_RULES)), dtype=np.float32)
        if placed >= need:
            return out
        for i, (rule, plan) in enumerate(zip(HINT_RULES, self._plans, strict=True)):
            on_plan = len(plan) == need and np.array_equal(
                np.bincount(plan[:placed], minlength=inv.num_nodes), tentative
            )
            if on_plan:
                out[plan[placed], i] = 1.0
                continue
            rest = rule_nodes(rule, inv.free - tentative, inv.speed, need - placed)
            if rest:
                out[rest[0], i] = 1.0
        return out
