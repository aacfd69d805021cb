"""Trained agents (``sb3:PATH``, ``pretrained:<Env>-vN``): the second registry.

An agent acts on env observations (``act(env, obs, info)``), so it plays through a
Gymnasium env, never the no-gym runner; heuristics are in
:mod:`cluster_envs.policies.registry`. Loaders register a prefix through the
``cluster_envs.agent_loaders`` entry-point group and are imported on first use, so the
core never imports torch or SB3 itself.

An agent plays envs built with the observation (and action) setting it was trained with
(:func:`agent_env_kwargs`; its card names it), then binds to the built env
(``fit_env``: SB3 set policies adapt to other window and cluster sizes, other models
must match the env's spaces).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name
from cluster_envs.policies import plugins


@runtime_checkable
class TrainedAgent(Protocol):
    """An env agent: chooses the env action for an observation."""

    name: str
    #: The env's ``observation`` setting the agent was trained with; None: the default.
    observation: str | None

    def reset(self, seed: int | None = None) -> None:
        """Reseed any sampling for a new episode."""
        ...

    def fit_env(self, env: Any) -> None:
        """Act in ``env`` from now on, or raise a ConfigError saying why it cannot."""
        ...

    def act(self, env: Any, obs: Any, info: dict[str, Any]) -> Any:
        """The action to take in ``env``."""
        ...


def agent_env_kwargs(agent: TrainedAgent, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` with ``agent``'s own ``observation`` setting, if it has one, and its
    ``action``, ``hint_policies`` and ``observe_slice`` settings (optional attributes:
    MetisAllocation's ``action="hints"``, the heuristics its options follow and whether
    its observation holds the slice length).

    The workload and cluster stay the caller's; only the observation and action follow
    the agent, which cannot read or choose any other.
    """
    out = dict(env_kwargs)
    if agent.observation is not None:
        out["observation"] = agent.observation
    action = getattr(agent, "action", None)
    if action is not None:
        out["action"] = action
    hint_policies = getattr(agent, "hint_policies", None)
    if hint_policies is not None:  # MetisAllocation's options, as the agent learned them
        out["hint_policies"] = list(hint_policies)
    if getattr(agent, "observe_slice", False):
        out["observe_slice"] = True
    return out


def agent_prefixes() -> list[str]:
    """Every installed agent prefix (``sb3``, ``pretrained``, ...), sorted."""
    return sorted(plugins.entry_points(plugins.AGENT_GROUP))


def is_agent_spec(spec: str) -> bool:
    """Whether ``spec`` reads ``<prefix>:<argument>`` with an installed agent prefix."""
    prefix, sep, _ = spec.partition(":")
    return bool(sep) and prefix in plugins.entry_points(plugins.AGENT_GROUP)


def check_agent_spec(spec: str) -> str:
    """``spec`` if its prefix is installed (loads nothing), else a clear error."""
    prefix, sep, argument = spec.partition(":")
    if not sep or not argument:
        raise ConfigError(f"agent {spec!r} must read PREFIX:ARGUMENT (e.g. sb3:PATH)")
    if prefix not in plugins.entry_points(plugins.AGENT_GROUP):
        raise unknown_name("agent prefix", prefix, agent_prefixes(), listed="installed")
    return spec


def check_actor_name(name: str) -> str:
    """``name`` if it is a heuristic or an installed agent spec (imports neither)."""
    from cluster_envs.policies.registry import check_policy_name

    return check_agent_spec(name) if is_agent_spec(name) else check_policy_name(name)


def make_agent(spec: str, **kwargs: Any) -> TrainedAgent:
    """Load the trained agent ``spec`` (``sb3:runs/x/best_model.zip``, ``pretrained:...``).

    Raises:
        ConfigError: Unknown prefix (with the closest installed one) or a bad argument.
    """
    check_agent_spec(spec)
    prefix, _, argument = spec.partition(":")
    agent = plugins.load(plugins.AGENT_GROUP, prefix)(argument, **kwargs)
    if not isinstance(agent, TrainedAgent):
        raise ConfigError(f"agent {spec!r} loaded a {type(agent).__name__}, not an agent")
    return agent
