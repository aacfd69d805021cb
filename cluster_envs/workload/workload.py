"""The :class:`Workload`: an ordered, immutable set of jobs plus where it came from."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_envs.config import GPU_SPEED, unknown_name
from cluster_envs.errors import ConfigError
from cluster_envs.types import JobSpec
from cluster_envs.workload.jobs import reference_runtime_s
from cluster_envs.workload.lazy import LazyJobs


@dataclass(frozen=True)
class Workload:
    """Jobs in submission order.

    ``job_id`` is authoritative: ids are dense ``0..n-1`` in submit order (ties keep
    the source order). Names are informative only and may repeat.

    Attributes:
        name: Label (preset name or file stem).
        jobs: The jobs, sorted by ``submit_time_s`` with ``jobs[i].job_id == i``: a tuple,
            or for a large trace a :class:`~cluster_envs.workload.lazy.LazyJobs` (the same
            jobs, each built when first indexed).
        source: File path or preset the jobs came from.
        reference_gpu_type: GPU type the recorded durations refer to.
        ref_gpus_per_node: Node size of the packed reference placement.
    """

    name: str
    jobs: Sequence[JobSpec]
    source: str
    reference_gpu_type: str = "T4"
    ref_gpus_per_node: int = 4

    def __post_init__(self) -> None:
        if not self.jobs:
            raise ConfigError(f"workload {self.name!r} has no jobs")
        if isinstance(self.jobs, LazyJobs):  # ids are 0..n-1 by construction
            early = self.jobs.check_order()
            if early is not None:
                raise ConfigError(self._order_error(early))
        else:
            object.__setattr__(self, "jobs", tuple(self.jobs))
        for i, job in enumerate(() if isinstance(self.jobs, LazyJobs) else self.jobs):
            if job.job_id != i:
                raise ConfigError(
                    f"workload {self.name!r}: job at position {i} has job_id {job.job_id}; "
                    "ids must be 0..n-1 in order (use Workload.from_jobs to renumber)"
                )
            if i and job.submit_time_s < self.jobs[i - 1].submit_time_s:
                raise ConfigError(self._order_error(i))
        if self.reference_gpu_type not in GPU_SPEED:
            raise unknown_name(
                "reference_gpu_type", self.reference_gpu_type, GPU_SPEED, listed="known"
            )

    def _order_error(self, i: int) -> str:
        return (
            f"workload {self.name!r}: job {i} is submitted before job {i - 1}; "
            "jobs must be in submission order (use Workload.from_jobs to sort)"
        )

    @classmethod
    def from_jobs(
        cls, name: str, jobs: Iterable[JobSpec], source: str, **reference: Any
    ) -> Workload:
        """Sort ``jobs`` by submit time (stable) and renumber them ``0..n-1``."""
        ordered = sorted(jobs, key=lambda job: job.submit_time_s)
        renumbered = tuple(
            job if job.job_id == i else dataclasses.replace(job, job_id=i)
            for i, job in enumerate(ordered)
        )
        return cls(name, renumbered, source, **reference)

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self.jobs)

    def __getitem__(self, job_id: int) -> JobSpec:
        return self.jobs[job_id]

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def span_s(self) -> float:
        """Seconds between the first and the last submission."""
        return self.jobs[-1].submit_time_s - self.jobs[0].submit_time_s

    def with_jobs(self, jobs: Iterable[JobSpec], name: str | None = None) -> Workload:
        """A workload of ``jobs`` (sorted and renumbered) with this one's metadata."""
        return Workload.from_jobs(
            self.name if name is None else name,
            jobs,
            self.source,
            reference_gpu_type=self.reference_gpu_type,
            ref_gpus_per_node=self.ref_gpus_per_node,
        )

    def subset(self, keep: Callable[[JobSpec], bool] | Iterable[int]) -> Workload:
        """The jobs passing a predicate, or the jobs with the given ids (renumbered)."""
        if callable(keep):
            chosen = [job for job in self.jobs if keep(job)]
        else:
            chosen = [self.jobs[i] for i in sorted(set(keep))]
        return self.with_jobs(chosen)

    def head(self, num_jobs: int) -> Workload:
        """The first ``num_jobs`` jobs."""
        if num_jobs < 1:
            raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
        return self.with_jobs(self.jobs[:num_jobs])

    def runtime_s(self, job: JobSpec) -> float:
        """Runtime (s) of ``job`` at its requested size on the packed reference placement."""
        return reference_runtime_s(
            job, gpu_type=self.reference_gpu_type, gpus_per_node=self.ref_gpus_per_node
        )

    def total_gpu_seconds(self) -> float:
        """Sum over jobs of ``num_gpus * runtime`` at the requested size (GPU-seconds)."""
        return float(sum(job.num_gpus * self.runtime_s(job) for job in self.jobs))

    def summary(self) -> dict[str, Any]:
        """Plain-data description: counts, span, GPU demand and model mix."""
        runtimes = [self.runtime_s(job) for job in self.jobs]
        return {
            "name": self.name,
            "source": self.source,
            "num_jobs": self.num_jobs,
            "span_s": self.span_s,
            "total_gpu_seconds": float(
                sum(j.num_gpus * r for j, r in zip(self, runtimes, strict=True))
            ),
            "mean_runtime_s": float(sum(runtimes) / len(runtimes)),
            "max_runtime_s": float(max(runtimes)),
            "num_gpus": dict(sorted(Counter(job.num_gpus for job in self.jobs).items())),
            "models": dict(sorted(Counter(job.model for job in self.jobs).items())),
            "kinds": dict(sorted(Counter(job.kind.value for job in self.jobs).items())),
            "reference_gpu_type": self.reference_gpu_type,
            "ref_gpus_per_node": self.ref_gpus_per_node,
        }
