"""Plug-ins found through package entry points, loaded only when first used.

Layers above the core (heuristic baselines, trained-agent loaders, CLI subcommands)
declare themselves in their package metadata (``[project.entry-points."<group>"]`` in
``pyproject.toml``); the core lists the names from the metadata (cheap: no import) and
imports an entry's module only when that entry is asked for. So the core never names a
layer above it, and ``make_policy("sjf")`` works without the user importing anything.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

#: Entry-point group of heuristic policies (name -> SchedulingPolicy factory).
POLICY_GROUP = "cluster_envs.policies"
#: Entry-point group of trained-agent loaders (prefix -> factory taking the argument).
AGENT_GROUP = "cluster_envs.agent_loaders"
#: Entry-point group of CLI subcommands (name -> ``(help, add_arguments, run)``).
COMMAND_GROUP = "cluster_envs.commands"


@functools.cache
def entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    """Name -> entry point of ``group`` over every installed distribution (cached)."""
    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def load(group: str, name: str) -> Any:
    """The object entry ``name`` of ``group`` points to (imports its module)."""
    return entry_points(group)[name].load()
