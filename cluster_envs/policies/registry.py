"""One registry of policy names, shared by ``simulate``, the CLI and the benchmarks.

Entries are factories or ``"module:attr"`` strings resolved on first use, so the core
never imports the layers above it (``baselines/``, ``agents/``) until a user asks for one
of their policies. Unknown names get the closest valid name in the error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError
from cluster_envs.policies.base import SchedulingPolicy

Factory = Callable[..., SchedulingPolicy]

POLICIES: dict[str, Factory | str] = {
    "fifo": "cluster_envs.policies.fifo:FifoScheduler",
    "fifo-skip": "cluster_envs.policies.defaults:fifo_skip",
    "fifo-spread": "cluster_envs.policies.defaults:fifo_spread",
    "fifo-best-fit": "cluster_envs.policies.defaults:fifo_best_fit",
    # Moldable-job heuristics (baselines/moldable.py, tetris.py, backfill.py, threshold.py).
    "sjf": "baselines.moldable:SjfScheduler",
    "max-parallelism": "baselines.moldable:MaxParallelismScheduler",
    "min-parallelism": "baselines.moldable:MinParallelismScheduler",
    "random": "baselines.moldable:RandomScheduler",
    "tetris": "baselines.tetris:TetrisScheduler",
    "easy-backfill": "baselines.backfill:EasyBackfillScheduler",
    "threshold-eta": "baselines.threshold:EfficiencyThresholdScheduler",
    "threshold-queue": "baselines.threshold:QueueThresholdScheduler",
    "best-threshold": "baselines.threshold:best_threshold",
    "best-threshold-pollux": "baselines.threshold:best_threshold_pollux",
    # Round-based allocation of malleable jobs (baselines/allocation.py, tiresias.py).
    "fair": "baselines.allocation:FairShareAllocator",
    "optimus": "baselines.allocation:OptimusAllocator",
    "slaq": "baselines.allocation:SlaqAllocator",
    "fifo-rigid": "baselines.allocation:RigidFifoAllocator",
    "random-alloc": "baselines.allocation:RandomAllocator",
    "tiresias": "baselines.tiresias:TiresiasScheduler",
    # Pollux (OSDI'21) and its artifact's baselines (baselines/pollux*.py).
    "pollux": "baselines.pollux:PolluxAllocator",
    "optimus-oracle": "baselines.pollux_artifact:OptimusOracleAllocator",
    "tiresias-artifact": "baselines.pollux_artifact:tiresias_artifact",
    # FIFO + Bayesian-optimisation placement (baselines/placement/online.py).
    "bo-gp-ei": "baselines.placement.online:bo_gp_ei",
    "bo-gp-pi": "baselines.placement.online:bo_gp_pi",
    "bo-gp-lcb": "baselines.placement.online:bo_gp_lcb",
    "bo-gp-hedge": "baselines.placement.online:bo_gp_hedge",
    "bo-rf": "baselines.placement.online:bo_rf",
    "bo-et": "baselines.placement.online:bo_et",
}


#: Parametrised names ``prefix:argument`` -> factory taking the argument (e.g.
#: ``sb3:runs/x/best_model.zip``, ``pretrained:MoldableScheduling-v0``).
PREFIXES: dict[str, Factory | str] = {
    # SB3 agents act on env observations: they run through envs (rollout), not the runner.
    "sb3": "agents.policy:sb3_agent",
    "pretrained": "agents.policy:pretrained_agent",
}


def register_policy(name: str, factory: Factory | str, *, overwrite: bool = False) -> None:
    """Add a policy under ``name`` (a factory or a ``"module:attr"`` string)."""
    if name in POLICIES and not overwrite and POLICIES[name] != factory:
        raise ConfigError(f"policy {name!r} is already registered")
    POLICIES[name] = factory


def _resolve(entry: Factory | str) -> Factory:
    if not isinstance(entry, str):
        return entry
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


def make_policy(name: str | SchedulingPolicy, **kwargs: Any) -> SchedulingPolicy:
    """Build a policy by registered name (or pass a policy object through)."""
    if not isinstance(name, str):
        if not isinstance(name, SchedulingPolicy):
            raise ConfigError(f"{name!r} is neither a policy name nor a SchedulingPolicy")
        return name
    prefix, sep, argument = name.partition(":")
    if sep and prefix in PREFIXES:
        return _resolve(PREFIXES[prefix])(argument, **kwargs)
    if name not in POLICIES:
        raise ConfigError(
            f"unknown policy {name!r}{suggest(name, POLICIES)}; known: {', '.join(sorted(POLICIES))}"
        )
    return _resolve(POLICIES[name])(**kwargs)


def policy_names() -> list[str]:
    """Every registered policy name, sorted."""
    return sorted(POLICIES)
