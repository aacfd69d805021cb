"""SB3 ``VecEnv`` over a native cluster-envs vector env (the training default).

:class:`NativeVecEnv` turns a :class:`cluster_envs.envs.vector.ClusterVectorEnv` (N bare
envs in this process, batched observations and masks) into Stable-Baselines3's
``VecEnv`` API, with the same results as ``DummyVecEnv`` of N ``Monitor``-wrapped
``gym.make`` envs seeded ``seed + i`` (``tests/test_vector_env.py``), minus their cost:
no wrappers, no per-step ``deepcopy`` of the infos, and MaskablePPO's
``env_method("action_masks")`` reads the batched ``(N, n_actions)`` masks instead of
calling N envs. It does ``Monitor``'s bookkeeping itself (``info["episode"]`` with the
return, length and time of each finished episode, summed in float64 as ``Monitor``
does), so the wrapper stack -- ``VecNormalize`` over it -- is as deep as the eval env's
``VecNormalize`` over a ``DummyVecEnv``, which SB3's normalisation sync requires.

SB3 conventions: ``dones = terminated | truncated``; a done env's info is the last
step's info plus ``"terminal_observation"`` and ``"TimeLimit.truncated"``; the first info
of the next episode is in ``reset_infos``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

from cluster_envs.envs.vector import ClusterVectorEnv

#: The method MaskablePPO calls through ``env_method`` for masks.
MASKS_METHOD = "action_masks"


class EpisodeStats:
    """``Monitor``'s episode bookkeeping for N envs: ``info["episode"] = {r, l, t}``."""

    def __init__(self, num_envs: int) -> None:
        self.t_start = time.time()
        self.returns = np.zeros(num_envs, dtype=np.float64)
        self.lengths = np.zeros(num_envs, dtype=np.int64)

    def reset(self) -> None:
        """Every env starts an episode."""
        self.returns[:] = 0.0
        self.lengths[:] = 0

    def add(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Count one step of every env; ``episode`` into the infos of the done ones."""
        self.returns += rewards
        self.lengths += 1
        for i in np.flatnonzero(dones):
            infos[i]["episode"] = {
                "r": round(float(self.returns[i]), 6),
                "l": int(self.lengths[i]),
                "t": round(time.time() - self.t_start, 6),
            }
            self.returns[i] = 0.0
            self.lengths[i] = 0


def sb3_infos(
    infos: list[dict[str, Any]],
    terminated: np.ndarray,
    truncated: np.ndarray,
    reset_infos: list[dict[str, Any]],
) -> np.ndarray:
    """SAME_STEP infos -> SB3's, in place; the dones.

    A done env's entry becomes its last step's info with ``terminal_observation`` and
    ``TimeLimit.truncated``; the first info of its next episode goes to ``reset_infos``.
    """
    dones = terminated | truncated
    for i in np.flatnonzero(dones):
        reset_info = dict(infos[i])
        final = dict(reset_info.pop("final_info"))
        final["terminal_observation"] = reset_info.pop("final_obs")
        final["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        reset_infos[i] = reset_info
        infos[i] = final
    return dones


class NativeVecEnv(VecEnv):
    """SB3 ``VecEnv`` API over a :class:`ClusterVectorEnv` (see the module docstring)."""

    def __init__(self, venv: ClusterVectorEnv) -> None:
        self.venv = venv  # before VecEnv.__init__, which reads the envs' render_mode
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self.episodes = EpisodeStats(venv.num_envs)

    # ------------------------------------------------------------------ stepping
    def reset(self) -> np.ndarray:
        """Reset every env (seeds from :meth:`seed`, then unseeded); the obs batch."""
        options = [opt or None for opt in self._options]
        self.reset_infos = self.venv.reset_unbatched(seed=list(self._seeds), options=options)
        self.episodes.reset()
        self._reset_seeds()
        self._reset_options()
        return self.venv.observations()

    def step_async(self, actions: np.ndarray) -> None:
        """Remember ``actions`` for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step every env (auto-reset); obs, float32 rewards, dones, infos."""
        if self._actions is None:
            raise RuntimeError("NativeVecEnv.step_wait() without step_async()")
        obs, rewards, terminated, truncated, infos = self.venv.step_unbatched(self._actions)
        self._actions = None
        dones = sb3_infos(infos, terminated, truncated, self.reset_infos)
        self.episodes.add(rewards, dones, infos)
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    # ------------------------------------------------------------------ attributes
    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """``method_name(...)`` of the envs; ``action_masks`` from the batched masks."""
        if method_name == MASKS_METHOD and not method_args and not method_kwargs:
            masks = self.venv.action_masks()
            return list(masks[self._get_indices(indices)])
        return [
            getattr(env, method_name)(*method_args, **method_kwargs) for env in self._envs(indices)
        ]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the envs."""
        return [getattr(env, attr_name) for env in self._envs(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` on the envs."""
        for env in self._envs(indices):
            setattr(env, attr_name, value)

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Never: the envs are bare (the episode statistics are :class:`EpisodeStats`)."""
        return [False for _ in self._envs(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No frames (the native envs are built without a render mode)."""
        return [None] * self.num_envs

    def _envs(self, indices: VecEnvIndices) -> list[gym.Env]:
        return [self.venv.envs[i] for i in self._get_indices(indices)]

    def _get_indices(self, indices: VecEnvIndices) -> list[int]:
        return list(super()._get_indices(indices))


def native_vec_env(
    env_id: str, n_envs: int, seed: int | None, env_kwargs: dict[str, Any]
) -> VecEnv:
    """A :class:`NativeVecEnv` of ``n_envs`` envs; env ``i`` seeded ``seed + i``."""
    venv = NativeVecEnv(ClusterVectorEnv(env_id, n_envs, **env_kwargs))
    if seed is not None:
        venv.seed(seed)
    return venv
