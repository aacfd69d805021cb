"""The BO placer inside episodes: registry names, feasibility, determinism."""

from __future__ import annotations

import cluster_envs
from baselines.placement.online import BOScheduler
from cluster_envs.policies import PlacementPolicy, make_policy
from cluster_envs.workload import synthetic_workload

CONFIG = {"node_interference": 0.1}


def _workload():
    return synthetic_workload(
        num_jobs=4, cluster="hetero-small", seed=3, load=1.5, gpu_demand_probs={2: 0.5, 4: 0.5}
    )


def test_bo_policy_runs_an_episode_through_simulate() -> None:
    wl = _workload()
    metrics = cluster_envs.simulate(
        wl, policy="bo-gp-ei", cluster="hetero-small", seed=0, config=CONFIG
    )
    assert metrics["avg_jct_s"] > 0 and metrics["makespan_s"] > 0


def test_bo_placer_searches_within_its_budget_and_is_seeded() -> None:
    runs = []
    for _ in range(2):
        policy = BOScheduler("et", budget=6)
        assert isinstance(policy.bo, PlacementPolicy)
        runs.append(
            cluster_envs.simulate(
                _workload(), policy=policy, cluster="hetero-small", seed=1, config=CONFIG
            )
        )
        assert policy.bo.num_searches >= 1  # skopt ran, not only the small-space enumeration
        assert policy.bo.num_evaluations <= 6 * len(_workload().jobs)
    assert runs[0] == runs[1]


def test_every_bo_name_is_registered() -> None:
    for name in ("bo-gp-ei", "bo-gp-pi", "bo-gp-lcb", "bo-gp-hedge", "bo-rf", "bo-et"):
        assert make_policy(name).name == name
