"""Moldable-job heuristics: the shared machinery, SJF, max/min parallelism and random.

Every scheduler here is a :class:`~cluster_envs.policies.base.SchedulingPolicy` that starts
queued *moldable* jobs at one of a fixed set of parallelism ``levels`` (GPU counts) and
places them with consolidated first-fit, exactly as ``cluster_envs/MoldableScheduling-v0``
does, so each one gives the same metrics through the env and through the no-gym runner.

A decision is built greedily on a :class:`Plan` (a working copy of the free GPUs and of
the queue): pick a (job, level), place it, update the plan, repeat. Because every pick is
recomputed from the plan, returning all starts at once gives the same starts as being
asked once per start (what the env does).

Policies see only observable data: a job's length is ``view.estimate(job_id)`` (its prior
or fitted loss curve), never ``JobSpec.total_iterations``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.perf.speed import packed_shape
from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.placement import ConsolidatedPlacement
from cluster_envs.sim.view import ClusterView, JobStatus, JobTable
from cluster_envs.types import NO_DECISION, Allocate, Decision, Placement

#: The env's default parallelism levels.
DEFAULT_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16)


def check_levels(levels: Sequence[int]) -> tuple[int, ...]:
    """``levels`` as a tuple, or a ConfigError unless distinct, ascending ints >= 1."""
    out = tuple(int(lv) for lv in levels)
    if not out or list(out) != sorted(set(out)) or out[0] < 1:
        raise ConfigError(f"levels must be distinct, ascending and >= 1, got {tuple(levels)}")
    return out


def check_window(window: int | None) -> int | None:
    """``window`` (None = whole queue), or a ConfigError if it is < 1."""
    if window is not None and int(window) < 1:
        raise ConfigError(f"window must be >= 1 or None, got {window}")
    return None if window is None else int(window)


def job_levels(job: JobStatus, levels: Sequence[int]) -> tuple[int, ...]:
    """The levels clipped to the job's ``[min_gpus, max_gpus]``, distinct and ascending."""
    lo, hi = job.min_gpus, job.max_gpus
    return tuple(sorted({min(max(int(lv), lo), hi) for lv in levels}))


def placement_rate(view: ClusterView, job: JobStatus, placement: Placement) -> float:
    """The job's modelled iterations/s on ``placement`` (no contention: a plan's view)."""
    shape = tuple(sorted((g for _, g in placement), reverse=True))
    speed = min(float(view.node_speed[node]) for node, _ in placement)
    return job.speed.throughput(shape, speed, view.network_speed)


def packed_rate(view: ClusterView, job: JobStatus, num_gpus: int) -> float:
    """The job's modelled iterations/s on ``num_gpus`` packed GPUs of the fastest type."""
    per_node = int(view.total_gpus.max())
    speed = float(view.node_speed.max())
    return job.speed.throughput(packed_shape(num_gpus, per_node), speed, view.network_speed)


def remaining_iterations(view: ClusterView, job_id: int) -> float:
    """Estimated iterations the job still needs (prior or fitted loss curve)."""
    return view.estimate(job_id).remaining_iterations


class Plan:
    """The working state of one decision: free GPUs and the queue after the starts so far.

    Args:
        view: The snapshot the decision is made on.
        window: Consider only the first ``window`` jobs still queued (None: all).
        placement: Placement rule used for every start.
    """

    def __init__(self, view: ClusterView, window: int | None, placement: PlacementPolicy) -> None:
        self.view = view
        self.free = view.free_gpus.copy()
        self.window_size = window
        self.placement = placement
        self.started: dict[int, Placement] = {}
        self.actions: list[Allocate] = []

    @property
    def num_free(self) -> int:
        """Free GPUs left in the plan."""
        return int(self.free.sum())

    @property
    def num_queued(self) -> int:
        """Jobs still queued in the plan."""
        return len(self.view.queued_ids) - len(self.started)

    def window(self) -> list[int]:
        """The first ``window`` job ids still queued, in queue order."""
        out: list[int] = []
        for j in self.view.queued_ids:
            if j in self.started:
                continue
            out.append(j)
            if self.window_size is not None and len(out) == self.window_size:
                break
        return out

    def place(self, job: JobStatus, num_gpus: int) -> Placement | None:
        """Where ``num_gpus`` GPUs of ``job`` would go now, or None if they do not fit."""
        if num_gpus > self.num_free:
            return None
        return self.placement.place(self.view, job, num_gpus, self.free)

    def start(self, job_id: int, placement: Placement) -> None:
        """Record a start and take its GPUs."""
        for node, gpus in placement:
            self.free[node] -= gpus
        self.started[job_id] = placement
        self.actions.append(Allocate(job_id, placement))


class MoldableScheduler:
    """Base of the moldable heuristics: greedy picks on a :class:`Plan`.

    Subclasses implement :meth:`_choose`.

    Args:
        levels: Allowed GPU counts, ascending (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit, as the env).
    """

    name = "moldable"

    def __init__(
        self,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        self.levels = check_levels(levels)
        self.window = check_window(window)
        self.placement = placement or ConsolidatedPlacement("first-fit")

    def configure(self, context: PolicyContext) -> None:
        """Pick only from the env's window, at the env's levels (when it has them)."""
        if context.window is not None:
            self.window = check_window(context.window)
        if context.levels is not None:
            self.levels = check_levels(context.levels)

    def reset(self, seed: int | None = None) -> None:
        """Deterministic heuristics keep no episode state."""

    def decide(self, view: ClusterView) -> Decision:
        if not view.queued_ids or not view.free_gpus.any():
            return NO_DECISION
        plan = Plan(view, self.window, self.placement)
        self._prepare(view, plan)
        while plan.num_free and plan.num_queued:
            choice = self._choose(view, plan)
            if choice is None:
                break
            plan.start(*choice)
        return Decision(tuple(plan.actions))

    def _prepare(self, view: ClusterView, plan: Plan) -> None:
        """Hook run once per decision before the first pick."""

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        """The next (job id, placement) to start, or None to stop."""
        raise NotImplementedError

    def _levels(self, job: JobStatus) -> tuple[int, ...]:
        return job_levels(job, self.levels)


class FifoSizingScheduler(MoldableScheduler):
    """Jobs in queue order; a sizing rule picks each one's level; a misfit blocks the queue.

    Subclasses implement :meth:`_preferences`: the levels to try for the head job, best
    first; the first that fits now is taken. If none fits, nothing more starts (strict
    FIFO: later jobs do not overtake the head).
    """

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        window = plan.window()
        if not window:
            return None
        job = view.job(window[0])
        for n in self._preferences(view, plan, job):
            placement = plan.place(job, n)
            if placement is not None:
                return job.job_id, placement
        return None

    def _preferences(self, view: ClusterView, plan: Plan, job: JobStatus) -> Sequence[int]:
        raise NotImplementedError


class MaxParallelismScheduler(FifoSizingScheduler):
    """FIFO; each job gets the largest level that fits now."""

    name = "max-parallelism"

    def _preferences(self, view: ClusterView, plan: Plan, job: JobStatus) -> Sequence[int]:
        return self._levels(job)[::-1]


class MinParallelismScheduler(FifoSizingScheduler):
    """FIFO; each job gets its smallest level (the most jobs run at once)."""

    name = "min-parallelism"

    def _preferences(self, view: ClusterView, plan: Plan, job: JobStatus) -> Sequence[int]:
        return self._levels(job)[:1]


class SjfScheduler(MoldableScheduler):
    """Shortest job first at the requested size, by estimated runtime.

    The runtime is the estimated remaining iterations over the job's modelled throughput on
    its requested GPUs, packed on the fastest GPU type (a key that does not depend on the
    current free GPUs). Ties go to the earlier job. A job that does not fit now is skipped
    (the next shortest that fits starts).
    """

    name = "sjf"

    def __init__(
        self,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        super().__init__(levels, window, placement)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Forget the cached runtime keys."""
        self._keys: dict[int, tuple[float, float]] = {}
        self._keys_of: object = None
        self._sizes: dict[tuple[tuple[int, ...], tuple[int, int, int]], int] = {}

    def _prepare(self, view: ClusterView, plan: Plan) -> None:
        # A queued job's key depends only on its progress (estimates do: see
        # cluster_envs.sim.estimate), so keys are kept across decisions of one simulation.
        if self._keys_of is not view.simulation:
            self._keys, self._keys_of = {}, view.simulation

    def runtime_key_s(self, view: ClusterView, job: JobStatus) -> float:
        """Estimated runtime (s) of ``job`` at its requested size."""
        n = self._request(job)
        return remaining_iterations(view, job.job_id) / packed_rate(view, job, n)

    def _request(self, job: JobStatus) -> int:
        levels = self._levels(job)
        return max((lv for lv in levels if lv <= job.num_gpus), default=levels[0])

    def request_sizes(self, table: JobTable) -> list[int]:
        """``_request(view.job(j))`` of each job of ``table``, from its GPU columns."""
        sizes, levels = self._sizes, self.levels
        out = []
        columns = (table.num_gpus, table.min_gpus, table.max_gpus)
        for shape in zip(*(column.tolist() for column in columns), strict=True):
            n = sizes.get((levels, shape))
            if n is None:
                lo, hi = shape[1], shape[2]
                clipped = sorted({min(max(int(lv), lo), hi) for lv in levels})
                n = max((lv for lv in clipped if lv <= shape[0]), default=clipped[0])
                sizes[levels, shape] = n
            out.append(n)
        return out

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        window = plan.window()
        ranked = []
        table = view.job_table(window)
        done = table.iterations_done.tolist()
        for pos, (j, progress) in enumerate(zip(window, done, strict=True)):
            key = self._keys.get(j)
            if key is None or key[0] != progress:
                key = self._keys[j] = (progress, self.runtime_key_s(view, view.job(j)))
            ranked.append((key[1], pos, j))
        # A job asking for more GPUs than are free cannot start (plan.place says None):
        # skip it without building its JobStatus (the table synced it already).
        free, sizes = plan.num_free, None
        cls = type(self)
        if cls._request is SjfScheduler._request and cls._levels is MoldableScheduler._levels:
            sizes = self.request_sizes(table)
        for _, pos, j in sorted(ranked):
            if sizes is not None and sizes[pos] > free:
                continue
            job = view.job(j)
            placement = plan.place(job, self._request(job))
            if placement is not None:
                return j, placement
        return None


class RandomScheduler(MoldableScheduler):
    """A uniformly random feasible (job, level) -- or waiting -- at each call.

    Returns at most one start per call (the runner and the env both ask again), so the
    random numbers drawn do not depend on how the caller applies decisions. Waiting is one
    of the choices whenever something else can still happen (a running job or a pending
    arrival); no number is drawn when nothing fits.

    Args:
        levels: Allowed GPU counts (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """

    name = "random"

    def __init__(
        self,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        super().__init__(levels, window, placement)
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the generator (``None``: fresh OS entropy)."""
        self._rng = np.random.default_rng(seed)

    def decide(self, view: ClusterView) -> Decision:
        if not view.queued_ids or not view.free_gpus.any():
            return NO_DECISION
        plan = Plan(view, self.window, self.placement)
        options: list[tuple[int, int]] = []
        for j in plan.window():
            job = view.job(j)
            options += [(j, n) for n in self._levels(job) if n <= plan.num_free]
        if not options:
            return NO_DECISION
        can_wait = bool(view.running_ids) or view.num_pending > 0
        pick = int(self._rng.integers(len(options) + int(can_wait)))
        if pick == len(options):
            return NO_DECISION
        j, n = options[pick]
        placement = plan.place(view.job(j), n)
        if placement is None:  # consolidated placement fits whenever enough GPUs are free
            return NO_DECISION
        return Decision((Allocate(j, placement),))
