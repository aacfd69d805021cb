"""Native Gymnasium vector envs: N bare cluster envs stepped in one process.

``gym.make_vec(env_id, num_envs=N, vectorization_mode="vector_entry_point")`` (or
``ClusterVectorEnv(env_id, N, **env_kwargs)``) builds N instances of the env class
itself -- no ``PassiveEnvChecker`` / ``OrderEnforcing`` wrappers, no per-step checks --
and writes their observations, rewards, terminations and action masks straight into
preallocated ``(N, ...)`` arrays.

Contract (tested against N single envs in ``tests/test_vector_env.py``):

* ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (a list gives one seed per env),
  as :class:`gymnasium.vector.SyncVectorEnv` and SB3's ``make_vec_env`` do; later
  episodes of a sub-env continue its own ``np_random`` (an unseeded ``reset()``), so
  sub-env ``i`` plays exactly the episodes of ``gym.make(env_id)`` reset once with
  ``seed=s + i``.
* Autoreset mode ``SAME_STEP`` (``metadata["autoreset_mode"]``): the step that ends an
  episode returns the *first* observation of the next one, with the last observation
  in ``infos["final_obs"]`` and the last info in ``infos["final_info"]`` (Gymnasium's
  layout: every info key ``k`` is a batched array with a boolean mask ``infos["_k"]``,
  built key by key by :func:`cluster_envs.envs.vector_info.batch_infos`).
  No step is wasted on a reset, and this is the convention SB3's ``VecEnv`` uses.
* ``action_masks()`` returns the ``(N, n_actions)`` masks of the current states (the
  same as ``infos["action_mask"]``); :meth:`step_unbatched` returns per-env info dicts
  (for SB3 adapters, without Gymnasium's info batching).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.registration import ENV_SPECS, resolve_env_id
from cluster_envs.envs.vector_info import batch_infos
from cluster_envs.errors import ConfigError

#: Per-env step results: obs (N, ...), rewards, terminated, truncated, info dicts.
StepLists = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]


def check_num_envs(num_envs: Any) -> int:
    """``num_envs`` as an int >= 1, else :class:`ConfigError` naming the value."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
        raise ConfigError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if num_envs < 1:
        raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
    return int(num_envs)


class ClusterVectorEnv(VectorEnv):
    """``num_envs`` bare copies of one cluster env, batched (see the module docstring).

    Args:
        env_id: A cluster-envs id (``MoldableScheduling-v0`` or with its namespace).
        num_envs: How many sub-envs (>= 1).
        copy: Return copies of the observation batch (else the internal buffer, which
            the next ``step``/``reset`` overwrites).
        **env_kwargs: The env's keyword arguments (``preset``, ``observation``, ...),
            the same for every sub-env.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self, env_id: str, num_envs: int = 1, *, copy: bool = True, **env_kwargs: Any
    ) -> None:
        self.num_envs = check_num_envs(num_envs)
        full_id = resolve_env_id(env_id)
        if env_kwargs.pop("max_episode_steps", None) is not None:
            raise ConfigError(
                f"{full_id} takes no max_episode_steps; bound episodes with horizon_s"
            )
        entry_point, defaults = ENV_SPECS[full_id]
        creator = load_env_creator(entry_point)
        kwargs = {**defaults, **env_kwargs}
        envs: list[ClusterEnvBase] = []
        for _ in range(self.num_envs):
            env = creator(**kwargs)
            if not isinstance(env, ClusterEnvBase):
                raise TypeError(f"{full_id} does not build a ClusterEnvBase env")
            envs.append(env)
        self.envs = envs
        self.env_id = full_id
        self.env_kwargs = kwargs
        self.copy = copy
        first = envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        self.render_mode = None
        self.spec = None
        obs_space = first.observation_space
        if not isinstance(obs_space, gym.spaces.Box):
            raise TypeError(f"{full_id}: only Box observations are batched, got {obs_space}")
        n = self.num_envs
        self._obs = np.zeros((n, *obs_space.shape), dtype=obs_space.dtype)
        self._rewards = np.zeros(n, dtype=np.float64)
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._masks: np.ndarray | None = None  # (N, n_actions) bool, after reset()
        self._actions_split = self._action_splitter(first.action_space)

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env (sub-env ``i`` gets ``seed + i``); batched obs and infos."""
        infos = self.reset_unbatched(seed=seed, options=options)
        return self._out_obs(), batch_infos(infos)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env once (SAME_STEP autoreset); batched results."""
        obs, rewards, terminated, truncated, infos = self.step_unbatched(actions)
        return obs, rewards, terminated, truncated, batch_infos(infos)

    def action_masks(self) -> np.ndarray:
        """The ``(N, n_actions)`` action masks of the sub-envs' current states (a copy)."""
        if self._masks is None:
            raise gym.error.ResetNeeded("ClusterVectorEnv.action_masks() before reset()")
        return self._masks.copy()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``getattr(env, name)(*args, **kwargs)`` (or the attribute) of every sub-env."""
        out = []
        for env in self.envs:
            attr = getattr(env, name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every sub-env."""
        return tuple(getattr(env, name) for env in self.envs)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set ``name`` on every sub-env (one value each, or one value for all)."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr needs {self.num_envs} values, got {len(values)}")
        for env, value in zip(self.envs, values, strict=True):
            setattr(env, name, value)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env."""
        for env in getattr(self, "envs", ()):  # () when __init__ failed
            env.close()

    # ------------------------------------------------------------------ unbatched infos
    def reset_unbatched(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Reset every sub-env into the obs buffer (:meth:`observations`); their infos.

        ``options`` is one dict for every sub-env or one (or ``None``) per sub-env.
        """
        seeds = self._seeds(seed)
        per_env: list[dict[str, Any] | None] = (
            list(options) if isinstance(options, (list, tuple)) else [options] * self.num_envs  # type: ignore[list-item]
        )
        if len(per_env) != self.num_envs:
            raise ConfigError(f"reset got {len(per_env)} options for num_envs={self.num_envs}")
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seeds[0])
        infos = []
        for i, (env, s, opt) in enumerate(zip(self.envs, seeds, per_env, strict=True)):
            self._obs[i], info = env.reset(seed=s, options=opt)
            infos.append(info)
            self._store_mask(i, info)
        self._terminated[:] = False
        self._truncated[:] = False
        return infos

    def step_unbatched(self, actions: Any) -> StepLists:
        """Step every sub-env once; obs, rewards, terminated, truncated, info dicts.

        An env whose episode ended is reset at once: its info dict is the new episode's,
        with ``"final_obs"`` and ``"final_info"`` of the one that ended.
        """
        if self._masks is None:
            raise gym.error.ResetNeeded("ClusterVectorEnv.step() before reset()")
        obs, rewards, terminated, truncated = self._obs, self._rewards, self._terminated, self._truncated  # fmt: skip
        infos = []
        for i, (env, action) in enumerate(zip(self.envs, self._actions_split(actions), strict=True)):  # fmt: skip
            o, r, te, tr, info = env.step(action)
            rewards[i], terminated[i], truncated[i] = r, te, tr
            if te or tr:
                final_obs, final_info = o.copy(), info
                o, info = env.reset()
                info = {**info, "final_obs": final_obs, "final_info": final_info}
            obs[i] = o
            self._store_mask(i, info)
            infos.append(info)
        return self._out_obs(), rewards.copy(), terminated.copy(), truncated.copy(), infos

    def observations(self) -> np.ndarray:
        """A copy of the current observation batch ``(N, ...)``."""
        return self._obs.copy()

    # ------------------------------------------------------------------ helpers
    def _out_obs(self) -> np.ndarray:
        return self._obs.copy() if self.copy else self._obs

    def _store_mask(self, i: int, info: dict[str, Any]) -> None:
        mask = info["action_mask"]
        if self._masks is None:
            self._masks = np.zeros((self.num_envs, *np.shape(mask)), dtype=np.bool_)
        self._masks[i] = mask

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ConfigError(
                f"reset(seed=...) got {len(seeds)} seeds for num_envs={self.num_envs}"
            )
        return seeds

    def _action_splitter(self, space: gym.Space) -> Any:
        n = self.num_envs
        shape = (n, *(space.shape or ()))

        def split(actions: Any) -> Any:
            arr = np.asarray(actions)
            if arr.shape != shape:
                if arr.size == int(np.prod(shape)):
                    arr = arr.reshape(shape)
                else:
                    raise ValueError(
                        f"actions must have shape {shape} for {n} envs of {space}, got {arr.shape}"
                    )
            return arr

        return split


def _vector_class(env_id: str) -> type[ClusterVectorEnv]:
    """A ClusterVectorEnv subclass bound to ``env_id`` (the registry's vector entry point)."""

    def __init__(self: ClusterVectorEnv, num_envs: int = 1, **kwargs: Any) -> None:
        ClusterVectorEnv.__init__(self, env_id, num_envs, **kwargs)

    name = env_id.removeprefix("cluster_envs/").split("-v")[0] + "VectorEnv"
    return type(name, (ClusterVectorEnv,), {"__init__": __init__, "__doc__": f"{env_id}, batched."})


MoldableSchedulingVectorEnv = _vector_class("cluster_envs/MoldableScheduling-v0")
JobPlacementVectorEnv = _vector_class("cluster_envs/JobPlacement-v0")
MetisAllocationVectorEnv = _vector_class("cluster_envs/MetisAllocation-v0")
MetisAllocationDiscreteVectorEnv = _vector_class("cluster_envs/MetisAllocationDiscrete-v0")
