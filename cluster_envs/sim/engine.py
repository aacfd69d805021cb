"""The discrete-event simulator of a GPU cluster running training jobs.

Events are kept in a heap ordered by ``(time, kind, job_id)``: at one instant
completions come first (their GPUs are free for the next decision), then ends of
rescales, then arrivals, each kind by job id -- a deterministic tie-break. Between events
every running job progresses at a constant rate (iterations/s) given by its speed model
for its current placement, so progress is integrated exactly and lazily: a job's
progress is brought up to date only when its rate changes, and its completion event is
re-keyed then (stale heap entries are skipped by a per-job version number).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from cluster_envs.config import ClusterConfig, SimConfig, get_cluster, sim_config
from cluster_envs.errors import ConfigError
from cluster_envs.sim.apply import apply_decision
from cluster_envs.sim.contention import Contention
from cluster_envs.sim.estimate import WorkEstimator
from cluster_envs.sim.inventory import GpuInventory
from cluster_envs.sim.metrics import EpisodeRecord
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Decision, JobSpec, JobState, Placement

EV_COMPLETE, EV_RESCALED, EV_ARRIVAL = 0, 1, 2
#: Progress within this many iterations of the total counts as complete (float noise).
PROGRESS_EPS = 1e-9


class Simulator:
    """A GPU cluster, a list of jobs, and time.

    Args:
        jobs: The workload's jobs (``job_id`` must be ``0..n-1``).
        cluster: Cluster preset name, ClusterConfig or mapping.
        config: Simulator settings (SimConfig or mapping).
        seed: Seeds everything random inside the simulation (loss-observation noise,
            user runtime estimates); the workload itself is fixed.

    Drive it with :meth:`step` (to the next event instant) or :meth:`advance_to`, read
    :meth:`view`, and hand decisions to :meth:`apply`.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        cluster: str | ClusterConfig = "pollux-testbed",
        config: SimConfig | dict | None = None,
        seed: int = 0,
    ) -> None:
        self.cluster = get_cluster(cluster)
        self.config = sim_config(config)
        self.jobs: tuple[JobSpec, ...] = tuple(jobs)
        self.inventory = GpuInventory(self.cluster)
        self._check_jobs()
        n = len(self.jobs)
        self.state = np.full(n, JobState.PENDING, dtype=np.int8)
        self.progress = np.zeros(n)
        self.rate = np.zeros(n)
        self.last_update_s = np.zeros(n)
        self.first_start_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.attained_gpu_s = np.zeros(n)
        self.num_restarts = np.zeros(n, dtype=np.int64)
        self.batch_size = np.array([job.batch_size for job in self.jobs], dtype=np.int64)
        self.placement: list[Placement] = [()] * n
        self.num_gpus_held = np.zeros(n, dtype=np.int64)
        self.held_since_s = np.zeros(n)
        self._version = [0] * n
        self.queue: dict[int, None] = {}  # insertion-ordered set, submission order
        self.active: dict[int, None] = {}  # running or rescaling, start order
        self.now_s = 0.0
        self.num_finished = 0
        self.num_arrived = 0
        self.num_events = 0
        self._state_version = 0
        self._events: list[tuple[float, int, int, int]] = [
            (job.submit_time_s, EV_ARRIVAL, job.job_id, 0) for job in self.jobs
        ]
        heapq.heapify(self._events)
        self.contention = Contention(
            self.inventory.num_nodes, self.config.link_contention, self.config.node_interference
        )
        self._rate_cache: dict[tuple[int, tuple[int, ...], float, float], float] = {}
        self.record = EpisodeRecord(self.config.record_timeline)
        self.seed = int(seed)
        self.estimator = WorkEstimator(self, self.seed, self.config.loss_noise_std)

    # ------------------------------------------------------------------ setup
    def _check_jobs(self) -> None:
        total = self.inventory.num_gpus
        for i, job in enumerate(self.jobs):
            if job.job_id != i:
                raise ConfigError(f"job {job.name!r} has job_id {job.job_id}, expected {i}")
            if job.min_gpus > total:
                raise ConfigError(
                    f"job {job.job_id} ({job.name!r}) needs at least {job.min_gpus} GPUs but "
                    f"cluster {self.cluster.name!r} has only {total}"
                )

    # ------------------------------------------------------------------ time
    @property
    def state_version(self) -> int:
        """A counter that changes whenever anything a policy can observe changes."""
        return self._state_version

    @property
    def done(self) -> bool:
        """True once every job of the workload has finished."""
        return self.num_finished == len(self.jobs)

    def next_event_time(self) -> float:
        """Time of the next valid event (``inf`` when none is left)."""
        events = self._events
        while events:
            t, kind, j, version = events[0]
            if kind == EV_ARRIVAL or version == self._version[j]:
                return t
            heapq.heappop(events)
        return math.inf

    def step(self) -> float:
        """Process every event of the next event instant; returns that instant."""
        t = self.next_event_time()
        if t == math.inf:
            return t
        self._process_until(t)
        return t

    def advance_to(self, time_s: float) -> None:
        """Process every event up to and including ``time_s`` and move the clock there."""
        if time_s < self.now_s:
            raise ValueError(f"cannot go back in time from {self.now_s} to {time_s}")
        self._process_until(time_s)

    def _process_until(self, t_end: float) -> None:
        events = self._events
        while events and events[0][0] <= t_end:
            t, kind, j, version = heapq.heappop(events)
            if kind != EV_ARRIVAL and version != self._version[j]:
                continue
            self.num_events += 1
            self._set_time(t)
            if kind == EV_COMPLETE:
                self._complete(j)
            elif kind == EV_RESCALED:
                self._resume(j)
            else:
                self._arrive(j)
        self._set_time(t_end)

    def _set_time(self, t: float) -> None:
        if t != self.now_s:
            self.record.account(self.now_s, t, self)
            self.now_s = t
            self._state_version += 1

    # ------------------------------------------------------------------ events
    def _arrive(self, j: int) -> None:
        self.state[j] = JobState.QUEUED
        self.queue[j] = None
        self.num_arrived += 1
        self._state_version += 1

    def _complete(self, j: int) -> None:
        self._sync_progress(j)
        self.progress[j] = self.jobs[j].total_iterations
        self.state[j] = JobState.FINISHED
        self.finish_s[j] = self.now_s
        self._release(j)
        del self.active[j]
        self.num_finished += 1
        self._state_version += 1

    def _resume(self, j: int) -> None:
        self.state[j] = JobState.RUNNING
        self._set_rate(j, self._rate_of(j, self.placement[j]))

    # ------------------------------------------------------------------ job updates
    def _sync_progress(self, j: int) -> None:
        """Bring job ``j``'s progress and attained service up to ``now_s``."""
        dt = self.now_s - self.last_update_s[j]
        if dt > 0:
            self.progress[j] += self.rate[j] * dt
            self.attained_gpu_s[j] += self.num_gpus_held[j] * dt
        self.last_update_s[j] = self.now_s

    def iterations_done(self, j: int) -> float:
        """Iterations job ``j`` has completed by ``now_s`` (no state change)."""
        return float(self.progress[j] + self.rate[j] * (self.now_s - self.last_update_s[j]))

    def _set_rate(self, j: int, rate: float) -> None:
        """Change job ``j``'s rate from now on and re-key its completion event."""
        self._sync_progress(j)
        rate = float(rate)
        self.rate[j] = rate
        self._version[j] += 1
        if rate > 0:
            remaining = max(float(self.jobs[j].total_iterations - self.progress[j]), 0.0)
            if remaining <= PROGRESS_EPS * self.jobs[j].total_iterations:
                remaining = 0.0
            heapq.heappush(
                self._events, (self.now_s + remaining / rate, EV_COMPLETE, j, self._version[j])
            )

    def _rate_of(self, j: int, placement: Placement) -> float:
        shape, speed = self.inventory.shape_and_speed(placement)
        compute_div, network_div = self.contention.factors(j, placement)
        compute = speed / compute_div
        network = self.inventory.network_speed / network_div
        spec = self.jobs[j]
        if hasattr(spec.speed, "goodput_rate"):  # adaptive batch: rate = goodput now
            done = float(self.progress[j] / spec.total_iterations)
            return spec.speed.goodput_rate(shape, compute, network, int(self.batch_size[j]), done)
        key = (id(spec.speed), shape, compute, network)
        rate = self._rate_cache.get(key)
        if rate is None:
            rate = spec.speed.throughput(shape, compute, network)
            if not rate > 0:
                raise ConfigError(f"job {j}: speed model gave throughput {rate} for {shape}")
            self._rate_cache[key] = rate
        return rate

    def _refresh_rates(self, jobs: set[int]) -> None:
        """Recompute the rates of running ``jobs`` after their neighbours changed."""
        for k in sorted(jobs):
            if self.state[k] == JobState.RUNNING:
                rate = self._rate_of(k, self.placement[k])
                if rate != self.rate[k]:
                    self._set_rate(k, rate)

    def _release(self, j: int) -> None:
        self._sync_progress(j)
        if self.record.keep_timeline:
            self.record.segments.append(
                (j, float(self.held_since_s[j]), self.now_s, self.placement[j])
            )
        self.inventory.give_back(self.placement[j])
        self.placement[j] = ()
        self.num_gpus_held[j] = 0
        self._refresh_rates(self.contention.remove(j))

    def _start(self, j: int, placement: Placement, cost_s: float) -> None:
        """Give job ``j`` the GPUs of ``placement``; it runs after ``cost_s`` seconds."""
        self._sync_progress(j)
        self.inventory.take(placement)
        self.placement[j] = placement
        self.held_since_s[j] = self.now_s
        self.num_gpus_held[j] = sum(g for _, g in placement)
        if np.isnan(self.first_start_s[j]):
            self.first_start_s[j] = self.now_s
        self.active[j] = None
        self.queue.pop(j, None)
        neighbours = self.contention.add(j, placement)
        if cost_s > 0:
            self.state[j] = JobState.RESCALING
            self._set_rate(j, 0.0)
            heapq.heappush(self._events, (self.now_s + cost_s, EV_RESCALED, j, self._version[j]))
        else:
            self.state[j] = JobState.RUNNING
            self._set_rate(j, self._rate_of(j, placement))
        self._refresh_rates(neighbours)

    def _stop(self, j: int) -> None:
        """Preempt job ``j``: it keeps its progress and returns to the queue."""
        self._set_rate(j, 0.0)
        self._release(j)
        del self.active[j]
        self.state[j] = JobState.QUEUED
        self.num_restarts[j] += 1
        # Re-insert in submission order so the queue stays FIFO-ordered.
        self.queue[j] = None
        self.queue = dict.fromkeys(sorted(self.queue, key=self._queue_key))

    def _queue_key(self, j: int) -> tuple[float, int]:
        return (self.jobs[j].submit_time_s, j)

    # ------------------------------------------------------------------ decisions
    def apply(self, decision: Decision) -> int:
        """Carry out a decision, or raise InfeasibleDecisionError and change nothing.

        Returns:
            The number of actions that changed something.
        """
        if not decision.actions:
            return 0
        changed = apply_decision(self, decision)
        if changed:
            self._state_version += 1
            self.record.sample(self)
        return changed

    # ------------------------------------------------------------------ views
    def view(self) -> ClusterView:
        """An immutable snapshot of the current state for a policy."""
        inv = self.inventory
        return ClusterView(
            time_s=self.now_s,
            cluster=self.cluster,
            free_gpus=inv.free.copy(),
            total_gpus=inv.total,
            node_speed=inv.speed,
            network_speed=inv.network_speed,
            queued_ids=tuple(self.queue),
            running_ids=tuple(self.active),
            num_pending=len(self.jobs) - self.num_arrived,
            num_finished=self.num_finished,
            make_status=self.job_status,
            estimator=self.estimator,
            version=self._state_version,
            current_version=lambda: self._state_version,
        )

    def job_status(self, j: int) -> JobStatus:
        """What a scheduler may observe of submitted, unfinished job ``j`` right now."""
        state = JobState(int(self.state[j]))
        if state in (JobState.PENDING, JobState.FINISHED):
            raise KeyError(f"job {j} is {state.name.lower()}, not queued or running")
        self._sync_progress(j)
        spec = self.jobs[j]
        first = self.first_start_s[j]
        return JobStatus(
            job_id=j,
            name=spec.name,
            model=spec.model,
            kind=spec.kind,
            state=state,
            submit_time_s=spec.submit_time_s,
            num_gpus=spec.num_gpus,
            min_gpus=spec.min_gpus,
            max_gpus=spec.max_gpus,
            batch_size=spec.batch_size,
            placement=self.placement[j],
            iterations_done=float(self.progress[j]),
            attained_gpu_s=float(self.attained_gpu_s[j]),
            first_start_s=None if np.isnan(first) else float(first),
            num_restarts=int(self.num_restarts[j]),
            recorded_duration_s=spec.recorded_duration_s,
            target_loss=spec.target_loss,
            rate_iter_per_s=float(self.rate[j]),
            speed=spec.speed,
        )

    # ------------------------------------------------------------------ checks
    def check_invariants(self) -> None:
        """Assert GPU conservation and state consistency (used by tests; O(jobs))."""
        inv = self.inventory
        used = np.zeros_like(inv.total)
        for j in self.active:
            for node, gpus in self.placement[j]:
                used[node] += gpus
        if not np.array_equal(used + inv.free, inv.total):
            raise AssertionError(f"GPU conservation broken at t={self.now_s}: {used} + {inv.free}")
        if (inv.free < 0).any() or inv.num_free != int(inv.free.sum()):
            raise AssertionError(f"free GPU count inconsistent at t={self.now_s}")
        for j in self.queue:
            assert self.state[j] == JobState.QUEUED and not self.placement[j]
        for j in self.active:
            assert self.state[j] in (JobState.RUNNING, JobState.RESCALING)
        assert (self.progress <= np.array([s.total_iterations for s in self.jobs]) * 1.000001).all()
