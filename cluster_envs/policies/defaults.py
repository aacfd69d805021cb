"""Named variants of the default policies, for the registry."""

from __future__ import annotations

from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import ConsolidatedPlacement, SpreadPlacement


def fifo_skip() -> FifoScheduler:
    """FIFO that skips a job that does not fit instead of blocking the queue."""
    return FifoScheduler(strict=False)


def fifo_spread() -> FifoScheduler:
    """FIFO with every job spread over as many nodes as possible."""
    return FifoScheduler(placement=SpreadPlacement())


def fifo_best_fit() -> FifoScheduler:
    """FIFO with best-fit consolidated placement."""
    return FifoScheduler(placement=ConsolidatedPlacement("best-fit"))
