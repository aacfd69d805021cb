"""Observation layouts: every index of every env named once, slices, ablation masks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.envs.layout import GLOBAL_BLOCK, SLOTS_BLOCK, LayoutBox, ObsLayout
from cluster_envs.envs.metis_features import (
    CURVE_DERIVED,
    CURVE_DERIVED_CLUSTER,
    JOB_FEATURE_ABLATIONS,
    ORACLE_REPLACED,
)
from cluster_envs.errors import ConfigError

ENVS = {
    "cluster_envs/MoldableScheduling-v0": {"preset": "toy"},
    "cluster_envs/MetisAllocation-v0": {"preset": "toy"},
    "cluster_envs/MetisAllocationDiscrete-v0": {"preset": "toy"},
    "cluster_envs/JobPlacement-v0": {"preset": "toy"},
}
METIS = "cluster_envs/MetisAllocation-v0"


@pytest.mark.parametrize("env_id", ENVS)
def test_every_index_is_described_once(env_id: str) -> None:
    env = gym.make(env_id, **ENVS[env_id])
    obs, _ = env.reset(seed=0)
    encoder = env.unwrapped.encoder
    names = encoder.describe()
    assert len(names) == obs.shape[0] == env.observation_space.shape[0] == len(set(names))
    assert isinstance(env.observation_space, LayoutBox)
    assert env.observation_space.layout is encoder.layout
    assert names == encoder.layout.describe()


@pytest.mark.parametrize("env_id", ENVS)
def test_slices_cover_the_vector_exactly_once(env_id: str) -> None:
    layout = gym.make(env_id, **ENVS[env_id]).unwrapped.encoder.layout
    hits = np.zeros(layout.size, dtype=np.int64)
    for name in layout.field_names():
        np.add.at(hits, np.arange(layout.size)[layout.slices(name)], 1)
    assert (hits == 1).all()
    blocks = np.zeros(layout.size, dtype=np.int64)
    for name in (SLOTS_BLOCK, GLOBAL_BLOCK):
        blocks[layout.slices(name)] += 1
    assert (blocks == 1).all()
    names = layout.describe()
    for name in layout.slot_fields:  # a slot field's slice names that field in every slot
        hit = [names[i] for i in np.arange(layout.size)[layout.slices(name)]]
        assert hit == [f"{layout.slot_prefix}{k}.{name}" for k in range(layout.num_slots)]


def test_layout_split_and_errors() -> None:
    layout = ObsLayout(("present", "x"), 3, ("g",))
    obs = np.arange(layout.size, dtype=np.float32)
    slots, glob = layout.split(obs)
    assert slots.shape == (3, 2) and slots[2, 1] == 5.0 and glob.tolist() == [6.0]
    np.testing.assert_array_equal(obs[layout.slices("present")], [0.0, 2.0, 4.0])
    with pytest.raises(ConfigError, match="did you mean 'present'"):
        layout.slices("presnt")
    with pytest.raises(ConfigError, match="duplicate"):
        ObsLayout(("a", "a"), 1, ())
    with pytest.raises(ConfigError, match="mask_field"):
        ObsLayout(("a",), 1, (), mask_field="present")


def test_the_no_curve_mask_zeroes_exactly_the_declared_fields() -> None:
    layout = gym.make(METIS, preset="toy").unwrapped.encoder.layout
    keep = layout.slot_mask(JOB_FEATURE_ABLATIONS["no_curve"][1])
    zeroed = [layout.slot_fields[i] for i in np.flatnonzero(keep == 0)]
    assert sorted(zeroed) == sorted(CURVE_DERIVED)
    assert layout.slot_mask(JOB_FEATURE_ABLATIONS["fitted"][1]).all()
    assert layout.slot_mask(JOB_FEATURE_ABLATIONS["oracle"][1]).all()


def _trajectory(job_features: str, slices: int = 6) -> list[np.ndarray]:
    env = gym.make(METIS, preset="toy", job_features=job_features)
    out = [env.reset(seed=3)[0]]
    action = np.full(env.action_space.shape, 2, dtype=np.int64)
    for _ in range(slices):
        out.append(env.step(action)[0])
    return out


@pytest.mark.parametrize("ablation", ["no_curve", "oracle"])
def test_ablations_change_only_their_declared_fields(ablation: str) -> None:
    layout = gym.make(METIS, preset="toy").unwrapped.encoder.layout
    replaced, zeroed = JOB_FEATURE_ABLATIONS[ablation]
    declared = layout.indices([*replaced, *zeroed, *CURVE_DERIVED_CLUSTER])
    other = np.setdiff1d(np.arange(layout.size), declared)
    changed = np.zeros(layout.size, dtype=bool)
    for fitted, ablated in zip(_trajectory("fitted"), _trajectory(ablation), strict=True):
        np.testing.assert_array_equal(ablated[other], fitted[other])  # same dynamics
        if zeroed:
            assert not ablated[layout.indices(zeroed)].any()
        changed |= ablated != fitted
    assert changed[declared].any()
    if ablation == "oracle":
        assert set(ORACLE_REPLACED) < set(CURVE_DERIVED)
