"""MoldableScheduling's heuristic hints (``observation="scale_free_hints"``, issue 13)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from cluster_envs.envs.moldable_hints import GLOBAL_FIELDS, HINT_POLICIES, slot_fields
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError

MOLDABLE = "cluster_envs/MoldableScheduling-v0"
#: A 16 x 4 T4 mixed workload, a small 16-GPU cluster, an 8-GPU-node trace family and the
#: default preset (its own cluster and levels).
SETTINGS: list[dict[str, Any]] = [
    {"family": "mixed", "split": "train", "num_jobs": 25},
    {"family": "synthetic-16", "split": "validation", "num_jobs": 25},
    {"family": "lublin-256", "split": "train", "num_jobs": 25},
    {"preset": "toy"},
]


class FollowHint:
    """Plays the action heuristic ``name``'s hint fields mark."""

    def __init__(self, name: str) -> None:
        self.index, self.name = HINT_POLICIES.index(name), f"follow {name}"
        self.followed = 0

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> int:
        base: Any = env.unwrapped
        layout = env.observation_space.layout  # type: ignore[attr-defined]
        slots, glob = layout.split(obs)
        p = len(base.levels)
        first = layout.slot_fields.index(slot_fields(base.levels)[self.index * p])
        picks = slots[:, first : first + p]
        wait = glob[layout.global_fields.index(GLOBAL_FIELDS[self.index])]
        assert picks.sum() + wait == 1.0  # exactly one hinted action
        self.followed += 1
        if wait:
            return int(base.wait_action)
        k, level = np.argwhere(picks)[0]
        action = int(k) * p + int(level)
        assert info["action_mask"][action]
        return action


@pytest.mark.parametrize("kwargs", SETTINGS)
@pytest.mark.parametrize("name", HINT_POLICIES)
def test_following_a_hint_plays_its_heuristic_exactly(kwargs: dict[str, Any], name: str) -> None:
    env = gym.make(MOLDABLE, observation="scale_free_hints", **kwargs)
    plain = gym.make(MOLDABLE, observation="scale_free", **kwargs)
    for seed in (3, 4):
        agent = FollowHint(name)
        hinted = rollout(env, agent, seed=seed)
        heuristic = rollout(plain, HeuristicAgent(plain.unwrapped.policy(name)), seed=seed)
        assert hinted.metrics == heuristic.metrics
        assert hinted.num_steps == heuristic.num_steps == agent.followed
        assert hinted.num_invalid_actions == 0


def test_heuristics_differ_so_the_hints_carry_information() -> None:
    env = gym.make(MOLDABLE, observation="scale_free_hints", family="mixed", split="train",
                   num_jobs=25)  # fmt: skip
    jcts = {n: rollout(env, FollowHint(n), seed=3).metrics["avg_jct_s"] for n in HINT_POLICIES}
    assert len(set(jcts.values())) >= 3


def test_hint_fields_follow_the_scale_free_fields() -> None:
    env = gym.make(MOLDABLE, preset="toy", observation="scale_free_hints")
    plain = gym.make(MOLDABLE, preset="toy", observation="scale_free")
    layout, base = env.observation_space.layout, plain.observation_space.layout
    levels = env.unwrapped.levels
    assert layout.slot_fields == (*base.slot_fields, *slot_fields(levels))
    assert layout.global_fields == (*base.global_fields, *GLOBAL_FIELDS)
    assert len(slot_fields(levels)) == len(HINT_POLICIES) * len(levels)
    names = env.unwrapped.encoder.describe()
    assert len(names) == layout.size
    for seed in (1, 2):
        obs, _ = env.reset(seed=seed)
        obs_plain, _ = plain.reset(seed=seed)
        slots, glob = layout.split(obs)
        slots_plain, glob_plain = base.split(obs_plain)
        np.testing.assert_array_equal(slots[:, : base.slot_size], slots_plain)
        np.testing.assert_array_equal(glob[: base.global_size], glob_plain)
        # every heuristic hints exactly one action: a start in a present slot, or wait
        hints = slots[:, base.slot_size :].reshape(layout.num_slots, len(HINT_POLICIES), -1)
        per_heuristic = hints.sum(axis=(0, 2)) + glob[base.global_size :]
        np.testing.assert_array_equal(per_heuristic, np.ones(len(HINT_POLICIES)))
        assert (hints.sum(axis=(1, 2)) <= len(HINT_POLICIES) * slots[:, 0]).all()


def test_hints_are_the_same_whatever_the_agent_played_before() -> None:
    """The hints at a state are each heuristic's action there, also off its own path:
    they equal a fresh env's hints after the same actions."""
    kwargs = {"family": "mixed", "split": "train", "num_jobs": 20,
              "observation": "scale_free_hints"}  # fmt: skip
    env = gym.make(MOLDABLE, **kwargs)
    obs, info = env.reset(seed=7)
    actions: list[int] = []
    for _ in range(12):
        mask = info["action_mask"]
        action = int(np.flatnonzero(mask)[len(actions) % mask.sum()])
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    again = gym.make(MOLDABLE, **kwargs)
    obs2, _ = again.reset(seed=7)
    for action in actions:
        obs2, *_ = again.step(action)
    np.testing.assert_array_equal(obs, obs2)


def test_an_encoder_without_hints_rejects_them() -> None:
    # MetisAllocation has hints too now (tests/test_metis_hints.py); an env that offers
    # none still gets the clear error.
    from types import SimpleNamespace

    from cluster_envs.envs.scale_free import make_encoder

    config = SimpleNamespace(observation="scale_free_hints")
    with pytest.raises(ConfigError, match="only on JobPlacement-v0, MoldableScheduling-v0"):
        make_encoder(config, lambda: None, lambda: None)
