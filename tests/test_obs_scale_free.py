"""Scale-free observations: the same situation at twice the scale gives the same numbers.

"Twice the scale" is built exactly: the cluster with every node group twice (node ``i``
mirrored by node ``i + N``), every job twice (job ``j`` becomes the twins ``2j`` and
``2j + 1``, same submission time), every allocation mirrored, and the encoder's window /
slot count doubled. Loss observations are noise-free so the twins' estimates agree, and
the twins' throughput profiles (measured with per-job-id noise) are set equal: the
scheduler knows the same about each twin. Then every global field is the same, and each
slot (node) row of the small observation appears twice in the large one.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.config import ClusterConfig
from cluster_envs.envs.features import MoldableEncoder
from cluster_envs.envs.metis_features import MetisEncoder
from cluster_envs.envs.metis_scale_free import ScaleFreeMetisEncoder
from cluster_envs.envs.placement_features import PlacementEncoder
from cluster_envs.envs.scale_free import (
    DEFAULT_TIME_SCALE_S,
    ScaleFreeMoldableEncoder,
    ScaleFreePlacementEncoder,
    median_runtime_s,
)
from cluster_envs.errors import ConfigError
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision, make_placement

MOLDABLE = "cluster_envs/MoldableScheduling-v0"
METIS = "cluster_envs/MetisAllocation-v0"
PLACEMENT = "cluster_envs/JobPlacement-v0"
#: Moldable window of the small situation (its queue is longer).
WINDOW = 4


def _first_fit(free: np.ndarray, gpus: int) -> list[tuple[int, int]] | None:
    """Packed first-fit: fill the nodes in id order (None if it does not fit)."""
    out, left = [], gpus
    for node, f in enumerate(free):
        take = min(int(f), left)
        if take:
            out.append((node, take))
            left -= take
    return out if left == 0 else None


def _situations(env_id: str, seed: int = 0) -> tuple[gym.Env, Simulator, Simulator]:
    """A mid-episode state (some jobs running, some queued) and its exact double."""
    env = gym.make(env_id, preset="toy")
    env.reset(seed=seed)
    base = env.unwrapped
    jobs, cluster = base.sim.jobs, base.cluster
    config = dataclasses.replace(base.sim_config, loss_noise_std=0.0)
    twins = [dataclasses.replace(j, job_id=2 * j.job_id + t) for j in jobs for t in (0, 1)]
    big = ClusterConfig(f"{cluster.name}-x2", cluster.node_groups * 2, cluster.inter_node_gbps)
    small_sim = Simulator(jobs, cluster, config, seed)
    big_sim = Simulator(twins, big, config, seed)
    n_nodes = cluster.num_nodes
    times = sorted(j.submit_time_s for j in jobs)
    for t in (times[len(times) // 4], times[len(times) // 2]):
        small_sim.advance_to(t)
        big_sim.advance_to(t)
        for j in list(small_sim.queue):
            place = _first_fit(small_sim.inventory.free, jobs[j].num_gpus)
            if place is None:
                continue
            mirrored = [(node + n_nodes, g) for node, g in place]
            small_sim.apply(Decision((Allocate(j, make_placement(place)),)))
            big_sim.apply(Decision((Allocate(2 * j, make_placement(place)),
                                    Allocate(2 * j + 1, make_placement(mirrored)))))  # fmt: skip
    end = times[len(times) // 2] + 1800.0
    small_sim.advance_to(end)
    big_sim.advance_to(end)
    assert small_sim.active and small_sim.queue  # a situation with both
    assert len(big_sim.active) == 2 * len(small_sim.active)
    return env, small_sim, big_sim


def _assert_twice(small: np.ndarray, big: np.ndarray, n_small: int, slot_size: int) -> None:
    """Global blocks equal; big slot ``2k`` and ``2k + 1`` equal small slot ``k``."""
    cut_s, cut_b = n_small * slot_size, 2 * n_small * slot_size
    np.testing.assert_allclose(big[cut_b:], small[cut_s:], atol=1e-6)
    rows_s = small[:cut_s].reshape(n_small, slot_size)
    rows_b = big[:cut_b].reshape(2 * n_small, slot_size)
    np.testing.assert_allclose(rows_b[0::2], rows_s, atol=1e-6)
    np.testing.assert_allclose(rows_b[1::2], rows_s, atol=1e-6)


def _moldable_obs(cls: type, env: gym.Env, sim: Simulator, scale: int) -> np.ndarray:
    config = env.unwrapped.config
    config = dataclasses.replace(config, window=scale * WINDOW)
    encoder = cls(config, sim.cluster)
    window = list(sim.queue)[: config.window]
    p = len(config.levels)
    mask = np.array([lv <= sim.jobs[j].max_gpus for j in window for lv in config.levels])
    return encoder.encode(sim, window, np.resize(mask, config.window * p).astype(np.float32))


def test_moldable_twice_the_cluster_and_load_gives_the_same_observation() -> None:
    env, small, big = _situations(MOLDABLE)
    window = WINDOW
    assert len(small.queue) > window  # the window is full and jobs wait beyond it
    obs_s = _moldable_obs(ScaleFreeMoldableEncoder, env, small, 1)
    obs_b = _moldable_obs(ScaleFreeMoldableEncoder, env, big, 2)
    size = ScaleFreeMoldableEncoder(env.unwrapped.config, small.cluster).layout.slot_size
    _assert_twice(obs_s, obs_b, window, size)
    default_s = _moldable_obs(MoldableEncoder, env, small, 1)
    default_b = _moldable_obs(MoldableEncoder, env, big, 2)
    cut = window * size
    assert np.abs(default_s[cut:] - default_b[2 * cut :]).max() > 1e-3  # the default is not


def _metis_obs(
    cls: type, env: gym.Env, sim: Simulator, scale: int, slice_s: float = 600.0
) -> tuple[np.ndarray, int]:
    base = env.unwrapped
    num_slots = scale * base.num_slots
    encoder = cls(num_slots, base.max_gpus, sim.cluster, slice_s)
    encoder.reset(base.episode_seed)
    ref = MetisEncoder(1, base.max_gpus, base.cluster, slice_s)
    ref.reset(base.episode_seed)
    for j in range(len(sim.jobs)):  # the twins' profiles: those of the small job
        encoder._profiles[j] = ref.profile(base.sim, j // scale)
    ids = sorted([*sim.queue, *sim.active])[:num_slots]
    slots = ids + [None] * (num_slots - len(ids))
    pending = np.array([sim.num_gpus_held[j] if j is not None else 0 for j in slots])
    return encoder.encode(sim, slots, pending), len(ids)


def test_metis_twice_the_cluster_and_load_gives_the_same_observation() -> None:
    env, small, big = _situations(METIS)
    obs_s, present = _metis_obs(ScaleFreeMetisEncoder, env, small, 1)
    obs_b, present_b = _metis_obs(ScaleFreeMetisEncoder, env, big, 2)
    assert present_b == 2 * present
    layout = env.unwrapped.encoder.layout
    _assert_twice(obs_s, obs_b, env.unwrapped.num_slots, layout.slot_size)


def test_metis_half_the_slice_gives_the_same_observation() -> None:
    env, small, _ = _situations(METIS)
    long_, _ = _metis_obs(ScaleFreeMetisEncoder, env, small, 1, slice_s=600.0)
    short, _ = _metis_obs(ScaleFreeMetisEncoder, env, small, 1, slice_s=300.0)
    np.testing.assert_array_equal(long_, short)
    gains = [i for i, n in enumerate(env.unwrapped.encoder.describe()) if "quality_gain@" in n]
    default_long, _ = _metis_obs(MetisEncoder, env, small, 1, slice_s=600.0)
    default_short, _ = _metis_obs(MetisEncoder, env, small, 1, slice_s=300.0)
    assert np.abs(default_long[gains] - default_short[gains]).max() > 1e-3


def test_placement_twice_the_cluster_and_load_gives_the_same_observation() -> None:
    env, small, big = _situations(PLACEMENT)
    head, n = next(iter(small.queue)), small.cluster.num_nodes
    none_s, none_b = np.zeros(n, dtype=np.int64), np.zeros(2 * n, dtype=np.int64)
    encoder = ScaleFreePlacementEncoder(small.cluster)
    obs_s = encoder.encode(small, head, none_s)
    obs_b = ScaleFreePlacementEncoder(big.cluster).encode(big, 2 * head, none_b)
    size = encoder.layout.slot_size
    np.testing.assert_allclose(obs_b[2 * n * size :], obs_s[n * size :], atol=1e-6)
    rows_s = obs_s[: n * size].reshape(n, size)
    rows_b = obs_b[: 2 * n * size].reshape(2 * n, size)
    np.testing.assert_allclose(rows_b[:n], rows_s, atol=1e-6)  # node i and its mirror i + N
    np.testing.assert_allclose(rows_b[n:], rows_s, atol=1e-6)
    default_s = PlacementEncoder(small.cluster).encode(small, head, none_s)
    default_b = PlacementEncoder(big.cluster).encode(big, 2 * head, none_b)
    assert np.abs(default_s[6 * n :] - default_b[12 * n :]).max() > 1e-3


@pytest.mark.parametrize("env_id", [MOLDABLE, METIS, PLACEMENT])
def test_scale_free_layouts_are_documented_sets(env_id: str) -> None:
    env = gym.make(env_id, preset="toy", observation="scale_free")
    obs, _ = env.reset(seed=0)
    layout = env.observation_space.layout
    names = env.unwrapped.encoder.describe()
    assert len(names) == len(set(names)) == obs.shape[0] == layout.size
    assert layout.slot_fields[0] == layout.mask_field == "present"  # the set's padding mask
    slots, glob = layout.split(obs)
    assert (
        "time_scale" in layout.global_fields and glob[layout.global_fields.index("time_scale")] > 0
    )
    assert set(np.unique(slots[:, 0])) <= {0.0, 1.0}
    assert env.observation_space.contains(obs)


def test_the_default_observation_is_unchanged_and_bad_names_fail() -> None:
    a = gym.make(METIS, preset="toy").reset(seed=4)[0]
    b = gym.make(METIS, preset="toy", observation="default").reset(seed=4)[0]
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ConfigError, match="did you mean 'scale_free'"):
        gym.make(PLACEMENT, preset="toy", observation="scalefree")


def test_time_scale_is_the_median_estimated_runtime() -> None:
    assert median_runtime_s(np.array([10.0, 30.0, 90.0]), np.array([1.0, 1.0, 0.0])) == 20.0
    assert median_runtime_s(np.zeros(0), np.zeros(0)) == DEFAULT_TIME_SCALE_S


def test_slot_policy_accepts_the_scale_free_metis_layout() -> None:
    from stable_baselines3 import PPO

    from agents.slot_policy import SlotPolicy

    env = gym.make(METIS, preset="toy", observation="scale_free")
    model = PPO(SlotPolicy, env, device="cpu", policy_kwargs={"hidden": 8})
    assert model.policy.global_features == env.observation_space.layout.global_size == 8
    action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
    assert env.action_space.contains(action)


def test_placement_caches_change_no_value() -> None:
    env = gym.make(PLACEMENT, preset="toy", observation="scale_free")
    base = env.unwrapped
    cached, checked = base.encoder.encode, []

    def compare(sim: Simulator, head: int | None, tentative: np.ndarray) -> np.ndarray:
        obs = cached(sim, head, tentative)
        fresh = ScaleFreePlacementEncoder(base.cluster)  # no cached rates or tau
        np.testing.assert_array_equal(obs, fresh.encode(sim, head, tentative))
        checked.append(head is not None)
        return obs

    base.encoder.encode = compare
    env.reset(seed=2)
    for _ in range(60):
        _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(base.action_masks())[-1]))
        if terminated or truncated:
            break
    assert sum(checked) > 30
