"""One field of every job, without building every job: the simulator's reads of a workload.

A workload's jobs are a tuple of :class:`~cluster_envs.types.JobSpec` or, for a large
trace, a :class:`~cluster_envs.workload.lazy.LazyJobs` that builds a job when indexed and
serves whole fields as columns. These helpers read either the same way (the same values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_envs.types import JobSpec


def job_column(jobs: Sequence[JobSpec], name: str, dtype: Any = float) -> np.ndarray:
    """Field ``name`` of every job as an array (read-only when it comes from a column)."""
    column = getattr(jobs, "column", None)
    if column is not None:
        return np.asarray(column(name), dtype=dtype)
    return np.fromiter((getattr(job, name) for job in jobs), dtype, len(jobs))


def job_groups(jobs: Sequence[JobSpec]) -> tuple[np.ndarray, Sequence[JobSpec]] | None:
    """``(group of each job, one job per group)`` where jobs of a group share model, kind,
    GPU counts, batch size and speed model; ``None`` when the jobs do not say."""
    groups = getattr(jobs, "groups", None)
    return None if groups is None else groups()


def per_job(jobs: Sequence[JobSpec], value: Any) -> list[Any]:
    """``[value(job) for job in jobs]`` for a ``value`` of the group fields only (model,
    kind, GPU counts, batch size, speed): once per group where the jobs are grouped."""
    grouped = job_groups(jobs)
    if grouped is None:
        return [value(job) for job in jobs]
    group_of, firsts = grouped
    values = [value(job) for job in firsts]
    return [values[g] for g in group_of.tolist()]
