"""Consistency checks of a workload and of a running simulation (public API only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.sim.columns import job_column
from cluster_envs.types import JobState

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import JobSpec


def check_workload(jobs: Sequence[JobSpec], cluster: ClusterConfig, num_gpus: int) -> None:
    """Reject job ids that are not ``0..n-1`` and jobs that can never fit the cluster.

    Raises:
        ConfigError: Naming the job and the problem.
    """
    if hasattr(jobs, "column"):  # a lazy table: ids are 0..n-1 by construction
        too_big = job_column(jobs, "min_gpus", np.int64) > num_gpus
        if too_big.any():
            _too_big(jobs[int(np.argmax(too_big))], cluster, num_gpus)
        return
    for i, job in enumerate(jobs):
        if job.job_id != i:
            raise ConfigError(f"job {job.name!r} has job_id {job.job_id}, expected {i}")
        if job.min_gpus > num_gpus:
            _too_big(job, cluster, num_gpus)


def _too_big(job: JobSpec, cluster: ClusterConfig, num_gpus: int) -> None:
    raise ConfigError(
        f"job {job.job_id} ({job.name!r}) needs at least {job.min_gpus} GPUs but "
        f"cluster {cluster.name!r} has only {num_gpus}"
    )


def check_invariants(sim: Simulator) -> None:
    """Assert GPU conservation and state consistency (used by tests; O(jobs))."""
    inv = sim.inventory
    used = np.zeros_like(inv.total)
    for j in sim.active:
        for node, gpus in sim.placement[j]:
            used[node] += gpus
    if not np.array_equal(used + inv.free, inv.total):
        raise AssertionError(f"GPU conservation broken at t={sim.now_s}: {used} + {inv.free}")
    if (inv.free < 0).any() or inv.num_free != int(inv.free.sum()):
        raise AssertionError(f"free GPU count inconsistent at t={sim.now_s}")
    for j in sim.queue:
        assert sim.state[j] == JobState.QUEUED and not sim.placement[j]
    for j in sim.active:
        assert sim.state[j] in (JobState.RUNNING, JobState.RESCALING)
    assert (sim.progress <= job_column(sim.jobs, "total_iterations") * 1.000001).all()
