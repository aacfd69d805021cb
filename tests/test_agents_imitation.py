"""agents.imitation: behaviour cloning and DAgger from a heuristic, with real SB3 models."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml
from stable_baselines3 import DQN, PPO

import cluster_envs  # noqa: F401
from agents.imitation import (
    DEMO_SEED_OFFSET,
    PretrainSettings,
    collect_demonstrations,
    pretrain,
    teacher_agreement,
    warm_start,
)
from agents.train import set_deterministic, train
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError

MULTI = "cluster_envs/MetisAllocation-v0"
DISCRETE = "cluster_envs/MetisAllocationDiscrete-v0"
TOY = {"preset": "toy", "gain_weight": 0.0, "auc_weight": 1.0}


def test_demonstrations_are_the_teachers_episodes() -> None:
    demos = collect_demonstrations(MULTI, TOY, "slaq", episodes=2, seed=5, gamma=0.9)
    env = gym.make(MULTI, **TOY)
    played = [
        rollout(env, HeuristicAgent(env.unwrapped.policy("slaq")), seed=5 + DEMO_SEED_OFFSET + k)
        for k in range(2)
    ]
    assert len(demos) == sum(r.num_steps for r in played)
    assert demos.actions.shape == (len(demos), 8)
    assert demos.masks is not None and demos.masks.shape == (len(demos), 8 * 17)
    assert [m["quality_auc"] for m in demos.episode_metrics] == [
        r.metrics["quality_auc"] for r in played
    ]
    # The first return-to-go of an episode is its discounted return.
    env.reset(seed=5 + DEMO_SEED_OFFSET)
    rewards = []
    agent = HeuristicAgent(env.unwrapped.policy("slaq"))
    agent.reset(env.unwrapped.episode_seed)
    obs, info = env.reset(seed=5 + DEMO_SEED_OFFSET)
    done = False
    while not done:
        obs, r, terminated, truncated, info = env.step(agent.act(env, obs, info))
        rewards.append(r)
        done = terminated or truncated
    expected = sum(r * 0.9**t for t, r in enumerate(rewards))
    assert demos.returns[0] == pytest.approx(expected)


def test_cloning_makes_the_agent_act_like_the_teacher() -> None:
    set_deterministic()
    demos = collect_demonstrations(MULTI, TOY, "slaq", episodes=20, seed=0, gamma=0.99)
    env = gym.make(MULTI, **TOY)
    model = PPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs={"net_arch": [128, 128]})
    present = [i for i, n in enumerate(env.unwrapped.encoder.describe()) if n.endswith(".present")]
    occupied = demos.observations[:, present] > 0.5

    def agreement() -> float:
        predicted, _ = model.predict(demos.observations, deterministic=True)
        return float(np.mean(predicted[occupied] == demos.actions[occupied]))

    before = agreement()
    losses = pretrain(model, demos, PretrainSettings("slaq", epochs=60, batch_size=32), seed=0)
    after = agreement()
    assert after > max(0.6, before + 0.3), (before, after)
    assert 0.0 <= losses["teacher_agreement"] <= 1.0
    # the same share, for the weights as they are (every action entry, padding included)
    assert teacher_agreement(model, demos) == losses["teacher_agreement"]
    assert np.isfinite(losses["value_loss"])


def test_dagger_rounds_let_the_agent_play_and_the_teacher_label() -> None:
    env = gym.make(MULTI, **TOY)
    model = PPO("MlpPolicy", env, seed=0, device="cpu", n_steps=64, batch_size=64)
    record = warm_start(
        model, MULTI, TOY, PretrainSettings("slaq", episodes=3, epochs=2, dagger_rounds=2), seed=1
    )
    assert [r["player"] for r in record["rounds"]] == ["slaq", "agent", "agent"]
    assert record["demo_seeds"] == f"{1 + DEMO_SEED_OFFSET}..{1 + DEMO_SEED_OFFSET + 8}"
    assert all("quality_auc" in r and "teacher_agreement" in r for r in record["rounds"])


def test_dqn_pretraining_makes_the_teachers_increment_greedy() -> None:
    set_deterministic()
    demos = collect_demonstrations(DISCRETE, TOY, "slaq", episodes=10, seed=0, gamma=0.99)
    env = gym.make(DISCRETE, **TOY)
    model = DQN("MlpPolicy", env, seed=0, device="cpu", learning_starts=10)
    settings = PretrainSettings("slaq", epochs=40, batch_size=32)
    losses = pretrain(model, demos, settings, seed=0)
    assert losses["teacher_agreement"] > 0.8
    for online, target in zip(
        model.policy.q_net.parameters(), model.policy.q_net_target.parameters(), strict=True
    ):
        assert np.array_equal(online.detach().numpy(), target.detach().numpy())


def test_train_with_pretrain_records_it_and_keeps_the_cloned_model(tmp_path: Path) -> None:
    result = train(
        "ppo", MULTI, tmp_path / "run", timesteps=64, seed=0, env_kwargs=TOY,
        hyperparams={"n_steps": 64, "batch_size": 64}, n_envs=1, eval_freq=0,
        progress_bar=False, pretrain=PretrainSettings("slaq", episodes=2, epochs=1),
    )  # fmt: skip
    config = yaml.safe_load((result.out_dir / "config.yml").read_text())
    assert config["pretrain"]["teacher"] == "slaq"
    assert config["pretrain"]["steps"] > 0
    assert (result.out_dir / "pretrained_model.zip").is_file()
    with pytest.raises(ConfigError, match="--resume"):
        train("ppo", MULTI, tmp_path / "run", timesteps=64, env_kwargs=TOY, n_envs=1,
              eval_freq=0, progress_bar=False, resume=result.last_model,
              pretrain=PretrainSettings("slaq"))  # fmt: skip


def test_bad_pretrain_settings_and_teachers_are_named() -> None:
    with pytest.raises(ConfigError, match="episodes"):
        PretrainSettings("slaq", episodes=0)
    with pytest.raises(ConfigError, match="dagger_rounds"):
        PretrainSettings("slaq", dagger_rounds=-1)
    with pytest.raises(ConfigError, match="slaqq"):
        collect_demonstrations(MULTI, TOY, "slaqq", episodes=1, seed=0, gamma=0.9)
    # The moldable env places consolidated; a spreading teacher cannot be replayed by it.
    # (Window and levels reach teachers through the env's PolicyContext, so Tetris can.)
    with pytest.raises(ConfigError, match="cannot be replayed"):
        collect_demonstrations("cluster_envs/MoldableScheduling-v0", {}, "fifo-spread", 2, 0, 0.9)


def test_a_masked_discrete_env_is_cloned_with_its_masks() -> None:
    """JobPlacement + MaskablePPO: the masks reach evaluate_actions; first-fit is learnable."""
    from sb3_contrib import MaskablePPO

    set_deterministic()
    kwargs = {"preset": "toy"}
    demos = collect_demonstrations("cluster_envs/JobPlacement-v0", kwargs, "fifo", 5, 0, 0.99)
    assert demos.masks is not None
    env = gym.make("cluster_envs/JobPlacement-v0", **kwargs)
    model = MaskablePPO("MlpPolicy", env, seed=0, device="cpu")
    losses = pretrain(model, demos, PretrainSettings("fifo", epochs=50, batch_size=32), seed=0)
    assert losses["teacher_agreement"] > 0.9


def test_dagger_keeps_only_labels_the_mask_allows() -> None:
    """JobPlacement's heuristics follow a per-job plan; after the agent's own steps a
    planned node may be full. Such labels are dropped and counted, never trained on."""
    from sb3_contrib import MaskablePPO

    from agents.imitation import _allowed

    env = gym.make("cluster_envs/JobPlacement-v0")
    student = MaskablePPO("MlpPolicy", env, seed=0, device="cpu")
    demos = collect_demonstrations(
        "cluster_envs/JobPlacement-v0", {}, "fifo", 3, 0, 0.99, student=student
    )
    assert demos.masks is not None and len(demos) == len(demos.returns)
    assert all(
        _allowed(env.action_space, a, m) for a, m in zip(demos.actions, demos.masks, strict=True)
    )
    assert demos.num_dropped > 0  # the case exists: an untrained agent strays from plans
