"""Adaptive-batch jobs (artifact semantics), the Allocate batch hunk, and the Pollux-family policies."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.perf.goodput import GoodputSpeed, get_goodput_model
from cluster_envs.perf.throughput import PolluxThroughput
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision, JobState
from cluster_envs.workload.loaders import load_workload

ROUNDS = {"time_slice_s": 60.0}
NUM_JOBS = 24


def adaptive(num_jobs: int = NUM_JOBS):
    return load_workload(
        "pollux-1", kind="malleable", adaptive_batch=True, max_gpus_cap=64, num_jobs=num_jobs
    )


def test_default_loader_is_unchanged_and_option_switches_semantics() -> None:
    plain = load_workload("pollux-1", num_jobs=5)
    assert all(isinstance(j.speed, PolluxThroughput) for j in plain.jobs)
    jobs = adaptive(5).jobs
    for job in jobs:
        good = get_goodput_model(job.model)
        assert isinstance(job.speed, GoodputSpeed)
        assert job.total_iterations == pytest.approx(good.total_progress)
        assert job.batch_size == good.init_batch_size
    with pytest.raises(ConfigError):
        load_workload("pollux-1", adaptive_batch=True, kind="elastic")


def test_batch_change_rerates_without_restart_and_bad_batch_is_rejected() -> None:
    job = next(j for j in adaptive(10).jobs if j.model == "cifar10")
    job = type(job)(**{**{f: getattr(job, f) for f in job.__slots__}, "job_id": 0,
                       "submit_time_s": 0.0})  # fmt: skip
    sim = Simulator([job], "pollux-testbed", {"rescale_cost_s": 30.0})
    sim.step()  # arrival
    sim.apply(Decision((Allocate(0, ((0, 4),)),)))
    sim.advance_to(100.0)
    assert sim.state[0] == JobState.RUNNING
    slow = sim.rate[0]
    changed = sim.apply(Decision((Allocate(0, ((0, 4),), batch_size=512),)))
    assert changed == 0 and sim.num_restarts[0] == 0 and sim.state[0] == JobState.RUNNING
    fast = sim.rate[0]
    assert fast > slow * 1.1  # 4 GPUs at 128 vs 512: more progress per second
    assert fast == pytest.approx(
        job.speed.model.goodput((4,), 512, sim.progress[0] / job.total_iterations)
    )
    with pytest.raises(InfeasibleDecisionError, match="batch_size"):
        sim.apply(Decision((Allocate(0, ((0, 4),), batch_size=0),)))


@pytest.fixture(scope="module")
def pollux_run():
    wl = adaptive()
    policy = make_policy("pollux", num_slots=1000)
    return wl, policy, run_episode(wl, policy, "pollux-testbed", ROUNDS, 0)


def test_pollux_finishes_sets_batches_in_limits_and_is_deterministic(pollux_run) -> None:
    wl, policy, result = pollux_run
    assert result.metrics["num_unfinished"] == 0
    assert policy._batches  # adaptive jobs got batch sizes
    for j, batch in policy._batches.items():
        good = wl.jobs[j].speed.model
        assert good.init_batch_size <= batch <= good.max_batch_size
    again = run_episode(wl, make_policy("pollux", num_slots=1000), "pollux-testbed", ROUNDS, 0)
    assert again.metrics["avg_jct_s"] == result.metrics["avg_jct_s"]


def test_fairness_knob_changes_the_schedule(pollux_run) -> None:
    wl, _, result = pollux_run
    other = run_episode(wl, make_policy("pollux", num_slots=1000, p=1.0), "pollux-testbed",
                        ROUNDS, 0)  # fmt: skip
    assert other.metrics["num_unfinished"] == 0
    assert other.metrics["avg_jct_s"] != result.metrics["avg_jct_s"]
    with pytest.raises(ConfigError):
        make_policy("pollux", p=math.inf)


def test_adaptive_batch_beats_fixed_batch_pollux(pollux_run) -> None:
    """The same allocator on fixed-batch jobs (its rigid-batch variant) is slower."""
    _, _, result = pollux_run
    fixed = load_workload("pollux-1", kind="malleable", max_gpus_cap=64, num_jobs=NUM_JOBS)
    res = run_episode(fixed, make_policy("pollux", num_slots=1000), "pollux-testbed", ROUNDS, 0)
    assert res.metrics["num_unfinished"] == 0
    assert result.metrics["avg_jct_s"] < res.metrics["avg_jct_s"]


def test_artifact_baselines_finish_and_tiresias_never_resizes() -> None:
    rigid = load_workload("pollux-1", kind="rigid", num_jobs=NUM_JOBS)
    res = run_episode(rigid, make_policy("tiresias-artifact", num_slots=1000), "pollux-testbed",
                      {**ROUNDS, "record_timeline": True}, 0)  # fmt: skip
    assert res.metrics["num_unfinished"] == 0
    for j, _, _, placement in res.segments:
        assert sum(g for _, g in placement) == rigid.jobs[j].num_gpus
    elastic = load_workload("pollux-1", kind="malleable", max_gpus_cap=64, num_jobs=NUM_JOBS)
    res = run_episode(elastic, make_policy("optimus-oracle", num_slots=1000), "pollux-testbed",
                      {**ROUNDS, "record_timeline": True}, 0)  # fmt: skip
    assert res.metrics["num_unfinished"] == 0
    # Re-placed jobs are consolidated: most GPU time on the fewest nodes possible.
    packed = sum((e - s) for _, s, e, p in res.segments
                 if len(p) == math.ceil(sum(g for _, g in p) / 4))  # fmt: skip
    assert packed / sum(e - s for _, s, e, _ in res.segments) > 0.5
    ncf = [s for s in res.segments if elastic.jobs[s[0]].model == "ncf"]
    assert all(sum(g for _, g in s[3]) == 1 for s in ncf)  # the artifact's NCF cap


def test_pollux_is_a_metis_allocation_baseline() -> None:
    env = gym.make("cluster_envs/MetisAllocation-v0")
    env.reset(seed=100)
    base = env.unwrapped
    metrics = run_episode(policy=base.policy("pollux"), **base.runner_args()).metrics
    fair = run_episode(policy=base.policy("fair"), **base.runner_args()).metrics
    assert metrics["num_unfinished"] == 0
    assert np.isfinite(metrics["avg_jct_s"]) and metrics["avg_jct_s"] > 0
    assert metrics["avg_jct_s"] < 2.0 * fair["avg_jct_s"]


MOLDABLE = "cluster_envs/MoldableScheduling-v0"


def test_pollux_moldable_same_metrics_through_env_and_runner() -> None:
    from cluster_envs.envs.rollout import HeuristicAgent, rollout

    env = gym.make(MOLDABLE, preset="pollux", window=16)
    through_env = rollout(env, HeuristicAgent(make_policy("pollux-moldable", window=16)), seed=3)
    base = env.unwrapped
    runner = run_episode(base.workload, make_policy("pollux-moldable", window=16), base.cluster,
                         base.sim_config, seed=base.episode_seed)  # fmt: skip
    assert through_env.metrics == runner.metrics
    assert runner.metrics["num_unfinished"] == 0


def test_pollux_moldable_fairness_knob_and_levels() -> None:
    from helpers import make_job

    from cluster_envs.types import JobKind

    # Four queued moldable jobs with linear speedup, 8 free GPUs (2 x 4).
    jobs = [make_job(i, 0.0, 1000.0, 1, kind=JobKind.MOLDABLE, min_gpus=1, max_gpus=16)
            for i in range(4)]  # fmt: skip
    sim = Simulator(jobs, {"name": "2x4", "node_groups": [{"num_nodes": 2, "gpus_per_node": 4}]})
    while sim.next_event_time() <= 0.0:
        sim.step()
    view = sim.view()
    sizes = {}
    for p in (-1.0, 1.0):
        decision = make_policy("pollux-moldable", p=p).decide(view)
        sizes[p] = sorted(sum(g for _, g in a.placement) for a in decision.actions)
    # p = -1 (fair): every job gets a share. p = 1 (sum of speedups, linear within a
    # node, ties to the first job): fewer, bigger jobs, one node each (spreading 8 GPUs
    # over two nodes costs speed).
    assert sizes[-1.0] == [2, 2, 2, 2]
    assert sizes[1.0] == [4, 4]
    # Only the levels: with levels (1, 4), all four start at 1 and the 4 GPUs left make
    # one of them a 4.
    decision = make_policy("pollux-moldable", levels=(1, 4)).decide(view)
    assert sorted(sum(g for _, g in a.placement) for a in decision.actions) == [1, 1, 1, 4]
    with pytest.raises(ConfigError):
        make_policy("pollux-moldable", p=math.nan)
