"""Placement heuristics: consolidated (first-fit / best-fit) and spread.

Both work on the per-node free-GPU vector and never return an infeasible placement.
Consolidation prefers one node; failing that, the fewest nodes, and within a single GPU
type when possible (a data-parallel job runs at the pace of its slowest GPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.names import unknown_name
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Placement

STRATEGIES = ("first-fit", "best-fit")
#: How a job too large for any one node is split: over the fewest nodes of any GPU type
#: (ties: the faster type), or over the fewest nodes of the fastest type with room.
SPLITS = ("fewest-nodes", "fastest-type")
#: Clusters up to this many nodes take the pure-Python path of :func:`consolidate`
#: (same result; a dozen numpy calls on a 16-node vector cost more than a loop).
SMALL_CLUSTER = 64


def _fewest_nodes_list(free: list, nodes: list[int], num_gpus: int) -> Placement | None:
    """:func:`fewest_nodes` on a list of free GPUs and a list of node ids."""
    if sum(free[n] for n in nodes) < num_gpus:
        return None
    return _fill(free, sorted(nodes, key=lambda n: (-free[n], n)), num_gpus)


def _consolidate_list(
    free: list, speed: list, num_gpus: int, strategy: str, prefer_fast: bool, split: str
) -> Placement | None:
    """:func:`consolidate` on lists (the small-cluster path)."""
    nodes = range(len(free))
    # One pass over the nodes that fit: the fastest type first (if prefer_fast), then
    # the fewest free GPUs (best-fit) or the lowest id; ties go to the lower id.
    node, node_speed, node_free = -1, 0.0, 0
    best_fit = strategy == "best-fit"
    for n in nodes:
        f = free[n]
        if f < num_gpus:
            continue
        s = speed[n]
        if (
            node < 0
            or (prefer_fast and s > node_speed)
            or (best_fit and f < node_free and (s == node_speed or not prefer_fast))
        ):
            node, node_speed, node_free = n, s, f
    if node >= 0:
        return ((int(node), int(num_gpus)),)
    speeds = sorted(set(speed), reverse=prefer_fast)
    best: Placement | None = None
    for s in speeds:
        found = _fewest_nodes_list(
            free, [n for n in nodes if speed[n] == s and free[n] > 0], num_gpus
        )
        if found is not None and split == "fastest-type":
            return found
        if found is not None and (best is None or len(found) < len(best)):
            best = found
    if best is None:
        best = _fewest_nodes_list(free, [n for n in nodes if free[n] > 0], num_gpus)
    return best


def fewest_nodes(free: np.ndarray, nodes: np.ndarray, num_gpus: int) -> Placement | None:
    """Fill the nodes with the most free GPUs first (ties: lower id) until ``num_gpus``."""
    if free[nodes].sum() < num_gpus:
        return None
    return _fill(free, nodes[np.lexsort((nodes, -free[nodes]))], num_gpus)


def _fill(free: Any, order: Any, num_gpus: int) -> Placement:
    """Take free GPUs node by node in ``order`` until ``num_gpus`` (they are known to fit)."""
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


def consolidate(
    free: np.ndarray,
    node_speed: np.ndarray,
    num_gpus: int,
    strategy: str = "first-fit",
    prefer_fast: bool = True,
    split: str = "fewest-nodes",
) -> Placement | None:
    """Consolidated placement of ``num_gpus`` GPUs: the project's one copy of the rule.

    One node if one fits the whole job (``first-fit``: the lowest id; ``best-fit``: the
    fewest free GPUs, ties lower id), among the fastest GPU type that has such a node when
    ``prefer_fast``. Otherwise the job is split as :data:`SPLITS` says, within one GPU
    type when possible (a data-parallel job runs at its slowest GPU's pace), else over
    any nodes.

    Args:
        free: Free GPUs per node (an array, or a list of ints: the pure-Python path).
        node_speed: Relative compute speed per node (same length as ``free``).
        num_gpus: GPUs to place (>= 1).
        strategy: ``"first-fit"`` or ``"best-fit"`` (single-node choice).
        prefer_fast: Try the fastest GPU type first (else node order, any type).
        split: ``"fewest-nodes"`` or ``"fastest-type"`` (multi-node choice).

    Returns:
        ``((node, gpus), ...)`` sorted by node, or ``None`` if fewer GPUs are free.
    """
    if isinstance(free, list):  # a caller that keeps plain lists (any cluster size)
        return _consolidate_list(free, list(node_speed), num_gpus, strategy, prefer_fast, split)
    if len(free) <= SMALL_CLUSTER:
        return _consolidate_list(
            free.tolist(), node_speed.tolist(), num_gpus, strategy, prefer_fast, split
        )
    return _consolidate_array(free, node_speed, num_gpus, strategy, prefer_fast, split)


#: (node_speed array, its nodes grouped by speed, fastest first): the last array asked.
_BY_SPEED: list[Any] = [None, ()]


def _nodes_by_speed(node_speed: np.ndarray) -> tuple[np.ndarray, ...]:
    """Node ids of each GPU speed, fastest first (kept for a read-only array that owns
    its data: a view's ``node_speed``)."""
    if _BY_SPEED[0] is not node_speed or node_speed.flags.writeable or node_speed.base is not None:
        speeds = np.unique(node_speed)[::-1]
        _BY_SPEED[:] = node_speed, tuple(np.flatnonzero(node_speed == s) for s in speeds)
    return _BY_SPEED[1]


def _consolidate_array(
    free: np.ndarray,
    node_speed: np.ndarray,
    num_gpus: int,
    strategy: str,
    prefer_fast: bool,
    split: str,
) -> Placement | None:
    """:func:`consolidate` in numpy (the large-cluster path)."""
    if strategy == "first-fit" and prefer_fast:
        # The lowest fitting node of the fastest speed that has one (the rule below).
        for nodes in _nodes_by_speed(node_speed):
            fitting = free[nodes] >= num_gpus
            first = int(fitting.argmax())
            if fitting[first]:
                return ((int(nodes[first]), int(num_gpus)),)
    fits = np.flatnonzero(free >= num_gpus)
    if fits.size:
        if prefer_fast:
            fits = fits[node_speed[fits] == node_speed[fits].max()]
        node = fits[np.argmin(free[fits])] if strategy == "best-fit" else fits[0]
        return ((int(node), int(num_gpus)),)
    speeds = np.unique(node_speed)[::-1] if prefer_fast else np.unique(node_speed)
    best: Placement | None = None
    for speed in speeds:
        found = fewest_nodes(free, np.flatnonzero((node_speed == speed) & (free > 0)), num_gpus)
        if found is not None and split == "fastest-type":
            return found
        if found is not None and (best is None or len(found) < len(best)):
            best = found
    if best is None:
        best = fewest_nodes(free, np.flatnonzero(free > 0), num_gpus)
    return best


class ConsolidatedPlacement:
    """Pack a job onto as few nodes as possible.

    Args:
        strategy: ``"first-fit"`` takes the lowest-numbered node that fits the whole job;
            ``"best-fit"`` the fitting node with the fewest free GPUs (less fragmentation).
        prefer_fast: Among GPU types, try the fastest first (else node order).
    """

    def __init__(self, strategy: str = "first-fit", prefer_fast: bool = True) -> None:
        if strategy not in STRATEGIES:
            raise unknown_name("placement strategy", strategy, STRATEGIES)
        self.strategy = strategy
        self.prefer_fast = prefer_fast
        self.name = f"consolidated-{strategy}"

    def place(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement | None:
        return consolidate(free, view.node_speed, num_gpus, self.strategy, self.prefer_fast)


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
