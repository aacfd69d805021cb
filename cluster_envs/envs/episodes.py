"""Where each episode's jobs come from: one seeded, documented rule shared by every env.

An env is given a *workload source* through kwargs:

* ``workload="synthetic"`` (with ``num_jobs`` and ``load``): a fresh Philly-like
  workload per episode, drawn from the episode seed at the target offered load on the
  env's cluster;
* ``workload="<preset>"`` (``philly-sample``, ``pollux-1`` .. ``pollux-8``) or
  ``trace="<file>"`` (any format the loaders read): if ``num_jobs`` is smaller than the
  trace, each episode takes ``num_jobs`` consecutive jobs from a seeded random offset
  (times re-based to 0), else the whole trace;
* ``workload=["pollux-1", "pollux-2", ...]``: a pool; each episode picks one by seed.
  Train on one pool and evaluate on another to test on workloads never trained on.

The resulting :class:`~cluster_envs.workload.Workload` is what the no-gym runner replays
for the parity check (``env.unwrapped.workload`` after ``reset``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from cluster_envs.config import ClusterConfig
from cluster_envs.errors import ConfigError
from cluster_envs.types import JobKind, JobSpec
from cluster_envs.workload import PRESETS, Workload, load_workload, synthetic_workload

JobTransform = Callable[[JobSpec], JobSpec]


@dataclass(frozen=True)
class WorkloadSource:
    """The per-episode workload rule (see the module docstring).

    Attributes:
        workload: ``"synthetic"``, a preset name, or a tuple of preset names / paths.
        trace: A trace file path (overrides ``workload``).
        num_jobs: Jobs per episode (``None``: the whole trace; synthetic needs it).
        load: Offered load of synthetic workloads.
        kind: Job kind the loaders build (``rigid``, ``moldable``, ``malleable``).
        max_gpus_cap: Largest GPU count of moldable / malleable jobs.
        time_scale: Multiply trace inter-arrival times by this.
        batch_sizes: Batch-size rule of jobs whose record gives none (``"scaled"``,
            ``"default"``, ``"sampled"``; see :mod:`cluster_envs.workload.jobs`).
        max_gpu_time_s: Synthetic only: cap on a job's GPU-seconds (None: Pollux's
            1,000 GPU-hours).
        gpu_demand: Synthetic only: probability of each requested GPU count, e.g.
            ``{"1": 0.5, "4": 0.5}`` (None: the Philly mix).
    """

    workload: str | tuple[str, ...] = "synthetic"
    trace: str | None = None
    num_jobs: int | None = 40
    load: float = 1.0
    kind: str = "moldable"
    max_gpus_cap: int = 16
    time_scale: float = 1.0
    batch_sizes: str = "scaled"
    max_gpu_time_s: float | None = None
    gpu_demand: dict[str, float] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if self.num_jobs is not None and self.num_jobs < 1:
            raise ConfigError(f"num_jobs must be >= 1, got {self.num_jobs}")
        if not self.load > 0:
            raise ConfigError(f"load must be > 0, got {self.load}")
        if self.trace is None:
            for name in self._pool():
                if name not in PRESETS and not name.endswith((".csv", ".swf", ".txt")):
                    from cluster_envs.config import suggest

                    raise ConfigError(
                        f"unknown workload {name!r}{suggest(name, PRESETS)}; use one of "
                        f"{', '.join(PRESETS)}, a list of them, or trace=PATH"
                    )
        JobKind(self.kind)  # raises ValueError naming the kind

    def _pool(self) -> tuple[str, ...]:
        if self.trace is not None:
            return (self.trace,)
        if isinstance(self.workload, str):
            return (self.workload,)
        return tuple(self.workload)

    def sample(self, seed: int, cluster: ClusterConfig) -> Workload:
        """The workload of the episode with seed ``seed``."""
        rng = np.random.default_rng([seed, 0x5EED])
        pool = self._pool()
        name = pool[int(rng.integers(len(pool)))] if len(pool) > 1 else pool[0]
        if name == "synthetic":
            extra: dict = {}
            if self.max_gpu_time_s is not None:
                extra["max_gpu_time_s"] = self.max_gpu_time_s
            if self.gpu_demand is not None:
                extra["gpu_demand_probs"] = {int(k): float(v) for k, v in self.gpu_demand.items()}
            return synthetic_workload(
                num_jobs=self.num_jobs or 40,
                load=self.load,
                cluster=cluster,
                seed=seed,
                kind=self.kind,
                max_gpus_cap=self.max_gpus_cap,
                batch_sizes=self.batch_sizes,
                **extra,
            )
        full = _load_cached(name, self.kind, self.max_gpus_cap, self.time_scale, self.batch_sizes)
        if self.num_jobs is None or self.num_jobs >= len(full):
            return full
        start = int(rng.integers(len(full) - self.num_jobs + 1))
        return rebase(full, start, self.num_jobs)


#: The synthetic job mix of the moldable and Metis default/toy presets: a heavier
#: multi-GPU mix than Philly's (95% 1-GPU) at offered load 2, GPU-time capped at 8 h, so
#: that queues form and allocation matters; batch sizes drawn over each model's profiled
#: range, so some jobs scale well and some do not.
SYNTHETIC_JOBS: dict = {
    "workload": "synthetic",
    "load": 2.0,
    "batch_sizes": "sampled",
    "max_gpu_time_s": 8 * 3600.0,
    "gpu_demand": {"1": 0.5, "2": 0.15, "4": 0.2, "8": 0.15},
}


@lru_cache(maxsize=32)
def _load_cached(
    name: str, kind: str, max_gpus_cap: int, time_scale: float, batch_sizes: str
) -> Workload:
    return load_workload(
        name, kind=kind, max_gpus_cap=max_gpus_cap, time_scale=time_scale, batch_sizes=batch_sizes
    )


def rebase(workload: Workload, start: int, count: int) -> Workload:
    """Jobs ``start .. start+count-1`` of ``workload``, renumbered, times from 0."""
    jobs = workload.jobs[start : start + count]
    t0 = jobs[0].submit_time_s
    moved = [
        dataclasses.replace(job, job_id=i, submit_time_s=job.submit_time_s - t0)
        for i, job in enumerate(jobs)
    ]
    return workload.with_jobs(moved, name=f"{workload.name}[{start}:{start + count}]")


def transform(workload: Workload, fn: JobTransform) -> Workload:
    """Apply ``fn`` to every job (e.g. snap GPU counts to the env's levels)."""
    return workload.with_jobs([fn(job) for job in workload.jobs])


def as_tuple(value: str | Sequence[str]) -> str | tuple[str, ...]:
    """JSON kwargs give lists; the frozen config wants tuples."""
    return value if isinstance(value, str) else tuple(value)
