"""Idempotent registration of every cluster-envs environment id.

Ids are namespaced and versioned (``cluster_envs/<Task>-v<N>``); bump the version when
dynamics change. Entry points are strings, so registering imports nothing heavy, and
:func:`resolve_env_id` (the one env-id resolver of the project) imports no gymnasium.
"""

from __future__ import annotations

from cluster_envs.names import unknown_name

#: The namespace of every cluster-envs id (``cluster_envs/<Task>-v<N>``).
NAMESPACE = "cluster_envs/"

#: id -> (entry point, default kwargs). Kwargs must stay JSON-serialisable. Each id's
#: native vector env (``gym.make_vec(id, N, vectorization_mode="vector_entry_point")``)
#: is ``cluster_envs.envs.vector:<Task>VectorEnv`` (:func:`vector_entry_point`).
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


def vector_entry_point(env_id: str) -> str:
    """The native vector env of ``env_id`` (``cluster_envs.envs.vector:<Task>VectorEnv``)."""
    task = short_env_id(env_id).split("-v")[0]
    return f"cluster_envs.envs.vector:{task}VectorEnv"


def register_envs() -> None:
    """Register every env id not registered yet (safe to call many times)."""
    import gymnasium as gym

    for env_id, (entry_point, kwargs) in ENV_SPECS.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=entry_point,
                vector_entry_point=vector_entry_point(env_id),
                kwargs=dict(kwargs),
            )


def env_ids() -> list[str]:
    """Every cluster-envs env id."""
    return sorted(ENV_SPECS)


def short_env_id(env_id: str) -> str:
    """``cluster_envs/MoldableScheduling-v0`` -> ``MoldableScheduling-v0`` (others as given)."""
    return env_id.removeprefix(NAMESPACE)


def resolve_env_id(name: str) -> str:
    """``MoldableScheduling-v0`` or ``cluster_envs/MoldableScheduling-v0`` -> the full id.

    Raises:
        ConfigError: Not a cluster-envs id (with the closest ids).
    """
    full = name if name.startswith(NAMESPACE) else NAMESPACE + name
    if full not in ENV_SPECS:
        short = [short_env_id(i) for i in ENV_SPECS]
        raise unknown_name("env", name, short, listed="envs")
    return full
