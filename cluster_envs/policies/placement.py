"""Placement heuristics: consolidated (first-fit / best-fit) and spread.

Both work on the per-node free-GPU vector and never return an infeasible placement.
Consolidation prefers one node; failing that, the fewest nodes, and within a single GPU
type when possible (a data-parallel job runs at the pace of its slowest GPU).
"""

from __future__ import annotations

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Placement

STRATEGIES = ("first-fit", "best-fit")


def fewest_nodes(free: np.ndarray, nodes: np.ndarray, num_gpus: int) -> Placement | None:
    """Fill the nodes with the most free GPUs first (ties: lower id) until ``num_gpus``."""
    if free[nodes].sum() < num_gpus:
        return None
    order = nodes[np.lexsort((nodes, -free[nodes]))]
    out: list[tuple[int, int]] = []
    need = num_gpus
    for node in order:
        take = min(int(free[node]), need)
        if take:
            out.append((int(node), take))
            need -= take
        if not need:
            break
    return tuple(sorted(out))


class ConsolidatedPlacement:
    """Pack a job onto as few nodes as possible.

    Args:
        strategy: ``"first-fit"`` takes the lowest-numbered node that fits the whole job;
            ``"best-fit"`` the fitting node with the fewest free GPUs (less fragmentation).
        prefer_fast: Among GPU types, try the fastest first (else node order).
    """

    def __init__(self, strategy: str = "first-fit", prefer_fast: bool = True) -> None:
        if strategy not in STRATEGIES:
            raise ConfigError(f"unknown placement strategy {strategy!r}; use one of {STRATEGIES}")
        self.strategy = strategy
        self.prefer_fast = prefer_fast
        self.name = f"consolidated-{strategy}"

    def place(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement | None:
        fits = np.flatnonzero(free >= num_gpus)
        if fits.size:
            if self.prefer_fast:
                fits = fits[view.node_speed[fits] == view.node_speed[fits].max()]
            if self.strategy == "best-fit":
                node = fits[np.argmin(free[fits])]  # argmin returns the lowest id on ties
            else:
                node = fits[0]
            return ((int(node), num_gpus),)
        speeds = (
            np.unique(view.node_speed)[::-1] if self.prefer_fast else np.unique(view.node_speed)
        )
        best: Placement | None = None
        for speed in speeds:
            nodes = np.flatnonzero((view.node_speed == speed) & (free > 0))
            found = fewest_nodes(free, nodes, num_gpus)
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        if best is None:
            best = fewest_nodes(free, np.flatnonzero(free > 0), num_gpus)
        return best


class SpreadPlacement:
    """Spread a job's GPUs one at a time over the nodes with the most free GPUs.

    The opposite of consolidation (load-balancing), kept as a baseline and to measure how
    much placement matters.
    """

    name = "spread"

    def place(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement | None:
        if free.sum() < num_gpus:
            return None
        left = free.astype(np.int64).copy()
        taken = np.zeros_like(left)
        for _ in range(num_gpus):
            # Fewest GPUs of this job first, then the most free GPUs, then the lowest id.
            score = np.where(left > 0, left - taken * (int(free.max()) + 1), np.iinfo(np.int64).min)
            node = int(np.argmax(score))
            left[node] -= 1
            taken[node] += 1
        nodes = np.flatnonzero(taken)
        return tuple((int(n), int(taken[n])) for n in nodes)
