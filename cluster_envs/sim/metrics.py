"""Episode metrics (DESIGN.md section 2), with the lower bound on average JCT.

Metric names carry units and are the contract every env, runner and benchmark reports:
``avg_jct_s``, ``p50_jct_s``, ``p95_jct_s``, ``p99_jct_s``, ``makespan_s``,
``avg_queue_s``, ``bounded_slowdown``, ``gpu_utilization``, ``lower_bound_avg_jct_s``,
``jct_ratio_to_lower_bound``, ``num_finished``, ``num_unfinished``.

``jct_ratio_to_lower_bound`` is NaN while any job is unfinished (truncated episodes):
``avg_jct_s`` then averages only the finished jobs and the ratio would flatter a policy
that starves long jobs. ``lower_bound_avg_jct_s`` is always finite.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.perf.speed import packed_shape
from cluster_envs.sim.columns import job_column, job_groups
from cluster_envs.sim.copying import copy_sharing
from cluster_envs.sim.observers import SimObserver
from cluster_envs.types import Placement

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import JobSpec

#: Bounded slowdown treats runs shorter than this as this long (Feitelson's tau).
BOUNDED_SLOWDOWN_TAU_S = 10.0


class EpisodeRecord(SimObserver):
    """Accumulates busy GPU-seconds, queued and in-system job-seconds, and a timeline.

    The simulator's first observer (:mod:`cluster_envs.sim.observers`): it sees every
    interval of constant state, every applied decision and every released holding.

    ``system_job_s`` (queued + running jobs integrated over time) equals the sum of the
    JCTs of finished jobs plus the age of unfinished ones: the JCT reward's integrand.

    The timeline has one row per instant at which the state changed:
    ``(time_s, num_queued, num_running, busy_gpus)``.
    """

    def __init__(self, keep_timeline: bool) -> None:
        self.keep_timeline = keep_timeline
        self.busy_gpu_s = 0.0
        self.queued_job_s = 0.0
        self.system_job_s = 0.0
        # Compact columns (8 bytes a row, no per-row objects): 1M jobs log 2M rows.
        self.times = array("d")
        self.queued = array("q")
        self.running = array("q")
        self.busy = array("q")
        #: (job_id, start_s, end_s, placement) of every finished holding of GPUs (tuples:
        #: results hand them on, so building them once here is the cheapest).
        self.segments: list[tuple[int, float, float, Placement]] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> EpisodeRecord:
        """A fork's copy: the segments (tuples) copied one level (:mod:`~cluster_envs.sim.copying`)."""
        return copy_sharing(self, memo, ("segments",))

    def on_advance(self, sim: Simulator, t0: float, t1: float) -> None:
        """The state held from ``t0`` to ``t1``: add its busy GPU-seconds, log it."""
        inventory = sim.inventory
        busy = inventory.num_gpus - inventory.num_free
        queued, running = len(sim.queue), len(sim.active)
        self.busy_gpu_s += busy * (t1 - t0)
        self.queued_job_s += queued * (t1 - t0)
        self.system_job_s += (queued + running) * (t1 - t0)
        if self.keep_timeline:
            self._log(t0, queued, running, busy)

    def on_decision(self, sim: Simulator, num_changed: int) -> None:
        """A decision changed the state: log the new state at ``now_s``."""
        self.sample(sim)

    def on_release(
        self, sim: Simulator, job_id: int, start_s: float, end_s: float, placement: Placement
    ) -> None:
        """Keep the finished holding as a timeline segment (when the timeline is on)."""
        if self.keep_timeline:
            self.segments.append((job_id, start_s, end_s, placement))

    def sample(self, sim: Simulator, time_s: float | None = None) -> None:
        """Log the current state at ``time_s`` (default: now), replacing a same-time row."""
        if not self.keep_timeline:
            return
        t = sim.now_s if time_s is None else time_s
        busy = sim.inventory.num_gpus - sim.inventory.num_free
        self._log(t, len(sim.queue), len(sim.active), busy)

    def _log(self, t: float, queued: int, running: int, busy: int) -> None:
        times = self.times
        if times and times[-1] == t:
            self.queued[-1], self.running[-1], self.busy[-1] = queued, running, busy
            return
        times.append(t)
        self.queued.append(queued)
        self.running.append(running)
        self.busy.append(busy)

    def timeline(self) -> dict[str, np.ndarray]:
        """The timeline as arrays keyed ``time_s, num_queued, num_running, busy_gpus``."""
        columns: dict[str, array] = {
            "time_s": self.times,
            "num_queued": self.queued,
            "num_running": self.running,
            "busy_gpus": self.busy,
        }
        # An empty column is float64, as np.asarray([]) gives.
        return {k: np.array(v) if len(v) else np.asarray([]) for k, v in columns.items()}


def best_isolated_runtime_s(job: JobSpec, cluster: ClusterConfig, network_speed: float) -> float:
    """The job's runtime alone on an empty cluster at its best GPU count and node type.

    A GPU count that fits no single node group (the job must span GPU types) is bounded
    optimistically: the densest packing on the cluster's largest nodes, at the speed of
    the ``n``-th fastest GPU (no ``n``-GPU placement has a faster slowest GPU). Without
    it a job whose every allowed count spans groups had an infinite bound (issue 15).
    """
    from cluster_envs.config import GPU_SPEED

    best = math.inf
    counts = range(job.min_gpus, job.max_gpus + 1)
    for group in cluster.node_groups:
        capacity = group.num_nodes * group.gpus_per_node
        speed = GPU_SPEED[group.gpu_type]
        for n in counts:
            if n > capacity:
                break
            rate = job.speed.throughput(packed_shape(n, group.gpus_per_node), speed, network_speed)
            best = min(best, job.total_iterations / rate)
    groups = cluster.node_groups
    largest_group = max(g.num_nodes * g.gpus_per_node for g in groups)
    if job.max_gpus <= largest_group:
        return best
    widest = max(g.gpus_per_node for g in groups)
    speeds = sorted(
        (GPU_SPEED[g.gpu_type] for g in groups for _ in range(g.num_nodes * g.gpus_per_node)),
        reverse=True,
    )
    for n in counts:
        if largest_group < n <= len(speeds):
            rate = job.speed.throughput(packed_shape(n, widest), speeds[n - 1], network_speed)
            best = min(best, job.total_iterations / rate)
    return best


#: best_isolated_runtime_s per iteration, across episodes, keyed by the (hashable, frozen)
#: speed model's value, the GPU range, the cluster and its network speed.
_PER_ITER: dict[tuple[object, int, int, object, float], float] = {}
_PER_ITER_MAX = 4096


def lower_bound_avg_jct_s(sim: Simulator) -> float:
    """Average over jobs of :func:`best_isolated_runtime_s` (a bound no policy can beat).

    Finite for every workload the simulator accepts (each job fits the whole cluster).
    """
    cache: dict[tuple[int, int, int, float], float] = {}
    cluster, network_speed = sim.cluster, sim.inventory.network_speed
    total = 0.0
    grouped = job_groups(sim.jobs)
    if grouped is not None:  # a lazy table: one bound per group, summed in job order
        group_of, firsts = grouped
        per = [_per_iteration_s(job, cluster, network_speed) for job in firsts]
        totals = job_column(sim.jobs, "total_iterations").tolist()
        for p, t in zip(np.asarray(per)[group_of].tolist(), totals, strict=True):
            total += p * t
        return total / max(len(sim.jobs), 1)
    for job in sim.jobs:
        key = (id(job.speed), job.min_gpus, job.max_gpus, 0.0)
        per_iter = cache.get(key)
        if per_iter is None:
            per_iter = cache[key] = _per_iteration_s(job, cluster, network_speed)
        total += per_iter * job.total_iterations
    return total / max(len(sim.jobs), 1)


def _per_iteration_s(job: JobSpec, cluster: ClusterConfig, network_speed: float) -> float:
    try:
        key = (job.speed, job.min_gpus, job.max_gpus, cluster, network_speed)
        found = _PER_ITER.get(key)
    except TypeError:  # an unhashable speed model: no cross-episode cache
        return best_isolated_runtime_s(_unit_job(job), cluster, network_speed)
    if found is None:
        found = best_isolated_runtime_s(_unit_job(job), cluster, network_speed)
        if len(_PER_ITER) >= _PER_ITER_MAX:
            _PER_ITER.clear()
        _PER_ITER[key] = found
    return found


def _unit_job(job: JobSpec) -> JobSpec:
    """The same job with one iteration (runtime per iteration is what the bound caches)."""
    from dataclasses import replace

    return replace(job, total_iterations=1.0)


def _percentiles(values: list[float]) -> list[float]:
    """``np.percentile(values, (50, 95, 99)).tolist()`` (method "linear") in plain floats:
    numpy's virtual indexes, neighbours, gamma and two-sided lerp, the same operations
    in the same order (equal on random arrays); numpy itself for any NaN."""
    if any(v != v for v in values):
        return np.percentile(values, (50, 95, 99)).tolist()
    ordered, n, out = sorted(values), len(values), []
    for q in (50 / 100, 95 / 100, 99 / 100):
        virtual = (n - 1) * q
        if virtual >= n - 1:  # numpy: both neighbours the last value, index -1
            prev = nxt = -1
        else:
            prev = math.floor(virtual)
            nxt = prev + 1
        gamma = virtual - prev
        a, b = ordered[prev], ordered[nxt]
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def compute_metrics(sim: Simulator) -> dict[str, float]:
    """Every metric of the episode so far (finished jobs; unfinished are counted)."""
    finished = ~np.isnan(sim.finish_s)
    submit = job_column(sim.jobs, "submit_time_s")
    jct = sim.finish_s[finished] - submit[finished]
    wait = sim.first_start_s[finished] - submit[finished]
    run = sim.finish_s[finished] - sim.first_start_s[finished]
    n_done = int(finished.sum())
    metrics: dict[str, float] = {
        "num_jobs": float(len(sim.jobs)),
        "num_finished": float(n_done),
        "num_unfinished": float(len(sim.jobs) - n_done),
    }
    start = float(submit.min()) if len(submit) else 0.0
    if n_done:
        makespan = float(sim.finish_s[finished].max()) - start
        p50, p95, p99 = _percentiles(jct.tolist())  # each as if alone
        metrics.update(
            avg_jct_s=float(jct.mean()),
            p50_jct_s=p50,
            p95_jct_s=p95,
            p99_jct_s=p99,
            max_jct_s=float(jct.max()),
            avg_queue_s=float(wait.mean()),
            bounded_slowdown=float(
                np.maximum(1.0, jct / np.maximum(run, BOUNDED_SLOWDOWN_TAU_S)).mean()
            ),
            makespan_s=makespan,
        )
    else:
        nan = float("nan")
        metrics.update(
            avg_jct_s=nan, p50_jct_s=nan, p95_jct_s=nan, p99_jct_s=nan, max_jct_s=nan,
            avg_queue_s=nan, bounded_slowdown=nan, makespan_s=nan,
        )  # fmt: skip
    elapsed = sim.now_s - start
    metrics["gpu_utilization"] = (
        sim.record.busy_gpu_s / (sim.inventory.num_gpus * elapsed) if elapsed > 0 else 0.0
    )
    metrics["avg_queue_length"] = sim.record.queued_job_s / elapsed if elapsed > 0 else 0.0
    lb = lower_bound_avg_jct_s(sim)
    metrics["lower_bound_avg_jct_s"] = lb
    # NaN unless every job finished (an average over the finished ones would flatter a
    # policy that starves long jobs) and the bound is a finite positive number.
    metrics["jct_ratio_to_lower_bound"] = (
        metrics["avg_jct_s"] / lb if n_done == len(sim.jobs) and 0 < lb < math.inf else float("nan")
    )
    return metrics
