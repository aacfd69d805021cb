"""Round-based GPU (re-)allocation heuristics for malleable jobs (MetisAllocation-v0).

Every policy here requests a GPU count for each *eligible* job (the ``num_slots`` lowest
ids in the system, as the env's action slots) once per decision instant; the shared
projection and placement rule of :mod:`cluster_envs.policies.projection` turns the requests
into a :class:`~cluster_envs.types.Decision`. Asked again at the same instant, a policy
repeats its requests, which now change nothing, so the runner settles after one decision
-- exactly what one env step does -- and the policy gives the same metrics through the
env (``env.unwrapped.action_for(decision)``) and through the no-gym runner.

Policies read only what a scheduler can observe: lengths come from
``view.estimate(job_id)`` (prior or fitted loss curve), speeds from the job's profiled
throughput model (``JobStatus.speed``) on a packed placement of the fastest GPU type.

* :class:`FairShareAllocator` (``fair``): equal GPUs for every eligible job.
* :class:`OptimusAllocator` (``optimus``): Optimus's greedy -- the next GPUs go to the
  job whose estimated remaining time drops most per GPU.
* :class:`SlaqAllocator` (``slaq``): SLAQ's greedy -- the next GPUs go to the job whose
  predicted normalised-quality gain over the next slice grows most per GPU.
* :class:`RigidFifoAllocator` (``fifo-rigid``): FIFO at the requested size, never resized.
* :class:`RandomAllocator` (``random-alloc``): a uniform random count per job.

Tiresias (``tiresias``) lives in :mod:`baselines.tiresias`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.perf.speed import SpeedModel, packed_shape
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState, plan_allocation
from cluster_envs.sim.copying import copy_sharing
from cluster_envs.sim.quality import curve_integral
from cluster_envs.sim.view import ClusterView, JobStatus, JobTable
from cluster_envs.types import NO_DECISION, Decision

#: Defaults matching MetisAllocation-v0's default preset and SimConfig.
DEFAULT_SLICE_S = 600.0
DEFAULT_SWITCH_COST_S = 30.0
#: Weight of the fraction-of-training gain next to the quality gain in SLAQ's utility
#: (a tie-breaker: once quality has plateaued, GPUs still go where training advances).
FRACTION_TIE_WEIGHT = 1e-3
#: Smallest per-GPU utility gain the greedy allocators act on.
MIN_GAIN = 1e-12

Requests = dict[int, int]
#: ``row(j, lo, hi)``: job ``j``'s utilities at ``lo, lo + 1, ..., hi`` GPUs (a list).
UtilityRow = Callable[[int, int, int], Sequence[float]]


def job_table(view: ClusterView, state: AllocationState) -> JobTable:
    """The eligible jobs' :class:`JobTable` (the one ``state`` was built from, if any)."""
    if state.table is not None and state.table.job_ids.tolist() == list(state.ids):
        return state.table
    return view.job_table(state.ids)


def check_slots(num_slots: int) -> int:
    """``num_slots`` as an int, or a ConfigError if it is < 1."""
    if int(num_slots) < 1:
        raise ConfigError(f"num_slots must be >= 1, got {num_slots}")
    return int(num_slots)


class AllocationPolicy:
    """Base of the allocation heuristics: subclasses implement :meth:`requests`.

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
    """

    name = "allocation"

    def __init__(self, num_slots: int = DEFAULT_NUM_SLOTS) -> None:
        self.num_slots = check_slots(num_slots)
        self._time_s: float | None = None
        self._requests: Requests = {}
        self._projected: tuple[tuple[object, ...], Requests] | None = None
        self._rates: dict[tuple[int, int], float] = {}
        self._rate_rows: dict[int, list[float | None]] = {}
        self._state: AllocationState | None = None

    def configure(self, context: PolicyContext) -> None:
        """Take the env's slot count (``cluster_envs.policies.context``)."""
        if context.num_slots is not None:
            self.num_slots = check_slots(context.num_slots)

    def __deepcopy__(self, memo: dict[int, Any]) -> AllocationPolicy:
        """A fork's copy: the rate caches (ints to floats, and to lists never changed in
        place) copied one level, the last projection (never changed in place) shared; the
        state is immutable."""
        return copy_sharing(self, memo, ("_rates", "_rate_rows", "_projected"))

    def reset(self, seed: int | None = None) -> None:
        """Forget the last decision and cached speeds."""
        self._time_s = None
        self._requests = {}
        self._projected = None
        self._rates = {}
        self._rate_rows = {}
        self._state = None

    @property
    def settles_in_one_decision(self) -> bool:
        """True when a second ``decide`` at the same instant is sure to be empty.

        Asked again at this instant, :meth:`decide` reuses its requests and projection
        (a decision moves GPUs only between the free pool and eligible jobs, so the
        eligible ids and the capacity are unchanged, and their progress was synced to now
        by the first call), and :func:`plan_allocation`'s decision left every eligible job
        at its projected count: nothing is left to do, so the runner may skip that call
        (same trajectory). Not so for a subclass with its own ``decide`` or ``_plan``
        (the artifact's repacking may stop a job in a cycle of swaps, to restart later).
        """
        cls = type(self)
        return cls.decide is AllocationPolicy.decide and cls._plan is AllocationPolicy._plan

    def decide(self, view: ClusterView) -> Decision:
        counts = self.planned_counts(view)
        if counts is None:
            return NO_DECISION
        assert self._state is not None  # planned_counts set it
        return self._plan(self._state, counts)

    def planned_counts(self, view: ClusterView) -> Requests | None:
        """Every eligible job's GPU count in the decision :meth:`decide` returns now (the
        projection of this instant's requests), or None when no job is in the system.

        With the default :meth:`_plan` the decision carries out exactly these counts, so
        a caller that needs only the counts (MetisAllocation's hints) may skip planning
        the placement; ``decide`` is this plus :meth:`_plan`, with the same caches.
        """
        if not view.queued_ids and not view.running_ids:
            return None
        state = AllocationState.from_view(view, self.num_slots, self._state)
        self._state = state
        if self._time_s != view.time_s:
            self._requests = self.requests(view, state)
            self._time_s = view.time_s
        # The projection depends on the requests, the eligible ids, their bounds and the
        # capacity only: reuse it while none of those changed (asked again at this
        # instant, or at a later one with the same requests).
        key = (state.ids, state.capacity, state.min_gpus, state.max_gpus, self._requests)
        if self._projected is None or self._projected[0] != key:
            key = (*key[:-1], dict(self._requests))  # a copy: requests may be reused
            self._projected = (key, state.project(self._requests))
        return dict(self._projected[1])

    def _plan(self, state: AllocationState, counts: Requests) -> Decision:
        """Hook: the decision that carries out ``counts`` (default: the env's placement)."""
        return plan_allocation(state, counts)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        """GPUs requested for each eligible job (``state.ids``) at this instant."""
        raise NotImplementedError

    def rate(self, view: ClusterView, job: JobStatus, num_gpus: int) -> float:
        """Modelled iterations/s of ``job`` on ``num_gpus`` packed, fastest GPUs."""
        return self.speed_rate(view, job.job_id, job.speed, num_gpus)

    def speed_rate(self, view: ClusterView, job_id: int, speed: SpeedModel, num_gpus: int) -> float:
        """:meth:`rate` of job ``job_id`` from its speed model (a :class:`JobTable` entry)."""
        key = (job_id, num_gpus)
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = packed_rates(view, speed, [num_gpus])[0]
        return rate

    def rate_row(
        self, view: ClusterView, job_id: int, speed: SpeedModel, low: int, top: int
    ) -> list[float]:
        """A list whose entries ``low..top`` are ``speed_rate(view, job_id, speed, n)``
        (others may be None: not asked yet), kept per job. A row that lacks an entry is
        replaced by a new list, never filled in place, so a fork's one-level copy of the
        cache is safe."""
        known = self._rate_rows.get(job_id)
        if known is not None and len(known) > top and None not in known[low : top + 1]:
            return cast(list[float], known)  # (low..top hold floats)
        row: list[float | None] = [None] * (top + 1)
        if known is not None:
            row[: len(known)] = known
        rates, missing = self._rates, []
        for n in range(low, top + 1):
            if row[n] is None:
                rate = rates.get((job_id, n))
                if rate is None:
                    missing.append(n)
                row[n] = rate
        for n, rate in zip(missing, packed_rates(view, speed, missing), strict=True):
            row[n] = rates[(job_id, n)] = rate
        self._rate_rows[job_id] = row
        return cast(list[float], row)  # (low..top hold floats)


def packed_rates(view: ClusterView, speed: SpeedModel, counts: Sequence[int]) -> list[float]:
    """Modelled iterations/s on each of ``counts`` packed GPUs of the fastest type (the
    fastest type read once)."""
    if not counts:
        return []
    per_node, network = view.cluster.max_gpus_per_node, view.network_speed
    fastest = float(np.max(view.node_speed))
    return [speed.throughput(packed_shape(n, per_node), fastest, network) for n in counts]


def utility_rows(utility: Callable[[int, int], float]) -> UtilityRow:
    """A :data:`UtilityRow` that asks ``utility(j, n)`` for each count."""
    return lambda j, lo, hi: [utility(j, n) for n in range(lo, hi + 1)]


def greedy_fill(
    state: AllocationState,
    counts: Requests,
    utility: Callable[[int, int], float] | None = None,
    skip_unstarted: bool = False,
    row: UtilityRow | None = None,
) -> Requests:
    """Hand out the GPUs left over ``counts`` by the best utility gain per GPU.

    Each round considers, for every eligible job at ``n`` GPUs, every larger count
    ``n2 <= max_gpus`` that fits (jumps let it cross non-concave regions, e.g. the step
    to a second node), and applies the one with the largest ``(u(n2) - u(n)) / (n2 - n)``
    (ties: fewer GPUs, then lower id). Stops when no positive gain fits.

    The utilities come from ``row`` (a :data:`UtilityRow`), else from ``utility(j, n)``.
    Each job's row is asked at its first look, for its count then and for every larger
    count it can reach in this fill (from ``max(counts[j] + 1, min_gpus)`` up to
    ``min(max_gpus, counts[j] + left)``: a job only grows and the GPUs left only shrink),
    so the utility must be defined there.

    A job's gains are computed once per count it holds: the GPUs left only shrink, so a
    later round looks at a prefix of them (the first best of that prefix), and a heap of
    each job's best gives the round's choice without scanning every job. A NaN utility
    never makes a best gain (as in a scan that compares with ``>``).
    """
    if row is None:
        if utility is None:
            raise TypeError("greedy_fill needs a utility or a row")
        row = utility_rows(utility)
    counts = dict(counts)
    left = state.capacity - sum(counts.values())
    ids, max_gpus = state.ids, state.max_gpus
    moves: dict[int, tuple[int, list[float]]] = {}  # job -> (low, gain of each n2 >= low)
    # job -> (first count, its utility, first larger count it may take, utilities from it)
    rows: dict[int, tuple[int, float, int, Sequence[float]]] = {}
    heap: list[tuple[float, int, int]] = []  # (-gain, rank, n2): ties go to lower ids

    def refresh(rank: int) -> None:
        """Push job ``ids[rank]``'s first best move within the GPUs left (if it gains)."""
        j = ids[rank]
        low, gains_of = moves[j]
        size = min(max_gpus[j], counts[j] + left) - low + 1
        if size > 0:
            fits = gains_of if size >= len(gains_of) else gains_of[:size]
            gain = max(fits)  # a NaN is never greater; the first of equal gains wins
            if gain == gain:
                k = fits.index(gain)
            else:  # a NaN first: max kept it, so scan for the first best of the rest
                gain, k = -math.inf, 0
                for i, g in enumerate(fits):
                    if g > gain:
                        gain, k = g, i
            if gain > MIN_GAIN:  # a shrinking prefix never gains more: else drop the job
                heapq.heappush(heap, (-gain, rank, low + k))

    def gains(rank: int) -> None:
        """Job ``ids[rank]``'s gain per GPU of each count it can reach now."""
        j = ids[rank]
        n = counts[j]
        top = min(max_gpus[j], n + left)
        low = max(n + 1, state.min_gpus[j])
        if top < low:  # no count to reach: nothing to value
            moves[j] = (low, [])
            return
        entry = rows.get(j)
        if entry is None:  # its count now and those it can reach (none below its minimum)
            entry = rows[j] = (n, row(j, n, n)[0], low, row(j, low, top))
        first, base, start, values = entry
        if n != first:  # it grew to a count of its row
            base = values[n - start]
        ahead = values[low - start : top - start + 1]
        steps = range(low - n, top - n + 1)
        moves[j] = (low, [(u - base) / d for u, d in zip(ahead, steps, strict=True)])
        refresh(rank)

    for rank, j in enumerate(ids):
        if not (counts[j] == 0 and skip_unstarted):
            gains(rank)
    while left > 0 and heap:
        _, rank, n2 = heapq.heappop(heap)
        j = ids[rank]
        if n2 > min(max_gpus[j], counts[j] + left):  # no longer fits: its best shrank
            refresh(rank)
            continue
        left -= n2 - counts[j]
        counts[j] = n2
        gains(rank)
    return counts


class FairShareAllocator(AllocationPolicy):
    """Equal GPUs for every eligible job (water-filling up to each job's maximum).

    Each job first gets its ``min_gpus`` in id order while they fit (with more jobs than
    GPUs the earliest submitted run); the rest is dealt one GPU at a time round-robin.
    """

    name = "fair"

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        left = state.capacity
        counts = dict.fromkeys(state.ids, 0)
        for j in state.ids:
            if state.min_gpus[j] <= left:
                counts[j] = state.min_gpus[j]
                left -= counts[j]
        growing = [j for j in state.ids if 0 < counts[j] < state.max_gpus[j]]
        while left > 0 and growing:
            for j in growing:
                if left and counts[j] < state.max_gpus[j]:
                    counts[j] += 1
                    left -= 1
            growing = [j for j in growing if counts[j] < state.max_gpus[j]]
        return counts


class RigidFifoAllocator(AllocationPolicy):
    """FIFO at the requested GPU count: running jobs keep theirs, the queue starts in
    submission order while the head fits (head-of-line blocking), nobody is resized."""

    name = "fifo-rigid"

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        counts = {j: state.count(j) for j in state.ids}
        left = state.capacity - sum(counts.values())
        asked = dict(zip(state.ids, job_table(view, state).num_gpus.tolist(), strict=True))
        for j in state.ids:
            if counts[j]:
                continue
            want = min(max(asked[j], state.min_gpus[j]), state.max_gpus[j])
            if want > left:
                break
            counts[j] = want
            left -= want
        return counts


class OptimusAllocator(AllocationPolicy):
    """Optimus's greedy allocation (Peng et al., EuroSys'18), per GPU instead of per task.

    Every job first gets ``min_gpus``, shortest estimated remaining time first, while
    GPUs last; then GPUs go where ``remaining_iterations / rate(n)`` drops most per GPU.
    """

    name = "optimus"

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        ids = state.ids
        speeds = dict(zip(ids, job_table(view, state).speed, strict=True))
        remaining = dict(zip(ids, view.remaining_iterations(ids).tolist(), strict=True))

        def seconds(j: int, n: int) -> float:
            return remaining[j] / self.speed_rate(view, j, speeds[j], n)

        def row(j: int, lo: int, hi: int) -> list[float]:  # -seconds(j, n), n = lo..hi
            rem, rates = remaining[j], self.rate_row(view, j, speeds[j], lo, hi)
            return [-(rem / rates[n]) for n in range(lo, hi + 1)]

        counts = dict.fromkeys(state.ids, 0)
        left = state.capacity
        for j in sorted(state.ids, key=lambda j: (seconds(j, state.min_gpus[j]), j)):
            if state.min_gpus[j] <= left:
                counts[j] = state.min_gpus[j]
                left -= counts[j]
        return greedy_fill(state, counts, skip_unstarted=True, row=row)


class SlaqAllocator(AllocationPolicy):
    """SLAQ's quality-driven greedy (Zhang et al., SoCC'17) over the next slice.

    A job at ``n`` GPUs is predicted to advance ``rate(n) * t / estimated_total`` of its
    training in the slice, where ``t = slice_s`` minus ``switch_cost_s`` if ``n`` differs
    from its current count (a rescale, or a restart of a job that ran before). Its
    utility is the normalised-quality gain ``Q(f + df) - Q(f)`` at the *estimated*
    fraction ``f`` plus ``FRACTION_TIE_WEIGHT * df``; GPUs go greedily where the utility
    grows most per GPU.

    Args:
        num_slots: Jobs covered per decision.
        slice_s: The scheduling interval (s).
        switch_cost_s: Time lost to a rescale or restart (s).
    """

    name = "slaq"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        slice_s: float = DEFAULT_SLICE_S,
        switch_cost_s: float = DEFAULT_SWITCH_COST_S,
    ) -> None:
        super().__init__(num_slots)
        if not slice_s > 0 or switch_cost_s < 0:
            raise ConfigError(
                f"need slice_s > 0 and switch_cost_s >= 0, got {slice_s}, {switch_cost_s}"
            )
        self.slice_s = float(slice_s)
        self.switch_cost_s = float(switch_cost_s)

    def configure(self, context: PolicyContext) -> None:
        """Take the env's slots, slice length and rescale cost (its switch cost)."""
        super().configure(context)
        if context.time_slice_s is not None:
            self.slice_s = float(context.time_slice_s)
        if context.rescale_cost_s is not None:
            self.switch_cost_s = float(context.rescale_cost_s)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        ids = state.ids
        table = job_table(view, state)
        totals = view.total_iterations(ids).tolist()
        info: dict[int, tuple[float, float]] = {
            j: (done / max(total, 1e-9), total)
            for j, done, total in zip(ids, table.iterations_done.tolist(), totals, strict=True)
        }
        ran = dict(zip(ids, (~np.isnan(table.first_start_s)).tolist(), strict=True))
        speeds = dict(zip(ids, table.speed, strict=True))
        models = dict(zip(ids, table.model, strict=True))
        current = {j: state.count(j) for j in ids}
        slice_s, switch_cost_s = self.slice_s, self.switch_cost_s

        def row(j: int, lo: int, hi: int) -> list[float]:
            """``Q(f + df) - Q(f) + FRACTION_TIE_WEIGHT * df`` at n = lo..hi (0 at n = 0),
            with ``df = rate(n) * t / total`` and ``t`` the slice less the switch cost
            when ``n`` differs from the job's count (and it ran before)."""
            if hi <= 0:  # no GPUs: no gain
                return [0.0] * (hi - lo + 1)
            frac, total = info[j]
            rates = self.rate_row(view, j, speeds[j], max(lo, 1), hi)
            curve = curve_integral(models[j])
            quality, q_now, scale = curve.quality, curve.quality(frac), max(total, 1e-9)
            t_keep = max(slice_s - 0.0, 0.0)
            t_move = max(slice_s - switch_cost_s, 0.0) if ran[j] else t_keep
            now = current[j]
            out = []
            for n in range(lo, hi + 1):
                if n == 0:
                    out.append(0.0)
                    continue
                df = rates[n] * (t_keep if n == now else t_move) / scale
                out.append(quality(frac + df) - q_now + FRACTION_TIE_WEIGHT * df)
            return out

        return greedy_fill(state, dict.fromkeys(state.ids, 0), row=row)


class RandomAllocator(AllocationPolicy):
    """A uniform random count in ``[min_gpus, max_gpus]`` per eligible job, projected.

    Jobs are stopped only when the requests exceed the cluster and the projection cuts
    them (so the policy never leaves an idle cluster with jobs waiting). Draws once per
    decision instant (nothing when no job is in the system), from a generator seeded by
    :meth:`reset`.
    """

    name = "random-alloc"

    def __init__(self, num_slots: int = DEFAULT_NUM_SLOTS) -> None:
        super().__init__(num_slots)
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._rng = np.random.default_rng(seed)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        lows = np.array([state.min_gpus[j] for j in state.ids])
        highs = np.array([state.max_gpus[j] + 1 for j in state.ids])
        draws = self._rng.integers(lows, highs)
        return {j: int(n) for j, n in zip(state.ids, draws, strict=True)}


__all__ = [
    "AllocationPolicy",
    "FairShareAllocator",
    "OptimusAllocator",
    "RandomAllocator",
    "RigidFifoAllocator",
    "SlaqAllocator",
    "greedy_fill",
]
