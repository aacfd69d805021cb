"""MetisAllocation-v0 / MetisAllocationDiscrete-v0: parity, actions, masks, rewards."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.types import Allocate, Decision, JobKind

MULTI = "cluster_envs/MetisAllocation-v0"
DISCRETE = "cluster_envs/MetisAllocationDiscrete-v0"
BASELINES = ("fair", "optimus", "slaq", "fifo-rigid", "tiresias", "random-alloc")


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def play(env: gym.Env, name: str, seed: int) -> tuple[dict[str, float], float, int]:
    """A baseline through the env (``action_for``); returns metrics, return, steps."""
    _, info = env.reset(seed=seed)
    base = env.unwrapped
    policy = base.policy(name)
    policy.reset(base.episode_seed)
    total, steps, done = 0.0, 0, False
    while not done:
        action = base.action_for(policy.decide(base.sim.view()))
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        steps += 1
        done = terminated or truncated
    return info["episode_metrics"], total, steps


@pytest.mark.parametrize("name", ["slaq", "random-alloc"])
def test_discrete_variant_replays_the_same_episode(name: str) -> None:
    multi, _, multi_steps = play(gym.make(MULTI, preset="toy"), name, seed=3)
    discrete, _, steps = play(gym.make(DISCRETE, preset="toy"), name, seed=3)
    assert _same(multi, discrete)
    assert steps > multi_steps  # one step per GPU added, plus one per slice


def test_spaces_jobs_and_documented_fields() -> None:
    env = gym.make(MULTI, preset="toy")
    base = env.unwrapped
    assert env.action_space.nvec.tolist() == [17] * 8
    names = base.encoder.describe()
    assert len(names) == env.observation_space.shape[0] == len(set(names))
    assert {"slot0.curve_c0", "slot7.efficiency@8", "slot3.quality_gain@4"} <= set(names)
    env.reset(seed=0)
    for job in base.workload.jobs:
        assert job.kind is JobKind.MALLEABLE and 1 <= job.min_gpus <= job.max_gpus <= 16
    assert gym.make(DISCRETE, preset="toy").action_space.n == 9


def test_return_is_the_final_quality_and_components_are_reported() -> None:
    env = gym.make(MULTI, preset="toy", gain_weight=1.0, gap_weight=0.5, auc_weight=2.0)
    _, info = env.reset(seed=1)
    start_auc = env.unwrapped.tracker.projected_auc_job_windows()
    totals = {"quality_gain": 0.0, "quality_gap": 0.0, "quality_auc": 0.0}
    done, ret = False, 0.0
    while not done:
        _, reward, terminated, truncated, info = env.step(np.full(8, 2))
        for key in totals:
            totals[key] += info["reward_components"][key]
        ret += reward
        done = terminated or truncated
    metrics = info["episode_metrics"]
    assert totals["quality_gain"] == pytest.approx(metrics["num_jobs"] * 1.0)
    assert totals["quality_gap"] == pytest.approx(-metrics["quality_gap_job_h"])
    # The AUC component telescopes to the episode's quality AUC (in job-windows).
    assert totals["quality_auc"] + start_auc == pytest.approx(
        metrics["num_jobs"] * metrics["quality_auc"]
    )
    assert ret == pytest.approx(
        totals["quality_gain"] + 0.5 * totals["quality_gap"] + 2.0 * totals["quality_auc"]
    )


def test_auc_reward_prefers_the_policy_with_the_higher_auc() -> None:
    """The AUC return ranks two policies as their quality AUC does (not so the gain)."""
    results = {}
    for name in ("slaq", "fifo-rigid"):
        env = gym.make(MULTI, preset="toy", gain_weight=0.0, auc_weight=1.0)
        result = rollout(env, HeuristicAgent(env.unwrapped.policy(name)), seed=3)
        results[name] = (result.episode_return, result.metrics["quality_auc"])
    (r_slaq, auc_slaq), (r_fifo, auc_fifo) = results["slaq"], results["fifo-rigid"]
    assert auc_slaq != auc_fifo
    assert (r_slaq > r_fifo) == (auc_slaq > auc_fifo)


def test_projection_is_counted_and_masks_follow_the_slots() -> None:
    env = gym.make(MULTI, preset="toy")
    base = env.unwrapped
    _, info = env.reset(seed=0)
    mask = info["action_mask"].reshape(8, 17)
    for k, j in enumerate(base.slots):
        if j is None:
            assert mask[k].tolist() == [True] + [False] * 16
        else:
            spec = base.sim.jobs[j]
            assert mask[k, 0] and mask[k, spec.min_gpus : spec.max_gpus + 1].all()
    _, _, _, _, info = env.step(np.full(8, 16))  # asks 128 GPUs of 16
    assert info["num_projected"] > 0
    assert base.sim.inventory.num_free >= 0


def test_action_for_rejects_what_the_env_cannot_express() -> None:
    env = gym.make(MULTI, preset="toy")
    base = env.unwrapped
    env.reset(seed=0)
    job = base.slots[0]
    with pytest.raises(InfeasibleDecisionError, match="placement"):
        base.action_for(Decision((Allocate(job, ((3, 1),)),)))  # best fit picks node 0
    outside = max(j for j in range(len(base.sim.jobs)))
    with pytest.raises(InfeasibleDecisionError, match="not in the env's slots"):
        base.action_for(Decision((Allocate(outside, ((0, 1),)),)))


def test_discrete_masks_invalid_actions_and_planning() -> None:
    env = gym.make(DISCRETE, preset="toy")
    base = env.unwrapped
    obs, info = env.reset(seed=0)
    empty = [k for k, j in enumerate(base.slots) if j is None]
    assert info["action_mask"][-1] and not info["action_mask"][empty].any()
    occupied = next(k for k, j in enumerate(base.slots) if j is not None)
    t0 = base.sim.now_s
    obs, reward, _, _, info = env.step(occupied)
    assert reward == 0.0 and base.sim.now_s == t0 and base.pending[occupied] == 1
    assert obs[occupied * base.encoder.slot_size + 5] == pytest.approx(1 / 16)
    _, _, _, _, info = env.step(empty[0])  # invalid: ends the slice
    assert info["num_invalid_actions"] == 1 and base.sim.now_s > t0
    assert not base.pending.any()


def test_bad_configuration_is_rejected_clearly() -> None:
    with pytest.raises(ConfigError, match="time_slice_s"):
        gym.make(MULTI, sim={"time_slice_s": 60.0})
    with pytest.raises(ConfigError, match="num_slots must be >= 1"):
        gym.make(MULTI, num_slots=0)
    with pytest.raises(ConfigError, match="quality threshold"):
        gym.make(MULTI, quality_threshold=1.5)
    with pytest.raises(ValueError, match="8 entries"):
        env = gym.make(MULTI, preset="toy")
        env.reset(seed=0)
        env.step(np.zeros(3, dtype=int))


def test_an_agent_that_allocates_nothing_is_truncated_not_looped_forever() -> None:
    env = gym.make(MULTI, preset="toy", max_stalled_slices=3)
    env.reset(seed=0)
    for step in range(1000):  # noqa: B007 (read after the loop)
        _, reward, terminated, truncated, info = env.step(np.zeros(8, dtype=int))
        assert reward == 0.0 and not terminated
        if truncated:
            break
    assert truncated and step < 1000
    metrics = info["episode_metrics"]
    assert metrics["num_finished"] == 0 and metrics["quality_auc"] == 0.0
    assert math.isnan(metrics["time_to_quality_s"])
