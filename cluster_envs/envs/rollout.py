"""Run any agent through an env: heuristics (via ``action_for``) and predictors alike.

An *agent* here is anything with ``act(env, obs, info) -> action``. Heuristic
SchedulingPolicies become agents through :class:`HeuristicAgent`, which asks the policy
for a decision on the simulator's view and lets the env translate its first action;
trained agents (``make_agent``) through their own ``act``. :func:`rollout` plays one
episode and returns its metrics, so a heuristic's metrics through the env can be compared
with the no-gym runner's on the same workload (the parity check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.registry import make_policy


class Agent(Protocol):
    """Chooses an env action."""

    name: str

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any: ...


class HeuristicAgent:
    """A SchedulingPolicy played through an env that offers ``action_for(decision)``."""

    def __init__(self, policy: str | SchedulingPolicy, seed: int | None = 0) -> None:
        self.policy = make_policy(policy)
        self.name = self.policy.name
        self.seed = seed

    def reset(self, seed: int | None) -> None:
        """Reseed the policy (``rollout`` passes the env's episode seed)."""
        self.policy.reset(self.seed if seed is None else seed)

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        base: Any = env.unwrapped  # duck-typed: any env of the suite (action_for, sim)
        pending = getattr(base, "pending_action", None)
        if pending is not None:  # an env that executes a decision over several steps
            action = pending()
            if action is not None:
                return action
        return base.action_for(self.policy.decide(base.sim.view()))


@dataclass(frozen=True)
class RolloutResult:
    """One episode: its metrics, return, number of steps and invalid actions."""

    metrics: dict[str, float]
    episode_return: float
    num_steps: int
    num_invalid_actions: int


def rollout(env: gym.Env, agent: Any, seed: int, max_steps: int = 10_000_000) -> RolloutResult:
    """Play one episode of ``env`` (reset with ``seed``) with ``agent``."""
    obs, info = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        # The runner seeds a policy with the episode seed; so does an env rollout, so a
        # stochastic heuristic draws the same numbers on both paths (parity).
        agent.reset(getattr(env.unwrapped, "episode_seed", seed))
    total, steps = 0.0, 0
    done = bool(info.get("episode_metrics"))
    while not done and steps < max_steps:
        obs, reward, terminated, truncated, info = env.step(agent.act(env, obs, info))
        total += float(reward)
        steps += 1
        done = terminated or truncated
    base: Any = env.unwrapped  # duck-typed: an env of the suite (episode_metrics)
    metrics = info.get("episode_metrics") or base.episode_metrics()
    return RolloutResult(metrics, total, steps, int(info.get("num_invalid_actions", 0)))
