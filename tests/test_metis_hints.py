"""MetisAllocation's scale-free action and hints (``action="hints"``, issue 13)."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from cluster_envs.envs.metis_hints import HINT_FIELDS, HINT_POLICIES, OPTIONS, PAUSE
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError, InvalidActionError

METIS = "cluster_envs/MetisAllocation-v0"
#: Two cluster shapes: the toy preset (16 GPUs, 8 slots) and a 64-GPU family.
SETTINGS: list[dict[str, Any]] = [
    {"preset": "toy"},
    {"family": "synthetic-64", "split": "validation", "num_jobs": 20},
]


class Follow:
    """Picks option ``index`` on every slot where it is available (else pause)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        mask = env.unwrapped.action_masks().reshape(-1, len(OPTIONS))  # type: ignore[attr-defined]
        return np.where(mask[:, self.index], self.index, PAUSE)


@pytest.mark.parametrize("kwargs", SETTINGS)
@pytest.mark.parametrize("name", HINT_POLICIES)
def test_following_an_option_plays_its_heuristic_exactly(kwargs: dict[str, Any], name: str) -> None:
    env = gym.make(METIS, action="hints", observation="scale_free_hints", **kwargs)
    plain = gym.make(METIS, observation="scale_free", **kwargs)
    for seed in (3, 4, 5):
        hinted = rollout(env, Follow(HINT_POLICIES.index(name)), seed=seed)
        heuristic = rollout(plain, HeuristicAgent(plain.unwrapped.policy(name)), seed=seed)
        assert hinted.metrics == heuristic.metrics
        assert hinted.num_steps == heuristic.num_steps
        assert hinted.num_invalid_actions == 0


def test_options_differ_so_the_action_carries_information() -> None:
    env = gym.make(METIS, action="hints", **SETTINGS[1])
    aucs = {
        o: rollout(env, Follow(i), seed=3).metrics["quality_auc"] for i, o in enumerate(OPTIONS)
    }
    assert len(set(aucs.values())) >= 4
    assert aucs["pause"] < min(aucs[h] for h in HINT_POLICIES)  # nothing ever runs


def test_action_space_and_masks_do_not_depend_on_the_cluster() -> None:
    small = gym.make(METIS, action="hints", preset="toy", num_slots=32)
    large = gym.make(METIS, action="hints", family="synthetic-256", split="train", num_jobs=10)
    assert small.action_space == large.action_space == gym.spaces.MultiDiscrete([6] * 32)
    _, info = small.reset(seed=0)
    mask = info["action_mask"].reshape(32, len(OPTIONS))
    slots = info["slot_job_ids"]
    for k, j in enumerate(slots):
        if j < 0:  # an empty slot: only pause
            assert mask[k].tolist() == [o == "pause" for o in OPTIONS]
        else:
            assert mask[k].all()


def test_bad_option_values_raise_and_masked_ones_are_flagged() -> None:
    env = gym.make(METIS, action="hints", preset="toy")
    _, info = env.reset(seed=0)
    good = np.full(8, PAUSE)
    for bad in (len(OPTIONS), -1):
        action = good.copy()
        action[2] = bad
        with pytest.raises(InvalidActionError, match="slot 2: option"):
            env.step(action)
    with pytest.raises(InvalidActionError):
        env.step(np.full(7, PAUSE))
    empty = [k for k, j in enumerate(info["slot_job_ids"]) if j < 0]
    assert empty
    action = good.copy()
    action[empty[0]] = 0  # follow slaq on an empty slot: masked
    _, _, _, _, info = env.step(action)
    assert info["invalid_action"] and info["num_invalid_actions"] == 1


def test_hint_fields_are_each_options_counts() -> None:
    env = gym.make(METIS, action="hints", observation="scale_free_hints", **SETTINGS[1])
    plain = gym.make(METIS, observation="scale_free", **SETTINGS[1])
    layout = env.observation_space.layout  # type: ignore[attr-defined]
    base = plain.observation_space.layout  # type: ignore[attr-defined]
    assert layout.slot_fields == (*base.slot_fields, *HINT_FIELDS)
    obs, info = env.reset(seed=1)
    ref, _ = plain.reset(seed=1)
    rows, glob = layout.split(obs)
    ref_rows, ref_glob = base.split(ref)
    np.testing.assert_array_equal(rows[:, : base.slot_size], ref_rows)
    np.testing.assert_array_equal(glob, ref_glob)
    sim, slots = env.unwrapped.sim, env.unwrapped.slots  # type: ignore[attr-defined]
    table = env.unwrapped.hints.table(sim, slots)  # type: ignore[attr-defined]
    for k, j in enumerate(slots):
        for i, o in enumerate(OPTIONS[:PAUSE]):
            share = rows[k, layout.slot_index(f"option={o}")]
            expected = 0.0 if j is None else table[i, k] / sim.jobs[j].max_gpus
            assert share == pytest.approx(expected, abs=1e-6)


def test_defaults_and_bad_settings() -> None:
    env = gym.make(METIS, preset="toy")
    assert env.action_space == gym.spaces.MultiDiscrete([17] * 8)
    assert env.unwrapped.hints is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="action must be one of"):
        gym.make(METIS, preset="toy", action="options")
    with pytest.raises(ConfigError, match="own action"):
        gym.make("cluster_envs/MetisAllocationDiscrete-v0", preset="toy", action="hints")


#: A non-default option list: the heuristics' order changed and slaq-window added.
CUSTOM = ["tiresias", "slaq-window", "slaq"]


def test_hint_policies_set_the_options_fields_and_actions() -> None:
    kwargs = SETTINGS[1]
    env = gym.make(
        METIS, action="hints", observation="scale_free_hints", hint_policies=CUSTOM, **kwargs
    )
    plain = gym.make(METIS, observation="scale_free", **kwargs)
    base: Any = env.unwrapped
    assert base.hints.options == (*CUSTOM, "keep", "pause")
    assert env.action_space == gym.spaces.MultiDiscrete([len(CUSTOM) + 2] * base.num_slots)
    fields = env.observation_space.layout.slot_fields  # type: ignore[attr-defined]
    assert [f for f in fields if f.startswith("option=")] == [
        f"option={o}" for o in (*CUSTOM, "keep")
    ]
    for i, name in enumerate(CUSTOM):  # option i follows the i-th listed heuristic exactly
        hinted = rollout(env, FollowIn(i, len(CUSTOM) + 2), seed=4)
        heuristic = rollout(plain, HeuristicAgent(plain.unwrapped.policy(name)), seed=4)  # type: ignore[attr-defined]
        assert hinted.metrics == heuristic.metrics, name
    with pytest.raises(InvalidActionError, match="4=pause"):
        env.reset(seed=0)
        env.step(np.full(base.num_slots, len(CUSTOM) + 2))


class FollowIn(Follow):
    """:class:`Follow` for ``num`` options (pause last)."""

    def __init__(self, index: int, num: int) -> None:
        super().__init__(index)
        self.num = num

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        mask = env.unwrapped.action_masks().reshape(-1, self.num)  # type: ignore[attr-defined]
        return np.where(mask[:, self.index], self.index, self.num - 1)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (["slaq", "nope"], "unknown policy 'nope'"),
        (["slaq", "slaq"], "repeat"),
        ([], "non-empty"),
        (["keep"], "fixed option"),
        ("slaq", "a list of names"),
        ([1, 2], "a list of names"),
    ],
)
def test_bad_hint_policies_fail_clearly(value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        gym.make(METIS, preset="toy", action="hints", hint_policies=value)


@pytest.mark.parametrize("kwargs", [*SETTINGS, {"family": "philly-vc", "split": "validation"}])
def test_the_table_holds_the_counts_each_heuristics_decision_carries_out(
    kwargs: dict[str, Any],
) -> None:
    """The table reads an allocation heuristic's projected counts without planning its
    placement; that must be what ``action_for`` reads back from its decision."""
    names = [*HINT_POLICIES, "slaq-window"]
    env = gym.make(METIS, action="hints", hint_policies=names, **kwargs)
    env.action_space.seed(0)
    env.reset(seed=2)
    base: Any = env.unwrapped
    for _ in range(25):
        table = base.hints.table(base.sim, base.slots)
        policies = base.hints._policies
        assert [p.name for p in policies] == names
        for i, policy in enumerate(policies):
            assert policy.settles_in_one_decision  # the table's short path serves each
            twin = copy.deepcopy(policy)  # decides as the table's call did, at this instant
            want = base.action_for(twin.decide(base.sim.view()))
            assert table[i].tolist() == want.tolist(), names[i]
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
