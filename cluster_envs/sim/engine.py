"""The discrete-event simulator of a GPU cluster running training jobs, the one owner of
the simulation state (read-only accessors, observers). Events come from an
:class:`~cluster_envs.sim.events.EventQueue`; between events each running job progresses
at a constant rate from its speed model, integrated exactly and lazily (synced, and its
completion re-keyed, only when its rate changes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cluster_envs.config import ClusterConfig, SimConfig, get_cluster, sim_config
from cluster_envs.sim.apply import validate_decision
from cluster_envs.sim.checks import check_invariants, check_workload
from cluster_envs.sim.columns import job_column, per_job
from cluster_envs.sim.contention import Contention
from cluster_envs.sim.estimate import WorkEstimator
from cluster_envs.sim.events import EV_COMPLETE, EV_RESCALED, EventQueue
from cluster_envs.sim.inventory import GpuInventory
from cluster_envs.sim.metrics import EpisodeRecord
from cluster_envs.sim.observers import CALLBACKS, bound_callbacks
from cluster_envs.sim.ordering import submission_rank
from cluster_envs.sim.queue import JobQueue
from cluster_envs.sim.rates import RateModel
from cluster_envs.sim.rerate import PROGRESS_EPS, RateRefresh
from cluster_envs.sim.state_api import SimulatorState
from cluster_envs.sim.view import ClusterView, build_view
from cluster_envs.types import Decision, JobSpec, JobState, Placement, Preempt

# Plain ints: an IntEnum member looked up on its class costs an enum __getattr__ call.
_PENDING, _QUEUED = int(JobState.PENDING), int(JobState.QUEUED)
_RESCALING, _RUNNING = int(JobState.RESCALING), int(JobState.RUNNING)
_FINISHED = int(JobState.FINISHED)


class Simulator(RateRefresh, SimulatorState):
    """A GPU cluster, a list of jobs, and time.

    Args:
        jobs: The workload's jobs (``job_id`` must be ``0..n-1``).
        cluster: Cluster preset name, ClusterConfig or mapping.
        config: Simulator settings (SimConfig or mapping).
        seed: Seeds everything random inside the simulation (loss-observation noise,
            user runtime estimates); the workload itself is fixed.

    Drive it with :meth:`step` (to the next event instant) or :meth:`advance_to`, read
    :meth:`view` or the read-only state below, hand decisions to :meth:`apply`, and follow
    it with observers (:meth:`add_observer`, :mod:`cluster_envs.sim.observers`). Every
    public attribute is read-only: arrays are non-writeable views, ``queue``/``active``
    mapping proxies, ``placement`` a :class:`ListView`; they follow the simulation live.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        cluster: str | ClusterConfig | Mapping[str, Any] = "pollux-testbed",
        config: SimConfig | dict | None = None,
        seed: int = 0,
    ) -> None:
        self._cluster = get_cluster(cluster)
        self._config = sim_config(config)
        # A lazy job table stays one (jobs built as they are indexed); else a tuple.
        self._jobs: Sequence[JobSpec] = jobs if hasattr(jobs, "column") else tuple(jobs)
        self._inventory = GpuInventory(self._cluster)
        check_workload(self._jobs, self._cluster, self._inventory.num_gpus)
        n = self._num_jobs = len(self._jobs)
        self._state = np.full(n, _PENDING, dtype=np.int8)
        self._progress = np.zeros(n)
        self._rate = np.zeros(n)
        self._last_update_s = np.zeros(n)
        self._first_start_s = np.full(n, np.nan)
        self._finish_s = np.full(n, np.nan)
        self._attained_gpu_s = np.zeros(n)
        self._num_restarts = np.zeros(n, dtype=np.int64)
        self._num_gpus_held = np.zeros(n, dtype=np.int64)
        self._held_since_s = np.zeros(n)
        self._batch_size = np.array(job_column(self._jobs, "batch_size", np.int64))
        self._placement: list[Placement] = [()] * n
        # Per job, read without building a lazy table's jobs: speed model, ground truth,
        # GPUs asked; jobs whose rate depends on progress (adaptive batch): never cached.
        self._speeds = per_job(self._jobs, lambda job: job.speed)
        self._goodput = per_job(self._jobs, lambda job: hasattr(job.speed, "goodput_rate"))
        self._total = np.array(job_column(self._jobs, "total_iterations"))
        self._asked = job_column(self._jobs, "num_gpus", np.int64)
        self._active: dict[int, None] = {}  # running or rescaling, start order
        self._running_ids: tuple[int, ...] | None = None  # tuple(active), for views
        self._now_s = 0.0
        self._num_finished = 0
        self._num_arrived = 0
        self._num_events = 0
        self._state_version = 0
        self._events = EventQueue(job_column(self._jobs, "submit_time_s"))
        self._jobq = JobQueue(self._events.submit_s)  # sim.queue; O(1) snapshots for views
        self._contention = Contention(
            self._inventory.num_nodes, self._config.link_contention, self._config.node_interference
        )
        self._rank_of: Callable[[int], int] | None = None  # queue order, on first preemption
        self._make_views()
        self._rates = RateModel(self._inventory, self._contention)
        self._observers: list[object] = []
        self._on: dict[str, list[Callable[..., None]]] = {name: [] for name in CALLBACKS}
        self._record = EpisodeRecord(self._config.record_timeline)
        self.add_observer(self._record)
        self._seed = int(seed)
        self._estimator = WorkEstimator(self, self._seed, self._config.loss_noise_std)

    def add_observer(self, observer: object) -> None:
        """Call ``observer``'s callbacks (:mod:`cluster_envs.sim.observers`), in order added."""
        for name, method in bound_callbacks(observer).items():
            self._on[name].append(method)  # type: ignore[arg-type]
        self._observers.append(observer)

    @property
    def observers(self) -> tuple[object, ...]:  # in call order, the episode record first
        return tuple(self._observers)

    @property
    def done(self) -> bool:
        """True once every job of the workload has finished."""
        return self._num_finished == self._num_jobs

    def next_event_time(self) -> float:
        """Time of the next valid event (``inf`` when none is left)."""
        return self._events.next_time()

    def step(self) -> float:
        """Process every event of the next event instant; returns that instant."""
        t = self.next_event_time()
        if t != math.inf:
            self._process_until(t)
        return t

    def advance_to(self, time_s: float) -> None:
        """Process every event up to and including ``time_s`` and move the clock there."""
        if time_s < self._now_s:
            raise ValueError(f"cannot go back in time from {self._now_s} to {time_s}")
        self._process_until(time_s)

    def _process_until(self, t_end: float) -> None:
        pop = self._events.pop_until
        while (event := pop(t_end)) is not None:
            t, kind, j, _ = event
            self._num_events += 1
            self._set_time(t)
            if kind == EV_COMPLETE:
                self._complete(j)
            elif kind == EV_RESCALED:
                self._resume(j)
            else:
                self._arrive(j)
        self._set_time(t_end)

    def _set_time(self, t: float) -> None:
        if t != self._now_s:
            for callback in self._on["on_advance"]:
                callback(self, self._now_s, t)
            self._now_s = t
            self._state_version += 1

    def _arrive(self, j: int) -> None:
        self._state[j] = _QUEUED
        self._jobq.add(j)
        self._num_arrived += 1
        self._state_version += 1

    def _complete(self, j: int) -> None:
        self._sync_progress(j)
        self._progress[j] = self._total[j]
        self._state[j] = _FINISHED
        self._finish_s[j] = self._now_s
        self._release(j)
        del self._active[j]
        self._running_ids = None
        self._num_finished += 1
        self._state_version += 1
        for callback in self._on["on_finish"]:
            callback(self, j)

    def _resume(self, j: int) -> None:
        self._state[j] = _RUNNING
        self._set_rate(j, self._rate_of(j, self._placement[j]))

    def _sync_progress(self, j: int) -> None:
        """Bring job ``j``'s progress and attained service up to ``now_s``."""
        now = self._now_s  # (plain-float reads: the same float64 arithmetic, cheaper)
        dt = now - self._last_update_s.item(j)
        if dt > 0:  # (time never goes back: dt == 0 means already synced)
            self._progress[j] = self._progress.item(j) + self._rate.item(j) * dt
            self._attained_gpu_s[j] = (
                self._attained_gpu_s.item(j) + self._num_gpus_held.item(j) * dt
            )
            self._last_update_s[j] = now

    def iterations_done(self, j: int) -> float:
        """Iterations job ``j`` has completed by ``now_s`` (no state change)."""
        dt = self._now_s - self._last_update_s.item(j)
        return self._progress.item(j) + self._rate.item(j) * dt

    def _set_rate(self, j: int, rate: float) -> None:
        """Change job ``j``'s rate from now on and re-key its completion event."""
        self._sync_progress(j)
        rate = float(rate)
        self._rate[j] = rate
        self._events.invalidate(j)
        if rate > 0:
            total = self._total.item(j)
            remaining = max(total - self._progress.item(j), 0.0)
            if remaining <= PROGRESS_EPS * total:
                remaining = 0.0
            self._events.push(self._now_s + remaining / rate, EV_COMPLETE, j)

    def _rate_of(self, j: int, placement: Placement) -> float:
        if not self._goodput[j]:
            return self._rates.fixed_rate(j, self._speeds[j], placement)
        done = self._progress.item(j) / self._total.item(j)
        return self._rates.rate_of(j, self._speeds[j], placement, int(self._batch_size[j]), done)

    def _release(self, j: int) -> None:
        self._sync_progress(j)
        for callback in self._on["on_release"]:
            callback(self, j, self._held_since_s.item(j), self._now_s, self._placement[j])
        self._inventory.give_back(self._placement[j])
        self._placement[j] = ()
        self._num_gpus_held[j] = 0
        self._refresh_rates(self._contention.remove(j))

    def _start(self, j: int, placement: Placement, cost_s: float) -> None:
        """Give job ``j`` the GPUs of ``placement``; it runs after ``cost_s`` seconds."""
        self._sync_progress(j)
        self._inventory.take(placement)
        self._placement[j] = placement
        self._held_since_s[j] = self._now_s
        self._num_gpus_held[j] = sum([g for _, g in placement])
        if math.isnan(self._first_start_s.item(j)):
            self._first_start_s[j] = self._now_s
        self._active[j] = None
        self._jobq.discard(j)
        self._running_ids = None
        neighbours = self._contention.add(j, placement)
        if cost_s > 0:
            self._state[j] = _RESCALING
            self._set_rate(j, 0.0)
            self._events.push(self._now_s + cost_s, EV_RESCALED, j)
        else:
            self._state[j] = _RUNNING
            self._set_rate(j, self._rate_of(j, placement))
        self._refresh_rates(neighbours)

    def _stop(self, j: int) -> None:
        """Preempt job ``j``: it keeps its progress and returns to the queue."""
        self._set_rate(j, 0.0)
        self._release(j)
        del self._active[j]
        self._running_ids = None
        self._state[j] = _QUEUED
        self._num_restarts[j] += 1
        if self._rank_of is None:
            self._rank_of = submission_rank(self._events.submit_s)
        self._jobq.requeue(j, self._rank_of)

    def apply(self, decision: Decision) -> int:
        """Validate the whole decision (or raise InfeasibleDecisionError and change
        nothing), then carry it out in order.

        Returns:
            The number of actions that changed something (re-stating a placement does not).
        """
        if not decision.actions:
            return 0
        validate_decision(self, decision)
        cfg = self._config
        changed = 0
        for action in decision.actions:
            j = int(action.job_id)
            if isinstance(action, Preempt) or not action.placement:
                self._stop(j)
                changed += 1
                continue
            placement = tuple(sorted((int(n), int(g)) for n, g in action.placement))
            if action.batch_size is not None:
                self._set_batch(j, int(action.batch_size), placement)
            if j in self._active:
                if placement == self._placement[j]:
                    continue
                self._set_rate(j, 0.0)
                self._release(j)
                self._num_restarts[j] += 1
                self._start(j, placement, cfg.rescale_cost_s)
            else:
                cost = cfg.restart_cost_s if self._num_restarts[j] > 0 else cfg.start_cost_s
                self._start(j, placement, cost)
            changed += 1
        if changed:
            self._state_version += 1
            for callback in self._on["on_decision"]:
                callback(self, changed)
        return changed

    def _set_batch(self, j: int, batch_size: int, placement: Placement) -> None:
        """Adopt ``batch_size``; a running job keeping its GPUs re-rates now (no restart)."""
        self._sync_progress(j)
        self._batch_size[j] = batch_size
        if placement == self._placement[j] and self._state[j] == _RUNNING:
            self._set_rate(j, self._rate_of(j, placement))

    def start_queued(self, j: int, placement: Placement) -> None:
        """``apply(Decision((Allocate(j, placement),)))`` for queued job ``j`` on a
        ``placement`` its caller built feasible: sorted by node, plain ints, free GPUs,
        within the job's range (an env's own start). The same changes and callbacks,
        without the decision objects and their validation."""
        cfg = self._config
        cost = cfg.restart_cost_s if self._num_restarts[j] > 0 else cfg.start_cost_s
        self._start(j, placement, cost)
        self._state_version += 1
        for callback in self._on["on_decision"]:
            callback(self, 1)

    def view(self) -> ClusterView:  # an immutable snapshot of the state for a policy
        return build_view(self)

    def check_invariants(self) -> None:  # GPU conservation, state consistency (tests)
        check_invariants(self)
