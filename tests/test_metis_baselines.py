"""Rankings of the allocation baselines that should hold on fixed seeds (runner only)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.errors import ConfigError
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode

SEEDS = range(100, 105)


@pytest.fixture(scope="module")
def results() -> dict[str, list[dict[str, float]]]:
    """Every baseline on the default preset's episodes of SEEDS (replayed by the runner)."""
    env = gym.make("cluster_envs/MetisAllocation-v0")
    out: dict[str, list[dict[str, float]]] = {}
    for seed in SEEDS:
        env.reset(seed=seed)
        base = env.unwrapped
        for name in ("slaq", "optimus", "fifo-rigid", "random-alloc", "fair"):
            metrics = run_episode(policy=base.policy(name), **base.runner_args()).metrics
            out.setdefault(name, []).append(metrics)
    return out


def _mean(results: dict, name: str, key: str) -> float:
    return float(np.mean([m[key] for m in results[name]]))


def test_slaq_beats_random_and_rigid_fifo_on_quality_auc(results: dict) -> None:
    slaq = _mean(results, "slaq", "quality_auc")
    assert slaq > _mean(results, "random-alloc", "quality_auc")
    assert slaq > _mean(results, "fifo-rigid", "quality_auc")
    assert slaq > _mean(results, "fair", "quality_auc")


def test_optimus_beats_fair_and_rigid_fifo_on_jct(results: dict) -> None:
    optimus = _mean(results, "optimus", "avg_jct_s")
    assert optimus < _mean(results, "fifo-rigid", "avg_jct_s")
    assert optimus < _mean(results, "fair", "avg_jct_s")


def test_fifo_rigid_never_resizes_and_every_job_finishes(results: dict) -> None:
    for name, runs in results.items():
        assert all(m["num_finished"] == m["num_jobs"] for m in runs), name
    env = gym.make("cluster_envs/MetisAllocation-v0")
    env.reset(seed=100)
    result = run_episode(policy="fifo-rigid", **env.unwrapped.runner_args())
    assert result.jobs["num_restarts"].sum() == 0


def test_baseline_arguments_are_validated() -> None:
    with pytest.raises(ConfigError, match="num_slots"):
        make_policy("fair", num_slots=0)
    with pytest.raises(ConfigError, match="thresholds_gpu_s"):
        make_policy("tiresias", thresholds_gpu_s=[10.0, 5.0])
    with pytest.raises(ConfigError, match="did you mean 'slaq'"):
        make_policy("slqa")
