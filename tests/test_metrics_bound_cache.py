"""The cross-episode cache of the JCT lower bound gives the uncached value exactly."""

from __future__ import annotations

import gymnasium as gym

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.sim import metrics


def _uncached(sim: object) -> float:
    jobs = sim.jobs  # type: ignore[attr-defined]
    total = 0.0
    for job in jobs:
        per_iter = metrics.best_isolated_runtime_s(
            metrics._unit_job(job),
            sim.cluster,  # type: ignore[attr-defined]
            sim.inventory.network_speed,  # type: ignore[attr-defined]
        )
        total += per_iter * job.total_iterations
    return total / max(len(jobs), 1)


def test_cached_bound_equals_uncached_across_episodes() -> None:
    env = gym.make("cluster_envs/MoldableScheduling-v0")
    metrics._PER_ITER.clear()
    for seed in range(3):
        env.reset(seed=seed)
        sim = env.unwrapped.sim  # type: ignore[attr-defined]
        cold = metrics.lower_bound_avg_jct_s(sim)
        assert metrics._PER_ITER  # the cache was filled
        assert metrics.lower_bound_avg_jct_s(sim) == cold == _uncached(sim)
    env.close()
