"""JobPlacement's heuristic hints (``observation="scale_free_hints"``, issue 13)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from cluster_envs.envs.placement_hints import HINT_FIELDS, HINT_RULES
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.envs.scale_free import ScaleFreePlacementEncoder
from cluster_envs.sim.engine import Simulator

PLACEMENT = "cluster_envs/JobPlacement-v0"
#: Each hint field and the heuristic whose placements it follows.
HEURISTIC_OF = {"next=first_fit": "fifo", "next=best_fit": "fifo-best-fit",
                "next=spread": "fifo-spread"}  # fmt: skip
#: A homogeneous 16-node cluster, a 4-node one and the heterogeneous default preset.
SETTINGS: list[dict[str, Any]] = [
    {"family": "mixed", "split": "train", "num_jobs": 15},
    {"family": "synthetic-16", "split": "validation", "num_jobs": 15},
    {"preset": "toy"},
]


class FollowHint:
    """Places every GPU on the node a hint field marks."""

    def __init__(self, field: str) -> None:
        self.field, self.name = field, f"follow {field}"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> int:
        layout = env.observation_space.layout  # type: ignore[attr-defined]
        slots, _ = layout.split(obs)
        column = slots[:, layout.slot_fields.index(self.field)]
        assert column.sum() == 1.0  # exactly one next node per rule
        node = int(np.argmax(column))
        assert info["action_mask"][node]  # and it has a free GPU
        return node


@pytest.mark.parametrize("kwargs", SETTINGS)
@pytest.mark.parametrize("field", HINT_FIELDS)
def test_following_a_hint_plays_its_heuristic_exactly(kwargs: dict[str, Any], field: str) -> None:
    env = gym.make(PLACEMENT, observation="scale_free_hints", **kwargs)
    for seed in (3, 4):
        hinted = rollout(env, FollowHint(field), seed=seed)
        heuristic = rollout(env, HeuristicAgent(HEURISTIC_OF[field]), seed=seed)
        assert hinted.metrics == heuristic.metrics
        assert hinted.num_invalid_actions == 0


def test_hint_fields_follow_the_scale_free_node_fields() -> None:
    env = gym.make(PLACEMENT, preset="toy", observation="scale_free_hints")
    plain = gym.make(PLACEMENT, preset="toy", observation="scale_free")
    layout, base = env.observation_space.layout, plain.observation_space.layout
    assert layout.slot_fields == (*base.slot_fields, *HINT_FIELDS)
    assert layout.global_fields == base.global_fields
    assert len(HINT_FIELDS) == len(HINT_RULES) == 3
    names = env.unwrapped.encoder.describe()
    assert "node0.next=first_fit" in names and len(names) == layout.size
    obs, _ = env.reset(seed=1)
    obs_plain, _ = plain.reset(seed=1)
    slots, glob = layout.split(obs)
    slots_plain, glob_plain = base.split(obs_plain)
    np.testing.assert_array_equal(slots[:, : base.slot_size], slots_plain)
    np.testing.assert_array_equal(glob, glob_plain)


def test_off_plan_hints_continue_from_the_gpus_left() -> None:
    """After a GPU goes where no rule put it, each rule's hint is its placement of the
    GPUs left, on the GPUs still free: a feasible node, exactly one per rule."""
    env = gym.make(PLACEMENT, preset="toy", observation="scale_free_hints")
    base = env.unwrapped
    layout = env.observation_space.layout
    first = layout.slot_fields.index(HINT_FIELDS[0])
    checked = 0
    obs, info = env.reset(seed=5)
    for _ in range(200):
        slots, _ = layout.split(obs)
        hints = slots[:, first:]
        assert (hints.sum(axis=0) == 1.0).all()
        assert info["action_mask"][np.argmax(hints, axis=0)].all()
        off = np.flatnonzero(info["action_mask"] & (hints.sum(axis=1) == 0))
        checked += int(base._tentative.sum() > 0)
        action = int(off[-1]) if off.size else int(np.flatnonzero(info["action_mask"])[-1])
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert checked > 5  # hints were read in the middle of placements


def test_hints_do_not_depend_on_the_encoder_cache() -> None:
    env = gym.make(PLACEMENT, preset="toy", observation="scale_free_hints")
    base = env.unwrapped
    cached, checked = base.encoder.encode, []

    def compare(sim: Simulator, head: int | None, tentative: np.ndarray) -> np.ndarray:
        obs = cached(sim, head, tentative)
        fresh = ScaleFreePlacementEncoder(base.cluster, hints=True)  # mid-placement too
        np.testing.assert_array_equal(obs, fresh.encode(sim, head, tentative))
        checked.append(int(tentative.sum()) > 0)
        return obs

    base.encoder.encode = compare
    env.reset(seed=2)
    for _ in range(80):
        mask = base.action_masks()
        _, _, terminated, truncated, _ = env.step(
            int(np.flatnonzero(mask)[len(checked) % mask.sum()])
        )
        if terminated or truncated:
            break
    assert sum(checked) > 5


def test_other_envs_have_their_own_hints() -> None:
    """MoldableScheduling and MetisAllocation have hints of their own, not these node fields
    (tests/test_moldable_hints.py, tests/test_metis_hints.py)."""
    env = gym.make("cluster_envs/MetisAllocation-v0", preset="toy", observation="scale_free_hints")
    fields = env.observation_space.layout.slot_fields  # type: ignore[attr-defined]
    assert not any(f.startswith("next=") for f in fields)
    assert any(f.startswith("option=") for f in fields)
