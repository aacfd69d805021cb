"""Input-dependent baselines (Mao et al., ICLR'19): advantages against sibling rollouts.

In a scheduling env the arrival sequence, not the policy, dominates the return, so a
value baseline that cannot see the future arrivals leaves most of the return's variance
in the gradient. Here envs are run in *groups* that play the same workload draws:

* :class:`SharedSeedWrapper` reseeds every env of a group with the same seed sequence
  (``base + group * 100_003 + episode``), so the k-th episode of every sibling is the same
  workload, and tells each step's decision time and episode index in ``info``;
* :class:`InputDependentBaseline` (an SB3 callback; ``on_rollout_end`` runs after SB3 has
  computed the GAE returns and before ``train``) replaces each step's advantage by its
  return minus the mean return of its siblings *at the same simulated time in the same
  episode* (the sibling's last decision at or before that time). Steps without a sibling
  on the same episode inside the buffer keep their GAE advantage. The value head is still
  trained on the returns (it only no longer is the actor's baseline).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from cluster_envs.errors import ConfigError

#: Seed stride between groups.
GROUP_STRIDE = 100_003


class SharedSeedWrapper(gym.Wrapper):
    """Resets with ``base + group * GROUP_STRIDE + k`` on the k-th episode (see module)."""

    def __init__(self, env: gym.Env, base_seed: int, group: int) -> None:
        super().__init__(env)
        self.base_seed, self.group, self.episode = base_seed, group, -1
        self._time = 0.0

    def _now(self) -> float:
        return float(self.env.unwrapped.sim.now_s)  # type: ignore[attr-defined]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self.episode += 1
        obs, info = self.env.reset(seed=self.base_seed + self.group * GROUP_STRIDE + self.episode,
                                   options=options)  # fmt: skip
        self._time = self._now()
        return obs, info

    def step(self, action: Any) -> Any:
        decided_at, episode = self._time, self.episode
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._time = self._now()
        info = {**info, "decision_time_s": decided_at, "episode_index": episode}
        return obs, reward, terminated, truncated, info


class InputDependentBaseline(BaseCallback):
    """Replace GAE advantages by sibling-mean baselines (see the module docstring).

    Args:
        group_size: Consecutive envs ``[g * size, (g + 1) * size)`` form group ``g``.
    """

    def __init__(self, group_size: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        if group_size < 2:
            raise ConfigError(f"InputDependentBaseline needs group_size >= 2, got {group_size}")
        self.group_size = group_size
        self.replaced_share: list[float] = []

    def _on_rollout_start(self) -> None:
        n_envs = self.model.n_envs
        if n_envs % self.group_size:
            raise ConfigError(f"{n_envs} envs do not split into groups of {self.group_size}")
        self._times: list[list[float]] = [[] for _ in range(n_envs)]
        self._episodes: list[list[int]] = [[] for _ in range(n_envs)]

    def _on_step(self) -> bool:
        for i, info in enumerate(self.locals["infos"]):
            if "decision_time_s" not in info:
                raise ConfigError("InputDependentBaseline needs envs wrapped in SharedSeedWrapper")
            self._times[i].append(float(info["decision_time_s"]))
            self._episodes[i].append(int(info["episode_index"]))
        return True

    def _on_rollout_end(self) -> None:
        buf = self.model.rollout_buffer  # type: ignore[attr-defined]  # on-policy algos
        returns = np.asarray(buf.returns)  # (n_steps, n_envs), GAE returns
        adv = np.asarray(buf.advantages)
        times, eps = np.array(self._times).T, np.array(self._episodes).T
        n_steps, n_envs = returns.shape
        replaced = 0
        for g in range(n_envs // self.group_size):
            members = range(g * self.group_size, (g + 1) * self.group_size)
            for i in members:
                for t in range(n_steps):
                    vals = []
                    for j in members:
                        if j == i:
                            continue
                        rows = np.flatnonzero(eps[:, j] == eps[t, i])
                        if not len(rows):
                            continue
                        k = np.searchsorted(times[rows, j], times[t, i], side="right") - 1
                        vals.append(returns[rows[max(k, 0)], j])
                    if vals:
                        adv[t, i] = returns[t, i] - float(np.mean(vals))
                        replaced += 1
        buf.advantages = adv.astype(np.float32)
        self.replaced_share.append(replaced / adv.size)
        self.logger.record("train/input_baseline_share", replaced / adv.size)
