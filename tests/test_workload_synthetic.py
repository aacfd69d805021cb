"""Synthetic workloads: determinism, target load, demand mix and job consistency."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.config import get_cluster
from cluster_envs.errors import ConfigError
from cluster_envs.types import JobKind
from cluster_envs.workload import PHILLY_GPU_DEMAND, load_workload, synthetic_workload
from cluster_envs.workload.synthetic import MAX_GPU_TIME_S, MIN_DURATION_S


def offered_load(workload, cluster: str) -> float:
    """Submitted GPU-seconds per second of arrivals, per cluster GPU."""
    work = sum(job.num_gpus * job.recorded_duration_s for job in workload)
    return work / (workload.span_s * get_cluster(cluster).num_gpus)


def fingerprint(workload) -> list[tuple]:
    return [
        (j.submit_time_s, j.num_gpus, j.model, j.batch_size, j.total_iterations) for j in workload
    ]


def test_same_seed_same_workload_other_seed_differs() -> None:
    a = synthetic_workload(num_jobs=200, seed=7)
    b = synthetic_workload(num_jobs=200, seed=7)
    assert a.jobs == b.jobs and fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(synthetic_workload(num_jobs=200, seed=8))


def test_preset_equals_the_generator() -> None:
    preset = load_workload("synthetic", seed=5, num_jobs=50)
    assert fingerprint(preset) == fingerprint(synthetic_workload(num_jobs=50, seed=5))
    assert len(load_workload("synthetic")) == 160


@pytest.mark.parametrize(("load", "cluster"), [(0.5, "pollux-testbed"), (1.5, "small")])
@pytest.mark.parametrize("seed", [0, 1])
def test_target_load_is_met(load: float, cluster: str, seed: int) -> None:
    wl = synthetic_workload(num_jobs=3000, load=load, cluster=cluster, seed=seed)
    assert offered_load(wl, cluster) == pytest.approx(load, rel=0.1)


def test_time_scale_raises_the_load() -> None:
    base = load_workload("synthetic", num_jobs=500)
    packed = load_workload("synthetic", num_jobs=500, time_scale=0.5)
    ratio = offered_load(packed, "pollux-testbed") / offered_load(base, "pollux-testbed")
    assert ratio == pytest.approx(2.0)


def test_durations_and_demand_follow_the_philly_cut() -> None:
    wl = synthetic_workload(num_jobs=2000, cluster="toy", seed=3)
    gpus = np.array([job.num_gpus for job in wl])
    durations = np.array([job.recorded_duration_s for job in wl])
    assert set(gpus.tolist()) <= {g for g in PHILLY_GPU_DEMAND if g <= 16}
    assert np.mean(gpus == 1) == pytest.approx(0.95, abs=0.02)
    assert durations.min() >= MIN_DURATION_S
    assert np.all(gpus * durations <= MAX_GPU_TIME_S * (1 + 1e-12))
    assert np.median(durations) == pytest.approx(np.exp(7.1), rel=0.2)
    for job in wl.jobs[:100]:
        assert wl.runtime_s(job) == pytest.approx(job.recorded_duration_s, rel=1e-9)


def test_custom_demand_and_kind() -> None:
    wl = synthetic_workload(
        num_jobs=300, gpu_demand_probs={2: 1.0, 64: 3.0}, cluster="small", kind="malleable"
    )
    assert {job.num_gpus for job in wl} == {2}  # 64 GPUs do not fit the 32-GPU cluster
    assert all(job.kind is JobKind.MALLEABLE and job.min_gpus == 1 for job in wl)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_jobs": 0},
        {"load": 0.0},
        {"gpu_demand_probs": {64: 1.0}, "cluster": "toy"},
        {"gpu_demand_probs": {0: 1.0}},
        {"cluster": "tiny"},
        {"kind": "rigidd"},
    ],
)
def test_invalid_arguments(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        synthetic_workload(**kwargs)
