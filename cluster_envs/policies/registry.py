"""One registry of heuristic policy names, shared by ``simulate``, the CLI and benchmarks.

Built-in heuristics are registered here; every other package registers its own through
the ``cluster_envs.policies`` entry-point group (:mod:`cluster_envs.policies.plugins`),
imported on first use. :func:`make_policy` returns heuristics (a :class:`SchedulingPolicy`)
only: trained agents come from :func:`cluster_envs.policies.trained.make_agent`. Unknown
names get the closest valid name in the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name
from cluster_envs.policies import plugins
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.defaults import fifo_best_fit, fifo_skip, fifo_spread
from cluster_envs.policies.fifo import FifoScheduler

Factory = Callable[..., SchedulingPolicy]

#: Policies registered at run time (built-ins and :func:`register_policy`).
POLICIES: dict[str, Factory] = {
    "fifo": FifoScheduler,
    "fifo-skip": fifo_skip,
    "fifo-spread": fifo_spread,
    "fifo-best-fit": fifo_best_fit,
}


def register_policy(name: str, factory: Factory, *, overwrite: bool = False) -> None:
    """Add a heuristic under ``name`` (a factory returning a SchedulingPolicy)."""
    if name in policy_names() and not overwrite and POLICIES.get(name) is not factory:
        raise ConfigError(f"policy {name!r} is already registered")
    POLICIES[name] = factory


def policy_names() -> list[str]:
    """Every heuristic policy name (built-in, registered or installed), sorted."""
    return sorted({*POLICIES, *plugins.entry_points(plugins.POLICY_GROUP)})


def _factory(name: str) -> Factory:
    if name in POLICIES:
        return POLICIES[name]
    if name in plugins.entry_points(plugins.POLICY_GROUP):
        return plugins.load(plugins.POLICY_GROUP, name)
    from cluster_envs.policies.trained import is_agent_spec

    if is_agent_spec(name):
        raise ConfigError(
            f"{name!r} is a trained agent, not a heuristic: build it with make_agent() and "
            "play it through an env (cluster_envs.envs.rollout.rollout)"
        )
    raise unknown_name("policy", name, policy_names(), listed="known")


def check_policy_name(name: str) -> str:
    """``name`` if it is a heuristic (nothing is imported), else the unknown-name error."""
    if name not in POLICIES and name not in plugins.entry_points(plugins.POLICY_GROUP):
        _factory(name)
    return name


def make_policy(name: str | SchedulingPolicy, **kwargs: Any) -> SchedulingPolicy:
    """Build a heuristic by registered name (or pass a SchedulingPolicy through).

    Raises:
        ConfigError: An unknown name (with the closest names), a trained-agent spec
            (``sb3:...``; use ``make_agent``), or an object that is not a policy.
    """
    if not isinstance(name, str):
        if not isinstance(name, SchedulingPolicy):
            raise ConfigError(
                f"{name!r} is not a SchedulingPolicy (a trained agent acts on env "
                "observations: play it through an env, not the no-gym simulator)"
            )
        return name
    policy = _factory(name)(**kwargs)
    if not isinstance(policy, SchedulingPolicy):
        raise ConfigError(f"policy {name!r} built a {type(policy).__name__}, not a policy")
    return policy
