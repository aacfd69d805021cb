"""The step-path caches (issue 11) never change what an env shows.

Every encoder, mask and reward cache is tied to the simulator's ``state_version`` (and
to the simulator object): at every step of masked-random episodes, an env copy whose
caches are all dropped must compute exactly the observation, mask and reward terms the
cached env returned, and deep copies and pickles taken mid-episode must continue
exactly like the original.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.envs.base import ClusterEnvBase

CASES = [
    (f"cluster_envs/{name}", obs)
    for name in (
        "MoldableScheduling-v0",
        "MetisAllocation-v0",
        "MetisAllocationDiscrete-v0",
        "JobPlacement-v0",
    )
    for obs in ("default", "scale_free")
] + [
    (f"cluster_envs/{name}", "scale_free_hints")
    for name in ("MoldableScheduling-v0", "JobPlacement-v0")
]


def _uncached(env: ClusterEnvBase) -> Any:
    """A deep copy of ``env`` with every step-path cache forgotten."""
    fresh: Any = copy.deepcopy(env)
    encoder = fresh.encoder
    if hasattr(fresh, "_tracker"):  # Metis: rows, tau, rates, reward terms
        encoder.reset(fresh.episode_seed)
        fresh._tracker._terms_version = -1
        fresh._limits_key = None  # Discrete: max GPUs per slot
    elif hasattr(fresh, "_window_version"):  # Moldable: window, mask, static slots
        encoder.reset()
        fresh._window_version = fresh._mask_version = -1
    else:  # JobPlacement: the tentative-independent part
        for enc in (encoder, getattr(encoder, "default", None)):
            if enc is not None:
                enc._sim = None
    return fresh


def _action(env: gym.Env, info: dict, rng: np.random.Generator) -> Any:
    if isinstance(env.action_space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))
    return env.action_space.sample()


@pytest.mark.parametrize(("env_id", "observation"), CASES)
def test_caches_match_a_fresh_computation(env_id: str, observation: str) -> None:
    env: Any = gym.make(env_id, preset="toy", observation=observation).unwrapped
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=2)
    checked = 0
    for _ in range(80):
        obs, _, terminated, truncated, info = env.step(_action(env, info, rng))
        if terminated or truncated:
            break
        fresh = _uncached(env)
        assert fresh._get_obs().tobytes() == obs.tobytes(), checked
        assert np.array_equal(fresh.action_masks(), info["action_mask"]), checked
        if hasattr(env, "_tracker"):
            assert fresh._tracker.reward_terms() == env._tracker.reward_terms()
        checked += 1
    assert checked > 10


@pytest.mark.parametrize(("env_id", "observation"), CASES)
def test_copies_taken_mid_episode_continue_exactly(env_id: str, observation: str) -> None:
    env = gym.make(env_id, preset="toy", observation=observation).unwrapped
    env.action_space.seed(1)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=5)
    for _ in range(10):
        obs, _, terminated, truncated, info = env.step(_action(env, info, rng))
        assert not (terminated or truncated)
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    actions, outs = [], []
    for _ in range(40):
        action = _action(env, info, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        outs.append((obs.tobytes(), reward))
        if terminated or truncated:
            break
    for clone in copies:
        got = [clone.step(a)[:2] for a in actions]
        assert [(o.tobytes(), r) for o, r in got] == outs
