"""The starvation-switch teacher on MetisAllocation's options (agents/teacher.py, issue 13)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from agents.teacher import StarvationSwitch, make_teacher
from cluster_envs.envs.metis_hints import OPTIONS, PAUSE
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError

METIS = "cluster_envs/MetisAllocation-v0"
#: 16 GPUs, 8 slots: SLAQ leaves some slot jobs at 0 GPUs in these episodes.
KWARGS: dict[str, Any] = {"preset": "toy"}


class Checked:
    """Plays ``teacher`` and checks every action against the rule it states."""

    def __init__(self, teacher: StarvationSwitch) -> None:
        self.teacher, self.branches = teacher, {"slaq": 0, "tiresias": 0}

    def reset(self, seed: int | None) -> None:
        self.teacher.reset(seed)

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        base: Any = env.unwrapped
        action = self.teacher.act(env, obs, info)
        table = base.hints.table(base.sim, base.slots)
        present = np.array([j is not None for j in base.slots])
        name = "tiresias" if (present & (table[OPTIONS.index("slaq")] == 0)).any() else "slaq"
        mask = base.action_masks().reshape(-1, len(OPTIONS))
        want = np.where(mask[:, OPTIONS.index(name)], OPTIONS.index(name), PAUSE)
        np.testing.assert_array_equal(action, want)
        self.branches[name] += 1
        return action


def test_switch_plays_tiresias_exactly_when_slaq_would_starve_a_slot() -> None:
    env = gym.make(METIS, action="hints", observation="scale_free_hints", **KWARGS)
    checked = Checked(make_teacher("switch", METIS, env.unwrapped))
    aucs = {s: rollout(env, checked, seed=s).metrics["quality_auc"] for s in (3, 4)}
    assert min(checked.branches.values()) > 0  # both branches are taken
    for name in ("slaq", "tiresias"):  # and the switch is neither heuristic alone
        follow = make_teacher(name, METIS, env.unwrapped)
        assert {s: rollout(env, follow, seed=s).metrics["quality_auc"] for s in aucs} != aucs


def test_switch_names_are_checked() -> None:
    env = gym.make(METIS, action="hints", preset="toy")
    assert make_teacher("switch:fair,optimus", METIS, env.unwrapped).name == "switch:fair,optimus"
    with pytest.raises(ConfigError, match="nope"):
        make_teacher("switch:slaq,nope", METIS, env.unwrapped)
    with pytest.raises(ConfigError, match="action='hints'"):
        make_teacher("switch", METIS, gym.make(METIS, preset="toy").unwrapped)


def test_switch_window_heuristic_replays_the_switch_teacher() -> None:
    """The heuristic ``switch-window`` (baselines/switch.py) is the teacher
    ``switch:slaq-window,tiresias`` over the simulator's view: the same episodes, through
    the options and as a plain heuristic of the default action, taking both branches."""
    hints = ("slaq", "optimus", "tiresias", "fair", "slaq-window", "switch-window")
    env = gym.make(METIS, action="hints", observation="scale_free_hints", hint_policies=hints,
                   **KWARGS)  # fmt: skip
    teacher = make_teacher("switch:slaq-window,tiresias", METIS, env.unwrapped)
    option = make_teacher("switch-window", METIS, env.unwrapped)
    plain = gym.make(METIS, **KWARGS)
    policy = plain.unwrapped.policy("switch-window")
    for seed in (3, 4):
        want = rollout(env, teacher, seed=seed).metrics["quality_auc"]
        assert rollout(env, option, seed=seed).metrics["quality_auc"] == want
        assert rollout(plain, HeuristicAgent(policy), seed=seed).metrics["quality_auc"] == want
    assert set(teacher.choices) == set(policy.choices) == {"base", "other"}
    assert policy.name == "switch-window" and policy.base.name == "slaq-window"


@pytest.mark.parametrize("slice_s", [300.0, 600.0])
def test_switch_short_switches_only_where_a_rescale_is_a_large_share_of_the_slice(
    slice_s: float,
) -> None:
    """``switch-short`` (30 s rescales) is ``switch-window`` on 300 s slices (10 % >= 7 %)
    and ``slaq-window`` alone on 600 s slices (5 %); its teacher on the options, with the
    slice length in the observation, plays the same episodes."""
    kwargs = {**KWARGS, "time_slice_s": slice_s}
    plain = gym.make(METIS, **kwargs)
    hints = ("slaq", "optimus", "tiresias", "fair", "slaq-window")
    env = gym.make(METIS, action="hints", observation="scale_free_hints", hint_policies=hints,
                   observe_slice=True, **kwargs)  # fmt: skip
    teacher = make_teacher("switch-short:slaq-window,tiresias", METIS, env.unwrapped)
    assert teacher.name == "switch-short:slaq-window,tiresias"
    short = plain.unwrapped.policy("switch-short")
    auc = {}
    for name in ("switch-short", "switch-window", "slaq-window"):
        policy = short if name == "switch-short" else plain.unwrapped.policy(name)
        auc[name] = [rollout(plain, HeuristicAgent(policy), seed=s).metrics["quality_auc"]
                     for s in (3, 4)]  # fmt: skip
    assert [rollout(env, teacher, seed=s).metrics["quality_auc"] for s in (3, 4)] == auc[
        "switch-short"
    ]
    same, other = (
        ("switch-window", "slaq-window") if slice_s < 400 else ("slaq-window", "switch-window")
    )
    assert auc["switch-short"] == auc[same]
    assert auc["switch-short"] != auc[other]  # the rule matters on these episodes
    switched = "other" in short.choices
    assert switched == (slice_s < 400) and "base" in short.choices


def test_switch_short_share_is_checked() -> None:
    from baselines.switch import ShortSliceSwitch, switching
    from cluster_envs.policies.context import PolicyContext

    with pytest.raises(ConfigError, match="min_rescale_share"):
        ShortSliceSwitch(min_rescale_share=-0.1)
    assert switching(PolicyContext(time_slice_s=None, rescale_cost_s=30.0), 0.07)  # no slices
    assert not switching(PolicyContext(time_slice_s=600.0, rescale_cost_s=30.0), 0.07)
    assert switching(PolicyContext(time_slice_s=600.0, rescale_cost_s=30.0), None)
