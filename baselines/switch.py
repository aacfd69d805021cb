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

``switch-short`` (:class:`ShortSliceSwitch`) switches only where a rescale costs at least
:data:`SHORT_SLICE_RESCALE_SHARE` of a slice, and plays ``base`` alone elsewhere. On the
validation splits the switch pays or ties on every family with slices of 300 s or less
(30 s rescales: 10-50 % of a slice; philly-vc 0.934x, mixed 0.983x, pollux 1.002x
against slaq-window's 1.000 / 1.083 / 1.023) and loses or ties on every family with 600 s
slices (5 %; synthetic-16 1.063x against slaq-window's 1.005x, where Tiresias's rigid
sizes leave a third of the slices with idle GPUs while jobs wait). Resizing a job every
slice costs little on long slices, so slaq-window's starvation there is brief; on short
slices each resize eats much of the slice and Tiresias, which never resizes, wins.
"""

from __future__ import annotations

from baselines.allocation import AllocationPolicy, Requests, check_slots
from baselines.slaq_window import WindowSlaqAllocator
from baselines.tiresias import TiresiasScheduler
from cluster_envs.errors import ConfigError
from cluster_envs.policies.context import (
    SHORT_SLICE_RESCALE_SHARE,
    PolicyContext,
    switching,
)
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.view import ClusterView


class SwitchAllocator(AllocationPolicy):
    """``base``'s counts unless they starve an eligible job, else ``other``'s.

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
        base: The allocator followed by default (``slaq-window``).
        other: The allocator of the slices where ``base`` leaves a job at 0 GPUs
            (Tiresias).
        min_rescale_share: Switch only where the env's rescale cost is at least this share
            of its slice (:func:`switching`); None (default): always.
    """

    name = "switch-window"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        base: AllocationPolicy | None = None,
        other: AllocationPolicy | None = None,
        min_rescale_share: float | None = None,
    ) -> None:
        super().__init__(num_slots)
        if min_rescale_share is not None and not min_rescale_share >= 0:
            raise ConfigError(f"min_rescale_share must be >= 0, got {min_rescale_share}")
        self.min_rescale_share = min_rescale_share
        #: Whether this env's slices let the switch switch (set by :meth:`configure`).
        self.switching = True
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
        self.switching = switching(context, self.min_rescale_share)

    def reset(self, seed: int | None = None) -> None:
        """Forget both parts' state and the counts of :attr:`choices`."""
        super().reset(seed)
        self.base.reset(seed)
        self.other.reset(seed)
        self.choices = {}

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        wanted = self.base.requests(view, state)
        starved = False
        if self.switching:
            projected = state.project(wanted)
            starved = any(projected.get(j, 0) == 0 for j in state.ids)
        key = "other" if starved else "base"
        self.choices[key] = self.choices.get(key, 0) + 1
        return self.other.requests(view, state) if starved else wanted


class ShortSliceSwitch(SwitchAllocator):
    """``switch-window`` where a rescale costs at least :data:`SHORT_SLICE_RESCALE_SHARE`
    of a slice (slices up to about 430 s with the default 30 s rescales), ``slaq-window``
    alone elsewhere."""

    name = "switch-short"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        base: AllocationPolicy | None = None,
        other: AllocationPolicy | None = None,
        min_rescale_share: float | None = SHORT_SLICE_RESCALE_SHARE,
    ) -> None:
        super().__init__(num_slots, base, other, min_rescale_share)


__all__ = ["SHORT_SLICE_RESCALE_SHARE", "ShortSliceSwitch", "SwitchAllocator", "switching"]
