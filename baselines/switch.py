"""A quality greedy that hands over to Tiresias when it would starve a job (``switch-window``).

MetisAllocation's best heuristics fail in opposite places (validation splits,
benchmarks/results/generalist_metis.md): ``slaq-window``'s greedy starves waiting jobs
where many jobs share few GPUs on short slices (pollux: 1.02x Tiresias; SLAQ 1.49x), while
Tiresias, which never resizes, leaves capacity unused on large, lightly loaded clusters
(synthetic-256: 1.37x SLAQ). :class:`SwitchAllocator` asks its ``base`` allocator for
this slice's GPU counts and keeps them unless their projection leaves an eligible job at
0 GPUs; then the whole slice follows ``other``. It is the rule of the shipped Metis
generalist's teacher (:class:`agents.teacher.StarvationSwitch`, which reads the same
counts off the env's ``action="hints"`` options) written as a heuristic over the
simulator's view, so it plays anywhere a heuristic does: in a believed fork of a lookahead
teacher, in the runner, in the benchmark harness.
"""

from __future__ import annotations

from baselines.allocation import AllocationPolicy, Requests, check_slots
from baselines.slaq_window import WindowSlaqAllocator
from baselines.tiresias import TiresiasScheduler
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.view import ClusterView


class SwitchAllocator(AllocationPolicy):
    """``base``'s counts unless they starve an eligible job, else ``other``'s.

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
        base: The allocator followed by default (``slaq-window``).
        other: The allocator of the slices where ``base`` leaves a job at 0 GPUs
            (Tiresias).
    """

    name = "switch-window"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        base: AllocationPolicy | None = None,
        other: AllocationPolicy | None = None,
    ) -> None:
        super().__init__(num_slots)
        self.base = WindowSlaqAllocator(num_slots) if base is None else base
        self.other = TiresiasScheduler(num_slots) if other is None else other
        for part in (self.base, self.other):
            part.num_slots = check_slots(num_slots)
        #: Slices played by each part (``"base"``, ``"other"``), for diagnostics.
        self.choices: dict[str, int] = {}

    def configure(self, context: PolicyContext) -> None:
        """Configure both parts (slots, slice, rescale cost, quality window)."""
        super().configure(context)
        self.base.configure(context)
        self.other.configure(context)

    def reset(self, seed: int | None = None) -> None:
        """Forget both parts' state and the counts of :attr:`choices`."""
        super().reset(seed)
        self.base.reset(seed)
        self.other.reset(seed)
        self.choices = {}

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        wanted = self.base.requests(view, state)
        projected = state.project(wanted)
        starved = any(projected.get(j, 0) == 0 for j in state.ids)
        key = "other" if starved else "base"
        self.choices[key] = self.choices.get(key, 0) + 1
        return self.other.requests(view, state) if starved else wanted


__all__ = ["SwitchAllocator"]
