"""SB3 ``VecEnv`` of a few worker processes, each holding one native vector env.

:class:`ProcNativeVecEnv` splits ``n_envs`` envs over ``n_procs`` processes; each runs a
:class:`cluster_envs.envs.vector.ClusterVectorEnv` of its share, so one pipe round trip
per process and step carries a whole batch (SB3's ``SubprocVecEnv`` makes one per env).
Env ``i`` is seeded ``seed + i`` whichever process holds it, so the episodes -- and the
trained parameters -- are those of :class:`agents.native_vec.NativeVecEnv`. Action masks
come back with every step, so MaskablePPO's ``env_method("action_masks")`` needs no
round trip; ``info["episode"]`` as :class:`agents.native_vec.NativeVecEnv` adds it.
Worth it when the cores are free: the env steps of the processes overlap.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

from agents.native_vec import MASKS_METHOD, EpisodeStats, sb3_infos
from cluster_envs.envs.vector import check_num_envs
from cluster_envs.envs.vector_worker import serve


class ProcNativeVecEnv(VecEnv):
    """``n_envs`` envs in ``n_procs`` processes of native vector envs (module docstring)."""

    def __init__(
        self,
        env_id: str,
        n_envs: int,
        n_procs: int = 2,
        env_kwargs: dict[str, Any] | None = None,
        start_method: str | None = None,
    ) -> None:
        n_envs = check_num_envs(n_envs)
        n_procs = min(check_num_envs(n_procs), n_envs)
        ctx = mp.get_context(start_method or ("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"))  # fmt: skip
        bounds = np.linspace(0, n_envs, n_procs + 1).round().astype(int)
        #: (first env, number of envs) of each process.
        self.shares = [(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self.remotes: list[Connection] = []
        self.processes = []
        for _, n in self.shares:
            remote, work = ctx.Pipe()
            args = (work, remote, env_id, n, dict(env_kwargs or {}))
            proc = ctx.Process(target=serve, args=args, daemon=True)  # type: ignore[attr-defined]
            proc.start()
            work.close()
            self.remotes.append(remote)
            self.processes.append(proc)
        self.closed = False
        obs_space, act_space = self._ask(0, "spaces", None)
        self._masks: np.ndarray | None = None
        self.episodes = EpisodeStats(n_envs)
        super().__init__(n_envs, obs_space, act_space)

    # ------------------------------------------------------------------ pipes
    def _ask(self, w: int, cmd: str, data: Any) -> Any:
        self.remotes[w].send((cmd, data))
        return self._answer(w)

    def _answer(self, w: int) -> Any:
        ok, out = self.remotes[w].recv()
        if not ok:
            raise out
        return out

    def _by_worker(self, indices: VecEnvIndices) -> list[tuple[int, list[int]]]:
        """(worker, its local env indices) for the global ``indices``."""
        wanted = set(self._get_indices(indices))
        out = []
        for w, (start, n) in enumerate(self.shares):
            local = [i - start for i in range(start, start + n) if i in wanted]
            if local:
                out.append((w, local))
        return out

    # ------------------------------------------------------------------ stepping
    def reset(self) -> np.ndarray:
        """Reset every env (env ``i`` seeded ``seed + i`` after :meth:`seed`)."""
        seeds, options = list(self._seeds), [opt or None for opt in self._options]
        for w, (start, n) in enumerate(self.shares):
            self.remotes[w].send(("reset", (seeds[start : start + n], options[start : start + n])))
        answers = [self._answer(w) for w in range(len(self.shares))]
        self.reset_infos = [info for a in answers for info in a[1]]
        self._masks = np.concatenate([a[2] for a in answers])
        self.episodes.reset()
        self._reset_seeds()
        self._reset_options()
        return np.concatenate([a[0] for a in answers])

    def step_async(self, actions: np.ndarray) -> None:
        """Send each process its envs' actions."""
        for w, (start, n) in enumerate(self.shares):
            self.remotes[w].send(("step", actions[start : start + n]))

    def step_wait(self) -> VecEnvStepReturn:
        """Collect the processes' results (auto-reset); obs, float32 rewards, dones, infos."""
        answers = [self._answer(w) for w in range(len(self.shares))]
        obs, rewards, terminated, truncated, masks = (
            np.concatenate([a[k] for a in answers]) for k in (0, 1, 2, 3, 5)
        )
        infos = [info for a in answers for info in a[4]]
        self._masks = masks
        dones = sb3_infos(infos, terminated, truncated, self.reset_infos)
        self.episodes.add(rewards, dones, infos)
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Stop the worker processes."""
        if self.closed:
            return
        for w in range(len(self.remotes)):
            self._ask(w, "close", None)
        for proc in self.processes:
            proc.join()
        self.closed = True

    # ------------------------------------------------------------------ attributes
    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """``method_name(...)`` of the envs; ``action_masks`` from the last step's masks."""
        if method_name == MASKS_METHOD and self._masks is not None and not method_args:
            return list(self._masks[self._get_indices(indices)])
        call = (method_args, method_kwargs)
        return [
            out
            for w, local in self._by_worker(indices)
            for out in self._ask(w, "get", (method_name, local, call))
        ]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the envs (pickled from their processes)."""
        return [
            out
            for w, local in self._by_worker(indices)
            for out in self._ask(w, "get", (attr_name, local, None))
        ]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` on the envs."""
        for w, local in self._by_worker(indices):
            self._ask(w, "set", (attr_name, local, value))

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Never: the envs are bare."""
        return [False] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No frames."""
        return [None] * self.num_envs

    def _get_indices(self, indices: VecEnvIndices) -> list[int]:
        return list(super()._get_indices(indices))
