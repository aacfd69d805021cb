"""agents.slot_policy: shared per-slot weights, permutation equivariance, training, reload."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import PPO

import cluster_envs  # noqa: F401
from agents.slot_policy import SlotPolicy, count_parameters
from agents.train import train
from cluster_envs.errors import ConfigError

ENV = "cluster_envs/MetisAllocation-v0"
GLOBAL = 7  # MetisEncoder's cluster fields


def _model(hidden: int = 32) -> tuple[PPO, gym.Env]:
    env = gym.make(ENV, preset="toy")
    kwargs = {"global_features": GLOBAL, "hidden": hidden}
    return PPO(SlotPolicy, env, seed=0, device="cpu", policy_kwargs=kwargs), env


def test_permuting_slots_permutes_the_action_distribution() -> None:
    model, env = _model()
    base = env.unwrapped
    obs, _ = env.reset(seed=4)
    j, f = base.num_slots, base.encoder.size - GLOBAL
    width = f // j
    perm = np.random.default_rng(0).permutation(j)
    slots = obs[: j * width].reshape(j, width)
    permuted = np.concatenate([slots[perm].reshape(-1), obs[j * width :]])
    policy = model.policy

    def probs(x: np.ndarray) -> torch.Tensor:  # (the distribution object is reused)
        dist = policy.get_distribution(torch.as_tensor(x[None]))
        return torch.stack([d.probs[0] for d in dist.distribution])

    with torch.no_grad():
        p1, p2 = probs(obs), probs(permuted)
        v1 = policy.predict_values(torch.as_tensor(obs[None]))
        v2 = policy.predict_values(torch.as_tensor(permuted[None]))
    assert torch.allclose(p1[perm], p2, atol=1e-6)
    assert torch.allclose(v1, v2, atol=1e-6)
    # ... and the occupied slots do not all get the same distribution.
    assert not torch.allclose(p1[0], p1[1], atol=1e-4)


def test_parameters_do_not_grow_with_the_slots() -> None:
    small = PPO(SlotPolicy, gym.make(ENV, preset="toy"), device="cpu",
                policy_kwargs={"global_features": GLOBAL, "hidden": 32})  # fmt: skip
    large = PPO(SlotPolicy, gym.make(ENV, preset="toy", num_slots=32), device="cpu",
                policy_kwargs={"global_features": GLOBAL, "hidden": 32})  # fmt: skip
    assert count_parameters(small.policy) == count_parameters(large.policy)


def test_the_split_comes_from_the_observation_layout() -> None:
    env = gym.make(ENV, preset="toy")
    model = PPO(SlotPolicy, env, device="cpu", policy_kwargs={"hidden": 16})
    layout = env.unwrapped.encoder.layout
    assert model.policy.global_features == layout.global_size == GLOBAL
    assert model.policy.slot_features == layout.slot_size
    assert model.policy.mask_index == layout.slot_index("present")


def test_bad_layouts_are_refused_by_name() -> None:
    env = gym.make(ENV, preset="toy")
    with pytest.raises(ConfigError, match="global_features=6 but the observation layout has 7"):
        PPO(SlotPolicy, env, device="cpu", policy_kwargs={"global_features": 6})
    plain = spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
    with pytest.raises(ConfigError, match="carries no layout"):
        SlotPolicy(plain, env.action_space, lambda _: 1e-3)
    with pytest.raises(ConfigError, match="do not split into 8 slots"):
        SlotPolicy(plain, env.action_space, lambda _: 1e-3, global_features=6)
    with pytest.raises(ConfigError, match="MultiDiscrete"):
        PPO(SlotPolicy, gym.make("cluster_envs/MetisAllocationDiscrete-v0", preset="toy"),
            device="cpu", policy_kwargs={"global_features": GLOBAL})  # fmt: skip


def test_trains_from_the_yaml_and_reloads(tmp_path: Path) -> None:
    hyper = {"policy": "SlotPolicy", "n_steps": 64, "batch_size": 64,
             "policy_kwargs": {"hidden": 16}}  # fmt: skip
    result = train("ppo", ENV, tmp_path / "run", timesteps=128, env_kwargs={"preset": "toy"},
                   hyperparams=hyper, n_envs=1, eval_freq=0, progress_bar=False)  # fmt: skip
    model = PPO.load(result.last_model, device="cpu")
    assert isinstance(model.policy, SlotPolicy) and model.policy.hidden == 16
    with pytest.raises(ConfigError, match="does not work with dqn"):
        train("dqn", "cluster_envs/MetisAllocationDiscrete-v0", tmp_path / "dqn", timesteps=10,
              env_kwargs={"preset": "toy"}, hyperparams={"policy": "SlotPolicy"},
              eval_freq=0, progress_bar=False)  # fmt: skip
