"""Philly-like synthetic workloads at a target load.

Jobs arrive as a Poisson process. Each draws a GPU count from ``gpu_demand_probs`` and a
duration (at that count, on the reference GPU type) from a log-normal fitted to the
Philly trace, clipped to ``[min_duration_s, max_gpu_time_s / num_gpus]`` -- the same cut
Pollux applies to Philly (``duration >= 60 s``, ``gpu_time < 1000 GPU-hours``). The
records then go through the same :class:`~cluster_envs.workload.jobs.JobFactory` as
every trace (zoo model by GPU time, work from duration).

The arrival rate is set so that the *offered load* -- GPU-seconds submitted per second
divided by the cluster's GPUs -- equals ``load``: the rate is ``load * cluster_gpus /
mean(num_gpus * duration)`` over the jobs actually drawn (durations are heavy-tailed, so
calibrating on the distribution's mean would leave a 160-job workload far off its
target); only the Poisson arrival noise (about ``1/sqrt(num_jobs)``) remains.

GPU counts and durations are drawn independently (in Philly, multi-GPU jobs run longer;
this generator does not model that). Everything derives from one seed split per concern
(arrivals, GPU counts, durations, job building): same seed, same workload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from cluster_envs.config import ClusterConfig, get_cluster
from cluster_envs.errors import ConfigError
from cluster_envs.types import JobKind
from cluster_envs.workload.jobs import JobFactory, JobOptions, TraceRecord
from cluster_envs.workload.workload import Workload

#: Share of jobs per GPU count in the Philly trace (Pollux's cut: duration >= 60 s and
#: gpu_time < 1000 h; 74,428 jobs), counts of 12, 24, 64 and 128 GPUs (< 0.03%) dropped.
PHILLY_GPU_DEMAND: dict[int, float] = {
    1: 0.9465,
    2: 0.0062,
    4: 0.0240,
    8: 0.0202,
    16: 0.0019,
    32: 0.0008,
}
#: Mean and standard deviation of ln(duration / s) over the same Philly jobs.
PHILLY_LOG_DURATION_MEAN = 7.105
PHILLY_LOG_DURATION_STD = 1.963
#: Pollux's Philly cut: shortest duration kept (s) and GPU-time bound (GPU-seconds).
MIN_DURATION_S = 60.0
MAX_GPU_TIME_S = 1000 * 3600.0
#: Defaults: 160 jobs (one Pollux workload) at 80% offered load on the Pollux testbed.
DEFAULT_NUM_JOBS = 160
DEFAULT_LOAD = 0.8
DEFAULT_CLUSTER = "pollux-testbed"


def _demand(probs: Mapping[int, float] | None, cluster: ClusterConfig) -> dict[int, float]:
    chosen = dict(PHILLY_GPU_DEMAND if probs is None else probs)
    for gpus, p in chosen.items():
        if int(gpus) != gpus or gpus < 1 or not (p >= 0 and math.isfinite(p)):
            raise ConfigError(
                f"gpu_demand_probs needs int GPU counts >= 1 and p >= 0, got {gpus}: {p}"
            )
    fitting = {int(g): float(p) for g, p in chosen.items() if g <= cluster.num_gpus and p > 0}
    if not fitting:
        raise ConfigError(
            f"gpu_demand_probs has no GPU count that fits cluster {cluster.name!r} "
            f"({cluster.num_gpus} GPUs)"
        )
    total = sum(fitting.values())
    return {g: p / total for g, p in sorted(fitting.items())}


def synthetic_records(
    num_jobs: int = DEFAULT_NUM_JOBS,
    load: float = DEFAULT_LOAD,
    cluster: str | ClusterConfig | Mapping[str, Any] = DEFAULT_CLUSTER,
    seed: int | np.random.SeedSequence = 0,
    gpu_demand_probs: Mapping[int, float] | None = None,
    log_duration_mean: float = PHILLY_LOG_DURATION_MEAN,
    log_duration_std: float = PHILLY_LOG_DURATION_STD,
    min_duration_s: float = MIN_DURATION_S,
    max_gpu_time_s: float = MAX_GPU_TIME_S,
) -> list[TraceRecord]:
    """Duration-only records of a synthetic workload (arguments as :func:`synthetic_workload`).

    Uses the first three children of ``seed`` (arrivals, GPU counts, durations).
    """
    if num_jobs < 1:
        raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
    if not (load > 0 and math.isfinite(load)):
        raise ConfigError(f"load must be > 0, got {load}")
    if log_duration_std < 0 or not 0 < min_duration_s <= max_gpu_time_s:
        raise ConfigError(
            "need log_duration_std >= 0 and 0 < min_duration_s <= max_gpu_time_s, got "
            f"{log_duration_std}, {min_duration_s}, {max_gpu_time_s}"
        )
    spec = get_cluster(cluster)
    demand = _demand(gpu_demand_probs, spec)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    arrival_rng, demand_rng, duration_rng = (np.random.default_rng(s) for s in root.spawn(3))
    counts = np.asarray(list(demand))
    gpus = demand_rng.choice(counts, size=num_jobs, p=np.asarray(list(demand.values())))
    raw = np.exp(duration_rng.normal(log_duration_mean, log_duration_std, size=num_jobs))
    high = np.maximum(min_duration_s, max_gpu_time_s / gpus)
    durations = np.clip(raw, min_duration_s, high)
    # Calibrate on the jobs actually drawn: heavy-tailed durations make a small sample's
    # mean GPU time far from the distribution's, and the load should hold for this workload.
    rate_per_s = load * spec.num_gpus / float(np.mean(gpus * durations))
    gaps = arrival_rng.exponential(1.0 / rate_per_s, size=num_jobs - 1)
    submit = np.concatenate([[0.0], np.cumsum(gaps)])
    return [
        TraceRecord(
            name="",
            submit_time_s=float(submit[i]),
            num_gpus=int(gpus[i]),
            duration_s=float(durations[i]),
        )
        for i in range(num_jobs)
    ]


def synthetic_workload(
    num_jobs: int = DEFAULT_NUM_JOBS,
    load: float = DEFAULT_LOAD,
    cluster: str | ClusterConfig | Mapping[str, Any] = DEFAULT_CLUSTER,
    seed: int = 0,
    kind: JobKind | str = JobKind.RIGID,
    gpu_demand_probs: Mapping[int, float] | None = None,
    log_duration_mean: float = PHILLY_LOG_DURATION_MEAN,
    log_duration_std: float = PHILLY_LOG_DURATION_STD,
    min_duration_s: float = MIN_DURATION_S,
    max_gpu_time_s: float = MAX_GPU_TIME_S,
    reference_gpu_type: str = "T4",
    ref_gpus_per_node: int = 4,
    min_gpus: int = 1,
    max_gpus_cap: int = 16,
    batch_sizes: str = "scaled",
) -> Workload:
    """A Philly-like workload whose offered load on ``cluster`` is ``load``.

    Args:
        num_jobs: Number of jobs.
        load: Target offered load: submitted GPU-seconds per second / cluster GPUs.
        cluster: Cluster preset, config or mapping (only its GPU count is used; GPU
            counts larger than the cluster are dropped from the demand mix).
        seed: The one seed every random draw derives from.
        kind: ``"rigid"``, ``"moldable"`` or ``"malleable"`` (see ``JobOptions``).
        gpu_demand_probs: GPU count -> probability (normalised); default Philly's.
        log_duration_mean: Mean of ln(duration / s).
        log_duration_std: Standard deviation of ln(duration / s).
        min_duration_s: Shortest duration (s); shorter draws are raised to it.
        max_gpu_time_s: Largest ``num_gpus * duration`` (GPU-s); longer draws are cut.
        reference_gpu_type: GPU type the durations refer to.
        ref_gpus_per_node: Node size of the packed reference placement.
        min_gpus: Smallest GPU count of moldable/malleable jobs.
        max_gpus_cap: Largest GPU count of moldable/malleable jobs.
        batch_sizes: Batch-size rule (``"scaled"``, ``"default"``, ``"sampled"``).
    """
    records_seed, jobs_seed = np.random.SeedSequence(seed).spawn(2)
    records = synthetic_records(
        num_jobs,
        load,
        cluster,
        records_seed,
        gpu_demand_probs,
        log_duration_mean,
        log_duration_std,
        min_duration_s,
        max_gpu_time_s,
    )
    options = JobOptions(
        kind=kind,
        seed=seed,
        reference_gpu_type=reference_gpu_type,
        ref_gpus_per_node=ref_gpus_per_node,
        min_gpus=min_gpus,
        max_gpus_cap=max_gpus_cap,
        batch_sizes=batch_sizes,
    )
    jobs = JobFactory(options, seed=jobs_seed).make_all(records)
    return Workload(
        name=f"synthetic-load{load:g}-seed{seed}",
        jobs=jobs,
        source="synthetic",
        reference_gpu_type=reference_gpu_type,
        ref_gpus_per_node=ref_gpus_per_node,
    )
