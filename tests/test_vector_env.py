"""Native vector envs (cluster_envs.envs.vector) and the SB3 adapter (agents.native_vec)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import cluster_envs  # noqa: F401  (registers the ids)
from agents.config import resolve_hyperparams
from agents.envs import make_train_env
from agents.native_vec import NativeVecEnv
from agents.train import train
from cluster_envs.envs.registration import env_ids
from cluster_envs.envs.vector import ClusterVectorEnv
from cluster_envs.envs.vector_info import batch_infos
from cluster_envs.errors import ConfigError

TOY: dict[str, Any] = {"preset": "toy"}
MOLDABLE = "cluster_envs/MoldableScheduling-v0"


def _masked_action(rng: np.random.Generator, mask: np.ndarray, space: gym.Space) -> Any:
    """A random allowed action (per-slot masks for MultiDiscrete)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    assert isinstance(space, gym.spaces.MultiDiscrete)
    rows = mask.reshape(len(space.nvec), -1)
    return np.array([rng.choice(np.flatnonzero(r)) for r in rows], dtype=np.int64)


@pytest.mark.parametrize("env_id", env_ids())
def test_make_vec_builds_the_native_vector_env(env_id: str) -> None:
    venv = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **TOY)
    assert isinstance(venv, ClusterVectorEnv)
    assert venv.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    obs, infos = venv.reset(seed=5)
    single = gym.make(env_id, **TOY)
    assert obs.shape == (3, *np.shape(single.observation_space.sample()))
    assert obs in venv.observation_space
    assert venv.single_action_space == single.action_space
    np.testing.assert_array_equal(infos["action_mask"], venv.action_masks())
    assert infos["_action_mask"].all()
    venv.close()


@pytest.mark.parametrize("env_id", env_ids())
def test_native_envs_play_the_episodes_of_single_envs(env_id: str) -> None:
    """Sub-env i == gym.make(env_id) reset with seed + i, across autoresets."""
    n, seed = 3, 11
    venv = ClusterVectorEnv(env_id, n, **TOY)
    singles = [gym.make(env_id, **TOY) for _ in range(n)]
    obs, infos = venv.reset(seed=seed)
    for i, env in enumerate(singles):
        o, info = env.reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], o)
        np.testing.assert_array_equal(infos["action_mask"][i], info["action_mask"])
    rngs = [np.random.default_rng(100 + i) for i in range(n)]
    ends = np.zeros(n, dtype=int)
    for _ in range(1500):
        actions = np.stack([
            _masked_action(rngs[i], env.unwrapped.action_masks(), env.action_space)  # type: ignore[attr-defined]
            for i, env in enumerate(singles)
        ])  # fmt: skip
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, info = env.step(actions[i])
            assert (rewards[i], terminated[i], truncated[i]) == (r, te, tr)
            if te or tr:
                assert infos["_final_obs"][i]
                np.testing.assert_array_equal(infos["final_obs"][i], o)
                final = infos["final_info"]
                assert (
                    final["episode_metrics"]["avg_jct_s"][i] == info["episode_metrics"]["avg_jct_s"]
                )
                np.testing.assert_array_equal(final["action_mask"][i], info["action_mask"])
                o, info = env.reset()
                ends[i] += 1
            else:
                assert "_final_obs" not in infos or not infos["_final_obs"][i]
            np.testing.assert_array_equal(obs[i], o)
            np.testing.assert_array_equal(infos["action_mask"][i], info["action_mask"])
            np.testing.assert_array_equal(venv.action_masks()[i], info["action_mask"])
            assert infos["num_invalid_actions"][i] == info["num_invalid_actions"]
        if (ends >= 2).all():
            break
    assert (ends >= 2).all(), f"every sub-env should have auto-reset twice, got {ends}"


def _add_info_one_by_one(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """Gymnasium's own batching, one env at a time (the reference for batch_infos)."""
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * len(infos))
    out: dict[str, Any] = {}
    for i, info in enumerate(infos):
        out = ref._add_info(out, info, i)
    return out


def _assert_same_infos(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert sorted(a) == sorted(b)
    for key, value in a.items():
        if isinstance(value, dict):
            _assert_same_infos(value, b[key])
        elif value.dtype == object:
            assert [type(v) for v in value] == [type(v) for v in b[key]], key
            for x, y in zip(value, b[key], strict=True):
                np.testing.assert_array_equal(x, y)
        else:
            assert value.dtype == b[key].dtype and value.shape == b[key].shape, key
            np.testing.assert_array_equal(value, b[key])


@pytest.mark.parametrize("env_id", [MOLDABLE, "cluster_envs/MetisAllocation-v0"])
def test_batched_infos_equal_gymnasiums_add_info(env_id: str) -> None:
    venv = ClusterVectorEnv(env_id, 3, **TOY)
    infos = venv.reset_unbatched(seed=2)
    _assert_same_infos(batch_infos(infos), _add_info_one_by_one(infos))
    rng = np.random.default_rng(0)
    for _ in range(600):
        masks = venv.action_masks()
        actions = np.stack([_masked_action(rng, m, venv.single_action_space) for m in masks])
        *_, terminated, truncated, infos = venv.step_unbatched(actions)
        if (terminated | truncated).any():
            break
    assert any("final_info" in info for info in infos), "no episode ended"
    _assert_same_infos(batch_infos(infos), _add_info_one_by_one(infos))


@pytest.mark.parametrize("bad", [0, -2, 2.5, "4", True, None])
def test_bad_num_envs_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match="num_envs"):
        ClusterVectorEnv(MOLDABLE, bad)
    with pytest.raises(ConfigError, match="num_envs"):
        gym.make_vec(MOLDABLE, num_envs=bad, vectorization_mode="vector_entry_point")


def test_bad_actions_seeds_and_order_are_clear_errors() -> None:
    venv = ClusterVectorEnv(MOLDABLE, 2, **TOY)
    with pytest.raises(gym.error.ResetNeeded):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ConfigError, match="3 seeds for num_envs=2"):
        venv.reset(seed=[1, 2, 3])
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        venv.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ConfigError, match="env"):
        ClusterVectorEnv("NoSuchEnv-v0", 2)


def test_sb3_adapter_matches_dummy_vec_env_exactly() -> None:
    """Same seeds -> the native adapter trains the very parameters DummyVecEnv gives."""
    from sb3_contrib import MaskablePPO

    hp = {"n_steps": 32, "batch_size": 64, "n_epochs": 1}
    params = resolve_hyperparams("maskable_ppo", MOLDABLE, hp, TOY, 2)
    torch.set_num_threads(1)
    weights, returns = {}, {}
    for kind in ("dummy", "native", "native-subproc"):
        env = make_train_env(params, 3, kind)
        model = MaskablePPO(env=env, seed=3, device="cpu", verbose=0, **params.model_kwargs())
        model.learn(192)
        weights[kind] = torch.cat([p.flatten() for p in model.policy.parameters()])
        returns[kind] = [(e["r"], e["l"]) for e in model.ep_info_buffer or []]
        env.close()
    for kind in ("native", "native-subproc"):
        assert returns[kind] and returns[kind] == returns["dummy"], kind
        assert torch.equal(weights[kind], weights["dummy"]), kind


def test_adapter_masks_and_terminal_observation() -> None:
    venv = NativeVecEnv(ClusterVectorEnv(MOLDABLE, 2, **TOY))
    venv.seed(0)
    obs = venv.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (2, *venv.observation_space.shape)  # type: ignore[misc]
    masks = np.stack(venv.env_method("action_masks"))
    assert masks.shape == (2, int(venv.action_space.n))  # type: ignore[attr-defined]
    np.testing.assert_array_equal(masks[1], venv.venv.envs[1].action_masks())
    assert venv.env_method("action_masks", indices=[1])[0].tolist() == masks[1].tolist()
    assert venv.has_attr("action_masks")
    wait = int(venv.action_space.n) - 1  # type: ignore[attr-defined]
    for _ in range(2000):
        masks = np.stack(venv.env_method("action_masks"))
        actions = np.array([wait if m[wait] else int(np.flatnonzero(m)[0]) for m in masks])
        new_obs, rewards, dones, infos = venv.step(actions)
        assert isinstance(new_obs, np.ndarray) and rewards.dtype == np.float32
        if dones.any():
            i = int(np.flatnonzero(dones)[0])
            assert infos[i]["terminal_observation"].shape == new_obs[i].shape
            assert "episode_metrics" in infos[i]
            assert "episode_metrics" not in venv.reset_infos[i]
            break
    else:
        pytest.fail("no episode ended in 2000 steps")


@pytest.mark.parametrize(
    ("algo", "env_id"),
    [("maskable_ppo", MOLDABLE), ("ppo", "cluster_envs/JobPlacement-v0")],
)
def test_training_runs_on_the_native_adapter(tmp_path: Any, algo: str, env_id: str) -> None:
    hp = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "normalize": True}
    result = train(
        algo, env_id, tmp_path / algo, timesteps=256, seed=1, env_kwargs=TOY,
        hyperparams=hp, n_envs=2, eval_freq=0, progress_bar=False,
    )  # fmt: skip
    assert result.num_timesteps >= 256
    assert result.last_model.is_file()
    assert result.last_episode_metrics["avg_jct_s"] > 0
