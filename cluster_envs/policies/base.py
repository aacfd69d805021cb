"""Policy roles: one protocol each, one immutable input, one typed output.

* A :class:`SchedulingPolicy` (job selection + sizing; also periodic re-allocation)
  turns a :class:`~cluster_envs.sim.view.ClusterView` into a
  :class:`~cluster_envs.types.Decision`.
* A :class:`PlacementPolicy` chooses the nodes for a given number of GPUs.

Heuristics, the Bayesian-optimisation placer and RL action decoders all implement these,
so any of them runs through the no-gym runner or a Gymnasium env alike.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Decision, Placement


@runtime_checkable
class SchedulingPolicy(Protocol):
    """Decides which jobs get which GPUs at a decision point."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Forget episode state; reseed any randomness."""
        ...

    def decide(self, view: ClusterView) -> Decision:
        """The actions to take now (may be empty)."""
        ...


@runtime_checkable
class PlacementPolicy(Protocol):
    """Chooses nodes for ``num_gpus`` GPUs of ``job`` given the free GPUs."""

    name: str

    def place(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement | None:
        """A placement on ``free`` (per-node free GPUs), or ``None`` if none fits."""
        ...
