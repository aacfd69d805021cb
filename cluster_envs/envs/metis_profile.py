"""The throughput model a MetisAllocation job is described by: fitted on arrival to a few
noisy small-scale profiling runs (:func:`profile_job`), never the true speed model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import nnls

from cluster_envs.config import GPU_SPEED, REFERENCE_INTER_NODE_GBPS, ClusterConfig
from cluster_envs.perf.speed import packed_shape

if TYPE_CHECKING:
    from cluster_envs.types import JobSpec

#: GPU counts profiled on arrival (those within the job's range), packed placements.
PROFILE_GPUS = (1, 2, 4, 8)
#: Relative noise of one profiled iteration time.
PROFILE_NOISE_STD = 0.05


@dataclass(frozen=True)
class ThroughputProfile:
    """``t(n) = theta0 + theta1 / n + theta2 * (n - 1)`` seconds per iteration.

    Fitted by non-negative least squares to noisy iteration times measured at a few
    packed GPU counts (fixed overhead, parallel compute, communication that grows with
    the replicas).
    """

    theta: tuple[float, float, float]

    def iteration_time(self, n: int) -> float:
        """Predicted seconds per iteration on ``n`` GPUs."""
        t0, t1, t2 = self.theta
        return max(t0 + t1 / n + t2 * (n - 1), 1e-12)

    def rate(self, n: int) -> float:
        """Predicted iterations per second on ``n`` GPUs."""
        return 1.0 / self.iteration_time(n)

    def efficiency(self, n: int) -> float:
        """Predicted ``S(n) / n`` with ``S(n) = t(1) / t(n)``."""
        return self.iteration_time(1) / (n * self.iteration_time(n))


def profile_job(
    job: JobSpec, cluster: ClusterConfig, seed: int, noise_std: float = PROFILE_NOISE_STD
) -> ThroughputProfile:
    """Profile ``job`` at the counts of :data:`PROFILE_GPUS` it allows and fit the model.

    Each measurement is the true iteration time on a packed placement of the cluster's
    fastest GPU type, times ``1 + noise_std * N(0, 1)`` from ``default_rng([seed, job_id,
    3])`` -- the same numbers whatever order jobs are profiled in.
    """
    rng = np.random.default_rng([seed, job.job_id, 3])
    speed, network, num_gpus, node_gpus = _cluster_constants(cluster)
    top = min(job.max_gpus, num_gpus)
    counts = tuple(n for n in PROFILE_GPUS if n <= top) or (1,)
    throughput, times = job.speed.throughput, []
    for n in counts:
        rate = throughput(packed_shape(n, node_gpus), speed, network)
        times.append((1.0 / rate) * max(1.0 + noise_std * float(rng.standard_normal()), 0.1))
    scale = times[0]  # np.mean's value: a sequential sum (at most 4 terms) over the count
    for t in times[1:]:
        scale += t
    scale /= len(times)
    theta, _ = nnls(_design(counts), np.array(times) / scale)
    theta = theta * scale
    if theta[0] + theta[1] <= 0:  # degenerate fit: fall back to the measured 1-GPU time
        theta = np.array([0.0, times[0], 0.0])
    return ThroughputProfile((float(theta[0]), float(theta[1]), float(theta[2])))


#: The last cluster asked about and its constants (a frozen config: kept by identity).
_CLUSTER: list[Any] = [None, None]
#: The model's design matrix per tuple of profiled counts (read-only; nnls copies).
_DESIGN: dict[tuple[int, ...], np.ndarray] = {}


def _cluster_constants(cluster: ClusterConfig) -> tuple[float, float, int, int]:
    """(fastest GPU speed, relative network speed, GPUs, most GPUs on one node)."""
    if _CLUSTER[0] is not cluster:
        speed = max(GPU_SPEED[g.gpu_type] for g in cluster.node_groups)
        network = cluster.inter_node_gbps / REFERENCE_INTER_NODE_GBPS
        _CLUSTER[:] = cluster, (speed, network, cluster.num_gpus, cluster.max_gpus_per_node)
    return _CLUSTER[1]  # type: ignore[no-any-return]


def _design(counts: tuple[int, ...]) -> np.ndarray:
    """Rows ``[1, 1 / n, n - 1]`` of ``t(n)`` for each profiled count ``n``."""
    a = _DESIGN.get(counts)
    if a is None:
        a = _DESIGN[counts] = np.asarray([[1.0, 1.0 / n, n - 1.0] for n in counts])
        a.flags.writeable = False
    return a
