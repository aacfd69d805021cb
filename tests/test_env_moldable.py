"""MoldableScheduling-v0 specifics: actions, masks, reward, parity, no oracle leaks."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.envs.moldable import MoldableSchedulingEnv
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.runner import run_episode
from cluster_envs.types import JobKind

ENV_ID = "cluster_envs/MoldableScheduling-v0"


def test_spaces_and_documented_observation_fields() -> None:
    env = gym.make(ENV_ID, preset="toy", window=4, levels=[1, 2, 4])
    assert env.action_space.n == 4 * 3 + 1
    names = env.unwrapped.encoder.describe()
    assert len(names) == env.observation_space.shape[0] == len(set(names))
    assert "slot0.est_runtime@4" in names and "queue_beyond_window" in names


def test_jobs_are_snapped_to_levels() -> None:
    env = gym.make(ENV_ID, preset="toy", levels=[1, 2, 4])
    env.reset(seed=0)
    for job in env.unwrapped.workload.jobs:
        assert job.kind is JobKind.MOLDABLE
        assert job.min_gpus == 1 and job.max_gpus == 4 and job.num_gpus in (1, 2, 4)


def test_return_is_minus_total_jct_over_scale() -> None:
    env = gym.make(ENV_ID, preset="toy", reward_scale_s=100.0)
    result = rollout(env, HeuristicAgent("fifo"), seed=2)
    m = result.metrics
    assert result.episode_return == pytest.approx(-m["avg_jct_s"] * m["num_jobs"] / 100.0, rel=1e-9)


def test_invalid_action_waits_and_is_counted() -> None:
    env = gym.make(ENV_ID, preset="toy")
    _, info = env.reset(seed=0)
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    t0 = info["time_s"]
    _, _, _, _, info = env.step(bad)
    assert info["invalid_action"] and info["num_invalid_actions"] == 1
    assert info["time_s"] > t0  # it acted as "wait": time moved to the next event
    _, _, _, _, info = env.step(10_000)  # out of range: also a wait, not a crash
    assert info["num_invalid_actions"] == 2


def test_several_starts_at_one_instant(tmp_path) -> None:  # noqa: ANN001
    trace = tmp_path / "three.csv"
    trace.write_text(
        "job_id,submit_time_s,num_gpus,duration_s\na,0,1,600\nb,0,1,900\nc,0,2,300\nd,100,1,60\n"
    )
    env = gym.make(ENV_ID, preset="toy", trace=str(trace), num_jobs=None)
    _, info = env.reset(seed=0)
    assert info["num_queued"] == 3 and info["time_s"] == 0.0
    for expected_queued in (2, 1):
        _, reward, _, _, info = env.step(0)  # slot 0 at one GPU
        assert info["time_s"] == 0.0 and reward == 0.0
        assert info["num_queued"] == expected_queued
    _, reward, _, _, info = env.step(0)
    assert info["time_s"] == pytest.approx(100.0)  # nothing left to decide: next arrival
    assert reward == pytest.approx(-3 * 100.0 / 3600.0)  # three jobs in system for 100 s


@pytest.mark.parametrize("policy", ["fifo", "fifo-skip"])
@pytest.mark.parametrize("preset", ["toy", "default"])
def test_parity_with_the_runner(policy: str, preset: str) -> None:
    env = gym.make(ENV_ID, preset=preset, window=64)
    result = rollout(env, HeuristicAgent(policy), seed=5)
    base = env.unwrapped
    ref = run_episode(base.workload, policy, base.cluster, base.sim_config, seed=base.episode_seed)
    assert result.metrics == ref.metrics


def test_observation_shows_estimates_not_the_true_length() -> None:
    env = MoldableSchedulingEnv(preset="toy")
    obs, _ = env.reset(seed=4)
    # Make every job secretly 10x longer: what the agent sees must not change.
    twin = MoldableSchedulingEnv(preset="toy")
    original = twin._episode_workload

    def longer(seed: int):  # noqa: ANN202
        wl = original(seed)
        return wl.with_jobs(
            [dataclasses.replace(j, total_iterations=10 * j.total_iterations) for j in wl.jobs]
        )

    twin._episode_workload = longer  # type: ignore[method-assign]
    twin_obs, _ = twin.reset(seed=4)
    np.testing.assert_array_equal(obs, twin_obs)


def test_wait_is_masked_when_nothing_else_can_happen() -> None:
    env = gym.make(ENV_ID, preset="toy", num_jobs=1)
    _, info = env.reset(seed=0)
    # One job, an empty cluster, no future event: waiting would never end.
    assert not info["action_mask"][-1] and info["action_mask"][:-1].any()
    _, _, terminated, _, info = env.step(env.unwrapped.wait_action)
    assert info["num_forced_actions"] == 1
    while not terminated:
        _, _, terminated, _, info = env.step(env.unwrapped.wait_action)
    assert info["episode_metrics"]["num_finished"] == 1
