"""Read-only snapshots of the simulator state, handed to policies.

A :class:`ClusterView` is what every policy sees: time, free GPUs per node, the queue and
the running jobs. It shows only what a real scheduler could observe: never a job's true
number of iterations to convergence or its true loss curve.

Building a full copy of every job at every event would dominate the simulator's cost at
Philly scale, so the per-job records are built on first access. To keep the snapshot
honest, a view refuses to build them once the simulator has moved on (it raises instead
of showing newer state), and everything it has already built is immutable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from cluster_envs.errors import ClusterEnvsError
from cluster_envs.types import JobKind, JobState, Placement

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig
    from cluster_envs.perf.speed import SpeedModel
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.sim.estimate import JobEstimate, WorkEstimator


class StaleViewError(ClusterEnvsError, RuntimeError):
    """A view's lazy fields were read after the simulator had changed state."""


@dataclass(frozen=True, slots=True)
class JobStatus:
    """What a scheduler can observe about one submitted job.

    Attributes:
        job_id: Job index in the workload.
        name: Job name.
        model: Model-zoo name (``"hpc"`` for SWF jobs).
        kind: Rigid, moldable or malleable.
        state: Queued, rescaling or running.
        submit_time_s: Arrival time.
        num_gpus: Requested GPUs.
        min_gpus: Smallest allowed GPU count.
        max_gpus: Largest allowed GPU count.
        batch_size: Global batch size.
        placement: Current placement (empty when queued).
        iterations_done: Iterations completed so far.
        attained_gpu_s: GPU-seconds received so far (Tiresias's attained service).
        first_start_s: When the job first started (``None`` if never).
        num_restarts: Preemptions and rescales so far.
        recorded_duration_s: Duration the trace recorded at ``num_gpus`` (``None`` for
            synthetic jobs without one). Policies should prefer ``view.estimate``.
        target_loss: The user's convergence target (``None`` for non-DL jobs).
        rate_iter_per_s: Current measured speed (0 when queued or rescaling).
        speed: The job's profiled throughput model.
    """

    job_id: int
    name: str
    model: str
    kind: JobKind
    state: JobState
    submit_time_s: float
    num_gpus: int
    min_gpus: int
    max_gpus: int
    batch_size: int
    placement: Placement
    iterations_done: float
    attained_gpu_s: float
    first_start_s: float | None
    num_restarts: int
    recorded_duration_s: float | None
    target_loss: float | None
    rate_iter_per_s: float
    speed: SpeedModel


class JobTable(NamedTuple):
    """What :meth:`ClusterView.job` shows, for many jobs at once, as read-only arrays.

    Entry ``i`` of every field describes job ``job_ids[i]``; the values equal those of
    ``view.job(job_ids[i])`` (``first_start_s`` is NaN where the snapshot has ``None``,
    ``state`` holds :class:`JobState` codes, ``num_gpus_held`` the size of
    ``placement``). Arrays are non-writeable copies, taken when the table is built (the
    static ones -- ids, submit time, GPU bounds, batch size -- shared by successive
    tables of the same ids).
    """

    job_ids: np.ndarray
    state: np.ndarray
    submit_time_s: np.ndarray
    num_gpus: np.ndarray
    min_gpus: np.ndarray
    max_gpus: np.ndarray
    batch_size: np.ndarray
    iterations_done: np.ndarray
    attained_gpu_s: np.ndarray
    first_start_s: np.ndarray
    num_restarts: np.ndarray
    rate_iter_per_s: np.ndarray
    num_gpus_held: np.ndarray
    placement: tuple[Placement, ...]
    model: tuple[str, ...]
    speed: tuple[SpeedModel, ...]


class ClusterView:
    """Immutable snapshot of the cluster at ``time_s`` (see the module docstring).

    Attributes:
        time_s: Simulated time of the snapshot.
        cluster: The cluster configuration.
        free_gpus: Free GPUs per node (read-only copy).
        total_gpus: GPUs per node (read-only).
        node_speed: Compute speed of each node's GPU type relative to a T4 (read-only).
        network_speed: Inter-node bandwidth relative to the Pollux testbed.
        queued_ids: Queued job ids, in queue order (submission order): a sequence that
            compares and hashes like their tuple (built in O(1); see sim/queue.py).
        running_ids: Running and rescaling job ids, in start order.
        num_pending: Jobs of the workload not yet submitted (their details are hidden).
        num_finished: Jobs finished so far.
    """

    __slots__ = (
        "time_s",
        "cluster",
        "free_gpus",
        "total_gpus",
        "node_speed",
        "network_speed",
        "queued_ids",
        "running_ids",
        "num_pending",
        "num_finished",
        "_make_status",
        "_make_table",
        "_requested_gpus",
        "_estimator",
        "_version",
        "_current_version",
        "_believed",
        "__dict__",
    )

    def __init__(
        self,
        *,
        time_s: float,
        cluster: ClusterConfig,
        free_gpus: np.ndarray,
        total_gpus: np.ndarray,
        node_speed: np.ndarray,
        network_speed: float,
        queued_ids: Sequence[int],
        running_ids: tuple[int, ...],
        num_pending: int,
        num_finished: int,
        make_status: Callable[[int], JobStatus],
        make_table: Callable[[Sequence[int]], JobTable],
        estimator: WorkEstimator,
        version: int,
        current_version: Callable[[], int],
        requested_gpus: Callable[[int], int] | None = None,
        believed: Callable[[], Simulator] | None = None,
    ) -> None:
        free_gpus.setflags(write=False)
        self.time_s = time_s
        self.cluster = cluster
        self.free_gpus = free_gpus
        self.total_gpus = total_gpus
        self.node_speed = node_speed
        self.network_speed = network_speed
        self.queued_ids = queued_ids
        self.running_ids = running_ids
        self.num_pending = num_pending
        self.num_finished = num_finished
        self._make_status = make_status
        self._make_table = make_table
        self._requested_gpus = requested_gpus
        self._estimator = estimator
        self._version = version
        self._current_version = current_version
        self._believed = believed

    @property
    def num_free_gpus(self) -> int:
        """Free GPUs in the whole cluster."""
        return int(self.free_gpus.sum())

    @property
    def num_gpus(self) -> int:
        """GPUs in the whole cluster."""
        return int(self.total_gpus.sum())

    def _check_fresh(self) -> None:
        if self._current_version() != self._version:
            raise StaleViewError(
                f"view of t={self.time_s:.1f}s read after the simulator moved on; "
                "take a fresh view with Simulator.view()"
            )

    @property
    def simulation(self) -> object:
        """An opaque token of the simulation the view shows: the same object for every
        view of one simulator (a copy of it gets another), for policies keying caches."""
        return self._estimator

    def job(self, job_id: int) -> JobStatus:
        """The status of one queued or running job at the snapshot time."""
        self._check_fresh()
        return self._make_status(job_id)

    def requested_gpus(self, job_id: int) -> int:
        """``job(job_id).num_gpus`` without building the job's status (a FIFO scan's read)."""
        self._check_fresh()
        if self._requested_gpus is None:
            return self._make_status(job_id).num_gpus
        return self._requested_gpus(job_id)

    def job_table(self, job_ids: Sequence[int]) -> JobTable:
        """What :meth:`job` shows of each of ``job_ids`` (queued or running), as arrays.

        One call instead of a :class:`JobStatus` per job: what heuristics that rank many
        jobs per decision read (see :class:`JobTable`).
        """
        self._check_fresh()
        return self._make_table(job_ids)

    def estimate(self, job_id: int) -> JobEstimate:
        """The scheduler's estimate of the job's length (prior or fitted loss curve)."""
        self._check_fresh()
        return self._estimator.estimate(job_id)

    def remaining_iterations(self, job_ids: Sequence[int]) -> np.ndarray:
        """``estimate(j).remaining_iterations`` of each of ``job_ids`` (one vectorised
        call; a read-only array)."""
        self._check_fresh()
        out = self._estimator.remaining_many(np.array(job_ids, dtype=np.int64))
        out.flags.writeable = False
        return out

    def total_iterations(self, job_ids: Sequence[int]) -> np.ndarray:
        """``estimate(j).total_iterations`` of each of ``job_ids`` (one vectorised call;
        a read-only array)."""
        self._check_fresh()
        out = self._estimator.total_many(np.array(job_ids, dtype=np.int64))
        out.flags.writeable = False
        return out

    def loss_history(self, job_id: int) -> tuple[np.ndarray, np.ndarray]:
        """The job's noisy loss observations so far: ``(iterations, losses)``."""
        self._check_fresh()
        return self._estimator.observations(job_id)

    def believed_simulator(self) -> Simulator:
        """A copy of the simulation in which only what a scheduler knows now is true.

        Queued and running jobs last exactly as long as their current (frozen) estimates
        say and the arrivals still to come are dropped
        (:func:`cluster_envs.sim.fork.fork_believed`): a lookahead policy may apply a
        candidate decision to it and play it forward without reading a true job length.
        Each call is a fresh deep copy (cost grows with the workload).

        Raises:
            StaleViewError: The simulator has moved on since this view was taken.
        """
        self._check_fresh()
        if self._believed is None:
            raise ClusterEnvsError("this view was built without its simulator's believed fork")
        return self._believed()

    @cached_property
    def queue(self) -> tuple[JobStatus, ...]:
        """Queued jobs, in queue order."""
        return tuple(self.job(j) for j in self.queued_ids)

    @cached_property
    def running(self) -> tuple[JobStatus, ...]:
        """Running (and rescaling) jobs."""
        return tuple(self.job(j) for j in self.running_ids)


def build_view(sim: Simulator) -> ClusterView:
    """An immutable snapshot of ``sim`` now (what :meth:`Simulator.view` returns)."""
    inv = sim.inventory
    queued_ids, running_ids = sim.queued_and_running_ids()
    return ClusterView(
        time_s=sim.now_s,
        cluster=sim.cluster,
        free_gpus=inv.free.copy(),
        total_gpus=inv.total,
        node_speed=inv.speed,
        network_speed=inv.network_speed,
        queued_ids=queued_ids,
        running_ids=running_ids,
        num_pending=len(sim.jobs) - sim.num_arrived,
        num_finished=sim.num_finished,
        make_status=sim.job_status,
        make_table=sim.job_table,
        estimator=sim.estimator,
        version=sim.state_version,
        current_version=lambda: sim.state_version,
        requested_gpus=sim.requested_gpus,
        believed=lambda: _believed_copy(sim),
    )


def _believed_copy(sim: Simulator) -> Simulator:
    from cluster_envs.sim.fork import fork_believed  # fork imports this module

    return fork_believed(sim, None)[0]


def make_job_status(sim: Simulator, j: int, state: JobState) -> JobStatus:
    """The :class:`JobStatus` of job ``j`` from ``sim``'s state (synced to now)."""
    spec = sim.jobs[j]
    first = float(sim.first_start_s[j])
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
        placement=sim.placement[j],
        iterations_done=float(sim.progress[j]),
        attained_gpu_s=float(sim.attained_gpu_s[j]),
        first_start_s=None if first != first else first,  # NaN: never started
        num_restarts=int(sim.num_restarts[j]),
        recorded_duration_s=spec.recorded_duration_s,
        target_loss=spec.target_loss,
        rate_iter_per_s=float(sim.rate[j]),
        speed=spec.speed,
    )
