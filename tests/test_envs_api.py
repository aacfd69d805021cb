"""Registry-wide env API tests: checkers, determinism, masks, pickling, render, kwargs."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.envs.registration import ENV_SPECS, env_ids

#: Small, fast variants for every id (the default kwargs are exercised by check_env too).
FAST_KWARGS = {"preset": "toy"}
IDS = env_ids()


def _make(env_id: str, **kwargs: object) -> gym.Env:
    return gym.make(env_id, **{**FAST_KWARGS, **kwargs})


def _masked_action(env: gym.Env, info: dict, rng: np.random.Generator) -> object:
    mask = info.get("action_mask")
    if mask is not None and isinstance(env.action_space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    return env.action_space.sample()


def _trajectory(env: gym.Env, seed: int, steps: int = 400) -> list[tuple]:
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    out = [(obs.tobytes(), 0.0, False, False)]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(_masked_action(env, info, rng))
        out.append((obs.tobytes(), float(reward), terminated, truncated))
        if terminated or truncated:
            break
    return out


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_and_sb3_checkers_pass(env_id: str) -> None:
    env = _make(env_id)
    gym_check_env(env.unwrapped, skip_render_check=False)
    sb3_check_env(_make(env_id).unwrapped, warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_default_kwargs_construct_and_reset(env_id: str) -> None:
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", IDS)
def test_same_seed_same_trajectory(env_id: str) -> None:
    a = _trajectory(_make(env_id), seed=7)
    b = _trajectory(_make(env_id), seed=7)
    c = _trajectory(_make(env_id), seed=8)
    assert a == b
    assert a != c


@pytest.mark.parametrize("env_id", IDS)
def test_masks_always_allow_an_action_and_obs_stay_in_space(env_id: str) -> None:
    env = _make(env_id)
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            assert env.observation_space.contains(obs)
            if "action_mask" in info:
                assert info["action_mask"].any()
                np.testing.assert_array_equal(info["action_mask"], env.unwrapped.action_masks())
            obs, reward, terminated, truncated, info = env.step(_masked_action(env, info, rng))
            assert np.isfinite(reward)
            done = terminated or truncated
        metrics = info["episode_metrics"]
        assert metrics["num_finished"] == metrics["num_jobs"] or truncated


@pytest.mark.parametrize("env_id", IDS)
def test_pickled_env_continues_identically(env_id: str) -> None:
    env = _make(env_id)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3)
    for _ in range(5):
        obs, _, terminated, truncated, info = env.step(_masked_action(env, info, rng))
        if terminated or truncated:
            break
    clone = pickle.loads(pickle.dumps(env))
    action = _masked_action(env, info, rng)
    first = env.step(action)
    second = clone.step(action)
    np.testing.assert_array_equal(first[0], second[0])
    assert first[1:4] == second[1:4]


@pytest.mark.parametrize("env_id", IDS)
def test_registered_kwargs_are_json_serialisable(env_id: str) -> None:
    spec = gym.spec(env_id)
    assert json.loads(json.dumps(spec.kwargs)) == spec.kwargs
    assert env_id in ENV_SPECS


@pytest.mark.parametrize("env_id", IDS)
def test_render_modes(env_id: str) -> None:
    text_env = _make(env_id, render_mode="ansi")
    text_env.reset(seed=0)
    assert "free" in text_env.render()
    pic_env = _make(env_id, render_mode="rgb_array")
    _, info = pic_env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        _, _, terminated, truncated, info = pic_env.step(_masked_action(pic_env, info, rng))
        if terminated or truncated:
            break
    frame = pic_env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) >= 2  # busy and free GPUs drawn


@pytest.mark.parametrize("env_id", IDS)
def test_unknown_kwarg_is_rejected_with_suggestion(env_id: str) -> None:
    with pytest.raises(ValueError, match="unknown .*'num_job'.*did you mean 'num_jobs'"):
        gym.make(env_id, num_job=3)
    with pytest.raises(ValueError, match="unknown preset"):
        gym.make(env_id, preset="nope")
