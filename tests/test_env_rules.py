"""The same action and life-cycle rules in every env, through ``gym.make`` (issue 15).

Before ``reset`` every call names the fix; after the episode ended a step returns
terminated again; integral actions of any numpy shape are accepted, fractions and NaN
raise one clear error; kwargs that can never work fail when the env is made.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the env ids)
from cluster_envs.envs.registration import env_ids
from cluster_envs.errors import ClusterEnvsError, ConfigError

IDS = env_ids()


def _first_allowed(env: gym.Env) -> Any:
    mask = np.asarray(env.unwrapped.action_masks(), dtype=bool)
    space = env.action_space
    if isinstance(space, gym.spaces.MultiDiscrete):
        rows = mask.reshape(len(space.nvec), int(space.nvec[0]))
        return np.array([int(np.flatnonzero(r)[-1]) for r in rows], dtype=np.int64)
    return int(np.flatnonzero(mask)[0])


@pytest.mark.parametrize("env_id", IDS)
def test_calls_before_reset_name_the_fix(env_id: str) -> None:
    env = gym.make(env_id, preset="toy", render_mode="ansi")
    for call in (lambda: env.step(env.action_space.sample()),
                 lambda: env.unwrapped.action_masks(), env.render):  # fmt: skip
        # gym.make's order-enforcing wrapper answers step/render itself; the env the rest.
        with pytest.raises((ClusterEnvsError, gym.error.ResetNeeded), match="reset"):
            call()
    with pytest.raises(ClusterEnvsError, match="reset"):
        env.unwrapped.step(env.action_space.sample())


@pytest.mark.parametrize("env_id", IDS)
def test_step_after_the_end_returns_terminated_again(env_id: str) -> None:
    env = gym.make(env_id, preset="toy")
    env.reset(seed=1)
    for _ in range(20_000):
        obs, reward, terminated, truncated, info = env.step(_first_allowed(env))
        if terminated or truncated:
            break
    else:
        pytest.fail("the toy episode did not end")
    again = env.step(_first_allowed(env))
    assert again[2:4] == (terminated, truncated)
    assert again[1] == 0.0
    assert np.array_equal(again[0], obs)


@pytest.mark.parametrize("env_id", IDS)
def test_integral_actions_of_any_shape_are_the_same_action(env_id: str) -> None:
    results = []
    for form in ("int", "numpy"):
        env = gym.make(env_id, preset="toy")
        env.reset(seed=2)
        action = _first_allowed(env)
        if form == "numpy":
            action = (
                np.asarray(action, dtype=np.float64)
                if isinstance(action, np.ndarray)
                else np.array([action], dtype=np.int64)
            )
        obs, reward, *_ = env.step(action)
        results.append((obs, reward))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("bad", [2.7, float("nan"), "1"])
def test_fractional_or_nan_actions_raise_one_clear_error(env_id: str, bad: Any) -> None:
    env = gym.make(env_id, preset="toy")
    env.reset(seed=0)
    space = env.action_space
    action = np.full(space.shape, bad, dtype=object) if space.shape else bad
    with pytest.raises(ValueError, match="action") as info:
        env.step(action)
    assert isinstance(info.value, ClusterEnvsError)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("cluster_envs/MoldableScheduling-v0", {"num_jobs": 2.5}, "num_jobs"),
        ("cluster_envs/MoldableScheduling-v0", {"preset": "toy", "levels": [32]}, "level"),
        ("cluster_envs/MetisAllocation-v0", {"num_slots": 0}, "num_slots"),
        ("cluster_envs/JobPlacement-v0", {"reward_scale_s": float("nan")}, "reward_scale_s"),
        ("cluster_envs/MoldableScheduling-v0", {"horizon_s": 10.0, "sim": {"horizon_s": 20.0}},
         "horizon"),
    ],
)  # fmt: skip
def test_impossible_kwargs_fail_when_the_env_is_made(
    env_id: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        gym.make(env_id, **kwargs)
