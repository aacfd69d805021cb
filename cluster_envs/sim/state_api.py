"""The read-only public face of :class:`~cluster_envs.sim.engine.Simulator`.

The simulator keeps its state in private attributes and changes it in place; this base
class declares every public name as a read-only accessor over that storage (numpy arrays
as non-writeable views, dicts as mapping proxies, the placement list as a
:class:`~cluster_envs.sim.readonly.ListView`, inventory and contention as facades), so
they follow the simulation live and refuse writes. Copies and pickles rebuild the
windows over the copied storage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.sim.columns import job_column, per_job
from cluster_envs.sim.copying import copy_sharing, shallow
from cluster_envs.sim.readonly import ContentionView, InventoryView, ListView, frozen, read_only
from cluster_envs.sim.view import JobStatus, JobTable, make_job_status
from cluster_envs.types import JobState

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig, SimConfig
    from cluster_envs.sim.contention import Contention
    from cluster_envs.sim.estimate import WorkEstimator
    from cluster_envs.sim.events import EventQueue
    from cluster_envs.sim.inventory import GpuInventory
    from cluster_envs.sim.metrics import EpisodeRecord
    from cluster_envs.sim.queue import JobQueue, QueueSnapshot
    from cluster_envs.types import JobSpec, Placement

#: Per-job arrays kept privately as ``_<name>`` and shown as read-only ``<name>`` views.
_JOB_ARRAYS = (
    "state", "progress", "rate", "last_update_s", "first_start_s", "finish_s",
    "attained_gpu_s", "num_restarts", "num_gpus_held", "held_since_s", "batch_size",
)  # fmt: skip

_PENDING, _FINISHED = int(JobState.PENDING), int(JobState.FINISHED)
_RUNNING = int(JobState.RUNNING)
#: Static integer job fields of :meth:`SimulatorState.job_table`, in its column order.
_SPEC_INTS = ("num_gpus", "min_gpus", "max_gpus", "batch_size")
#: Which JobState codes a scheduler may look at (queued, rescaling, running).
_VISIBLE = np.array([state in (JobState.QUEUED, JobState.RESCALING, JobState.RUNNING)
                     for state in sorted(JobState)])  # fmt: skip


def _picker(ids: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``lambda seq: tuple(seq[j] for j in ids)``, at C speed."""
    if len(ids) > 1:
        return itemgetter(*ids)
    return lambda seq: tuple([seq[j] for j in ids])


#: The simulator's per-job lists of immutable values (placements, speed models, flags).
_VALUE_LISTS = frozenset({"_placement", "_speeds", "_goodput"})


class SimulatorState:
    """Read-only accessors of the simulator's state (see the module docstring)."""

    # The private storage the engine creates (declared for the type checker).
    _placement: list[Placement]
    _active: dict[int, None]
    _inventory: GpuInventory
    _contention: Contention
    _jobs: Sequence[JobSpec]
    _now_s: float
    _state: np.ndarray
    _progress: np.ndarray
    _rate: np.ndarray
    _last_update_s: np.ndarray
    _attained_gpu_s: np.ndarray
    _num_gpus_held: np.ndarray
    _first_start_s: np.ndarray
    _num_restarts: np.ndarray
    _spec_table: dict[str, Any]
    _last_rows: tuple[Any, ...]
    _jobq: JobQueue
    _running_ids: tuple[int, ...] | None
    _asked: np.ndarray  # GPUs each job asked for
    _batch_size: np.ndarray
    _total: np.ndarray
    _speeds: list[Any]
    _goodput: list[Any]
    _events: EventQueue
    _estimator: WorkEstimator
    _state_version: int

    def _sync_progress(self, j: int) -> None: ...  # the engine's

    def _set_rate(self, j: int, rate: float) -> None: ...  # the engine's

    cluster: ClusterConfig = read_only("_cluster", "The cluster configuration.")
    config: SimConfig = read_only("_config", "The simulator settings.")
    jobs: Sequence[JobSpec] = read_only(
        "_jobs", "The workload's jobs, by job id (a tuple, or a lazy table of a large trace)."
    )
    seed: int = read_only("_seed", "The simulation's seed.")
    inventory: InventoryView = read_only("_inventory_ro", "Free/total GPUs per node.")
    contention: ContentionView = read_only("_contention_ro", "Jobs sharing nodes and links.")
    record: EpisodeRecord = read_only("_record", "Busy GPU-s, job-s and the timeline.")
    estimator: WorkEstimator = read_only("_estimator", "Loss observations and estimates.")
    state: np.ndarray = read_only("_state_ro", "Per-job JobState codes (int8).")
    progress: np.ndarray = read_only("_progress_ro", "Iterations done at last_update_s.")
    rate: np.ndarray = read_only("_rate_ro", "Current speed per job (iterations/s).")
    last_update_s: np.ndarray = read_only("_last_update_s_ro", "When progress was synced.")
    first_start_s: np.ndarray = read_only("_first_start_s_ro", "First start (NaN: never).")
    finish_s: np.ndarray = read_only("_finish_s_ro", "Completion time (NaN: unfinished).")
    attained_gpu_s: np.ndarray = read_only("_attained_gpu_s_ro", "GPU-s at last_update_s.")
    num_restarts: np.ndarray = read_only("_num_restarts_ro", "Preemptions + rescales (int64).")
    num_gpus_held: np.ndarray = read_only("_num_gpus_held_ro", "GPUs held now (int64).")
    held_since_s: np.ndarray = read_only("_held_since_s_ro", "Start of the current holding.")
    batch_size: np.ndarray = read_only("_batch_size_ro", "Current global batch size (int64).")
    placement: ListView[Placement] = read_only("_placement_ro", "Current placement per job.")
    queue: Mapping[int, None] = read_only("_queue_ro", "Queued job ids, submission order.")
    active: Mapping[int, None] = read_only("_active_ro", "Running/rescaling ids, start order.")
    now_s: float = read_only("_now_s", "The simulated clock (s).")
    num_finished: int = read_only("_num_finished", "Jobs finished so far.")
    num_arrived: int = read_only("_num_arrived", "Jobs submitted so far.")
    num_events: int = read_only("_num_events", "Events processed so far.")
    state_version: int = read_only("_state_version", "Changes whenever observable state does.")

    def job_table(self, job_ids: Sequence[int]) -> JobTable:
        """What :meth:`job_status` shows of each of ``job_ids``, as read-only arrays.

        Syncs the jobs' progress to now exactly as ``job_status`` does, element by
        element (so the state, and every later number, is the same either way).
        """
        idx, static, pick = self._static_rows(job_ids)
        states = self._state[idx]
        if np.count_nonzero(_VISIBLE[states]) != len(states):
            j = int(idx[np.argmin(_VISIBLE[states])])
            state = JobState(int(self._state[j])).name.lower()
            raise KeyError(f"job {j} is {state}, not queued or running")
        dt = self._now_s - self._last_update_s[idx]
        moved = dt > 0
        num_moved = np.count_nonzero(moved)
        rate, held = self._rate[idx], self._num_gpus_held[idx]
        if num_moved == len(idx):  # all (the usual case): the synced columns at once
            progress = self._progress[idx] + rate * dt
            attained = self._attained_gpu_s[idx] + held * dt
            self._progress[idx], self._attained_gpu_s[idx] = progress, attained
        else:
            if num_moved:
                jobs, step = idx[moved], dt[moved]
                self._progress[jobs] += self._rate[jobs] * step
                self._attained_gpu_s[jobs] += self._num_gpus_held[jobs] * step
            progress, attained = self._progress[idx], self._attained_gpu_s[idx]
        self._last_update_s[idx] = self._now_s
        first, restarts = self._first_start_s[idx], self._num_restarts[idx]
        for column in (states, progress, attained, first, restarts, rate, held):
            column.setflags(write=False)
        submit, num_gpus, min_gpus, max_gpus, batch_size, models, speeds = static
        return JobTable(
            idx, states, submit, num_gpus, min_gpus, max_gpus, batch_size, progress, attained,
            first, restarts, rate, held, pick(self._placement), models, speeds,
        )  # fmt: skip

    def _static_rows(
        self, job_ids: Sequence[int]
    ) -> tuple[np.ndarray, tuple[Any, ...], Callable[[Sequence[Any]], tuple[Any, ...]]]:
        """``job_ids`` as a read-only index array, their static :class:`JobTable` fields
        (``submit_time_s``, the ``_SPEC_INTS``, models, speeds) and a picker of their
        entries of a list: read-only and shared by the tables of the same ids (kept for
        the last ids asked: the next decision usually asks for the same eligible jobs)."""
        key = tuple(job_ids)
        last = self.__dict__.get("_last_rows")
        if last is not None and last[0] == key:
            return last[1], last[2], last[3]
        ids = [int(j) for j in key]
        n = len(self._jobs)
        if ids and (min(ids) < 0 or max(ids) >= n):
            bad = next(j for j in ids if not 0 <= j < n)
            raise KeyError(f"job {bad} is not in the workload ({n} jobs)")
        idx = np.array(ids, dtype=np.int64)
        spec = self._spec_columns()
        ints = spec["ints"][:, idx]  # one gather for the static integer fields
        submit = spec["submit_time_s"][idx]
        for column in (idx, submit, ints):
            column.setflags(write=False)
        pick = _picker(ids)
        static = (
            submit,
            ints[0],
            ints[1],
            ints[2],
            ints[3],
            pick(spec["model"]),
            pick(spec["speed"]),
        )
        self._last_rows = (key, idx, static, pick)
        return idx, static, pick

    def queued_and_running_ids(self) -> tuple[QueueSnapshot, tuple[int, ...]]:
        """The queued ids (an O(1) snapshot that never changes, equal to
        ``tuple(queue)`` now) and ``tuple(active)``, each kept until it changes (views)."""
        if self._running_ids is None:
            self._running_ids = tuple(self._active)
        return self._jobq.snapshot(), self._running_ids

    def job_status(self, j: int) -> JobStatus:
        """What a scheduler may observe of submitted, unfinished job ``j`` right now."""
        state = JobState(int(self._state[j]))
        if state in (JobState.PENDING, JobState.FINISHED):
            raise KeyError(f"job {j} is {state.name.lower()}, not queued or running")
        self._sync_progress(j)
        return make_job_status(self, j, state)  # type: ignore[arg-type]

    def requested_gpus(self, j: int) -> int:
        """``job_status(j).num_gpus`` without building the status (nor syncing the job)."""
        state = self._state[j]
        if state in (_PENDING, _FINISHED):
            self.job_status(j)  # raises its KeyError
        return int(self._asked[j])

    def replace_future(self, specs: Mapping[int, JobSpec]) -> None:
        """Make ``specs`` (by the ids of jobs that have not arrived) this what-if fork's only
        future arrivals, lasting their ``total_iterations`` as believed (never refitted).

        The specs they replace are overwritten, never read (the sampled arrivals of
        :mod:`cluster_envs.sim.sampled`). Only on a fork after ``believe_estimates``.
        """
        if any(self._state[j] != _PENDING for j in specs):
            raise KeyError("replace_future takes only jobs that have not arrived yet")
        replace_jobs = getattr(self._jobs, "replace_jobs", None)
        if replace_jobs is not None:  # a lazy table
            self._jobs = replace_jobs(specs)
        else:
            self._jobs = tuple(specs.get(j, job) for j, job in enumerate(self._jobs))
        table = self.__dict__.get("_spec_table")  # the views' static columns
        for j, spec in specs.items():
            self._total[j], self._asked[j] = spec.total_iterations, spec.num_gpus
            self._batch_size[j], self._speeds[j] = spec.batch_size, spec.speed
            self._goodput[j] = hasattr(spec.speed, "goodput_rate")
            self._estimator.believe(j, spec.total_iterations)
            if table is not None:
                table["submit_time_s"][j] = spec.submit_time_s
                table["ints"][:, j] = [getattr(spec, name) for name in _SPEC_INTS]
                table["model"][j], table["speed"][j] = spec.model, spec.speed
        ids = np.fromiter(specs, dtype=np.int64, count=len(specs))
        self._events.set_arrivals(ids, np.array([specs[j].submit_time_s for j in specs]))
        self.__dict__.pop("_last_rows", None)
        self._state_version += 1

    def believe_estimates(self) -> int:
        """Make this fork the world its scheduler believes in: queued and running jobs last
        their current (frozen) estimates, future arrivals are dropped (returns how many).
        Never call it on the simulator an env or runner is driving."""
        ids = np.array([*self._jobq.ids, *self._active], dtype=np.int64)
        totals = self._estimator.freeze(ids)
        frozen = {}
        for j, total in zip(ids.tolist(), totals, strict=True):
            frozen[j] = replace(self._jobs[j], total_iterations=max(float(total), 1e-9))
            self._total[j] = frozen[j].total_iterations
        replace_jobs = getattr(self._jobs, "replace_jobs", None)
        if replace_jobs is not None:  # a lazy table: the same jobs, these replaced
            self._jobs = replace_jobs(frozen)
        else:
            self._jobs = tuple(frozen.get(j, job) for j, job in enumerate(self._jobs))
        dropped = self._events.drop_arrivals()
        for j in self._active:
            if self._state[j] == _RUNNING:
                self._set_rate(int(j), float(self._rate[j]))  # re-key its completion
        self._state_version += 1
        return dropped

    def drop_arrivals(self) -> int:
        """Make this fork a world without future arrivals, every job keeping its *true*
        length (returns how many were dropped): an information ablation for what-if
        oracles (the placement oracle's ``lengths`` forks). Never call it on a driven
        simulator."""
        dropped = self._events.drop_arrivals()
        self._state_version += 1
        return dropped

    def _spec_columns(self) -> dict[str, Any]:
        """The workload's static job fields as columns (built once, copied with the sim)."""
        spec = self.__dict__.get("_spec_table")
        if spec is None:
            jobs, n = self._jobs, len(self._jobs)
            ints = [job_column(jobs, name, np.int64) for name in _SPEC_INTS]
            spec = {
                "submit_time_s": np.array(job_column(jobs, "submit_time_s")),
                "ints": np.array(ints, dtype=np.int64).reshape(len(_SPEC_INTS), n),
                "model": per_job(jobs, lambda job: job.model),
                "speed": per_job(jobs, lambda job: job.speed),
            }
            self._spec_table = spec
        return spec

    def _make_views(self) -> None:
        """The read-only windows (storage is only ever changed in place, so they follow)."""
        for name in _JOB_ARRAYS:
            setattr(self, f"_{name}_ro", frozen(getattr(self, f"_{name}")))
        self._placement_ro = ListView(self._placement)
        self._queue_ro, self._active_ro = (
            MappingProxyType(self._jobq.ids),
            MappingProxyType(self._active),
        )
        self._inventory_ro = InventoryView(self._inventory)
        self._contention_ro = ContentionView(self._contention)

    def __getstate__(
        self,
    ) -> dict[str, Any]:  # copies and pickles rebuild the windows on their state
        skip = ("_last_rows",)  # a cache (of the last ids asked), not state
        return {k: v for k, v in self.__dict__.items() if not k.endswith("_ro") and k not in skip}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._make_views()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """A fork's copy: the per-job lists of immutable values and the static columns
        copied one level, not walked element by element (:mod:`cluster_envs.sim.copying`)."""
        if type(self._jobs) is tuple:
            shallow(self._jobs, memo)  # JobSpecs are immutable: the tuple is shared
        for column in self.__dict__.get("_spec_table", {}).values():
            shallow(column, memo)  # arrays and lists of names and speed models
        return copy_sharing(self, memo, _VALUE_LISTS)
