"""The fork oracle: a forked episode with the same decisions reproduces the original."""

from __future__ import annotations

import pytest

import cluster_envs
from cluster_envs.policies import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import fork, play_candidate, play_out, settle
from cluster_envs.types import Allocate, Decision
from cluster_envs.workload import synthetic_workload

CLUSTER = "hetero-small"
CONFIG = {"node_interference": 0.1}


def _workload():
    return synthetic_workload(
        num_jobs=12, cluster=CLUSTER, seed=5, load=1.5, gpu_demand_probs={1: 0.3, 2: 0.4, 4: 0.3}
    )


def _sim_at_decision(policy, decisions: int) -> Simulator:
    """A simulator driven by ``policy`` to its ``decisions``-th instant with a queue."""
    sim = Simulator(_workload().jobs, CLUSTER, CONFIG, seed=0)
    seen = 0
    while not sim.done:
        sim.step()
        if sim.queue:
            seen += 1
            if seen == decisions:
                return sim
            settle(sim, policy)
    raise AssertionError("episode ended before the requested decision")


@pytest.mark.parametrize("name", ["fifo", "bo-rf"])
def test_forked_episode_reproduces_the_unforked_one(name: str) -> None:
    expected = cluster_envs.simulate(
        _workload(), policy=name, cluster=CLUSTER, seed=0, config=CONFIG
    )
    policy = make_policy(name)
    policy.reset(0)
    sim = _sim_at_decision(policy, 4)
    before = sim.now_s
    sim_copy, policy_copy = fork(sim, policy)
    settle(sim_copy, policy_copy)
    forked = play_out(sim_copy, policy_copy)
    assert sim.now_s == before and not sim.done  # the original is untouched
    settle(sim, policy)
    original = play_out(sim, policy)
    assert forked == original == expected


def test_play_candidate_of_the_policys_own_decision_is_the_episode() -> None:
    expected = cluster_envs.simulate(
        _workload(), policy="fifo", cluster=CLUSTER, seed=0, config=CONFIG
    )
    policy = make_policy("fifo")
    policy.reset(0)
    sim = _sim_at_decision(policy, 3)
    version = sim.state_version
    _, probe = fork(sim, policy)
    own = probe.decide(sim.view())
    assert own.actions  # a real decision at this instant
    assert play_candidate(sim, policy, own) == expected
    assert sim.state_version == version  # the original is untouched
    # A different placement of the same job is a different episode.
    job = own.actions[0]
    free = sim.view().free_gpus
    need = sum(g for _, g in job.placement)
    other = [n for n in range(len(free)) if free[n] >= need and ((n, need),) != job.placement]
    if other:
        alt = Decision((Allocate(job.job_id, ((other[-1], need),)),))
        assert play_candidate(sim, policy, alt)["avg_jct_s"] > 0
