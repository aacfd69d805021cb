"""Idempotent registration of every cluster-envs environment id.

Ids are namespaced and versioned (``cluster_envs/<Task>-v<N>``); bump the version when
dynamics change. Entry points are strings, so registering imports nothing heavy.
"""

from __future__ import annotations

import gymnasium as gym

#: id -> (entry point, default kwargs). Kwargs must stay JSON-serialisable.
ENV_SPECS: dict[str, tuple[str, dict]] = {
    "cluster_envs/MoldableScheduling-v0": (
        "cluster_envs.envs.moldable:MoldableSchedulingEnv",
        {},
    ),
    "cluster_envs/JobPlacement-v0": (
        "cluster_envs.envs.placement:JobPlacementEnv",
        {},
    ),
    "cluster_envs/MetisAllocation-v0": (
        "cluster_envs.envs.metis:MetisAllocationEnv",
        {},
    ),
    "cluster_envs/MetisAllocationDiscrete-v0": (
        "cluster_envs.envs.metis_discrete:MetisAllocationDiscreteEnv",
        {},
    ),
}


def register_envs() -> None:
    """Register every env id not registered yet (safe to call many times)."""
    for env_id, (entry_point, kwargs) in ENV_SPECS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))


def env_ids() -> list[str]:
    """Every cluster-envs env id."""
    return sorted(ENV_SPECS)
