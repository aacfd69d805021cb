"""The heuristics an env's hints ask, built and reseeded as HeuristicAgent plays them.

Shared by the hinted observations and actions (:mod:`~cluster_envs.envs.moldable_hints`,
:mod:`~cluster_envs.envs.metis_hints`): each heuristic is built by the env's
:meth:`policy` (the registry; the core names no layer above it) on first use and reseeded
with the episode seed at every reset, as ``rollout`` reseeds a HeuristicAgent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster_envs.policies.registry import check_policy_name


class HeuristicPanel:
    """The named heuristics, reseeded per episode.

    Args:
        names: The heuristics' registry names (checked now: a clear error if one is not
            installed).
        make_policy: Builds a configured heuristic by name (the env's ``policy``).
        action_for: The env's ``action_for`` (a decision as that env's action).
    """

    def __init__(
        self,
        names: tuple[str, ...],
        make_policy: Callable[[str], Any],
        action_for: Callable[[Any], Any],
    ) -> None:
        for name in names:
            check_policy_name(name)
        self._names = names
        self._make, self._action_for = make_policy, action_for
        self._policies: list[Any] | None = None
        self._seed: int | None = 0

    def _reseed(self, seed: int | None) -> None:
        """A new episode: build the heuristics once, reseed every one with ``seed``."""
        if self._policies is None:
            self._policies = [self._make(name) for name in self._names]
        for policy in self._policies:
            policy.reset(seed)
        self._seed = seed
