"""Interference between jobs that share nodes and links.

Two effects, both off the fitted speed models' own terms:

* **Link contention** (on by default): a job spanning several nodes synchronises over
  each node's network link. When ``c`` distributed jobs use the same node, they split its
  bandwidth, so each sees the inter-node network ``c`` times slower (its cross-node sync
  time grows; its compute does not). A job takes the worst of its nodes.
* **Node interference** (off by default, ``node_interference`` in SimConfig): jobs sharing
  a node compete for PCIe, CPU and memory bandwidth; each extra job on the busiest shared
  node slows compute by that fraction.

Single-node jobs are untouched by link contention, so Philly-style 1-GPU workloads run
exactly as without it.
"""

from __future__ import annotations

from typing import Any

from cluster_envs.sim.copying import copy_sharing
from cluster_envs.types import Placement


class Contention:
    """Tracks which active jobs sit on which node and derives their slowdowns.

    Args:
        num_nodes: Nodes in the cluster.
        link_contention: Split a node's inter-node bandwidth among the distributed jobs
            using it.
        node_interference: Fractional compute slowdown per extra job on a shared node.
    """

    def __init__(self, num_nodes: int, link_contention: bool, node_interference: float) -> None:
        self.link_contention = link_contention
        self.node_interference = node_interference
        self.enabled = link_contention or node_interference > 0
        self.jobs_on: list[set[int]] = [set() for _ in range(num_nodes)]
        self.distributed_on = [0] * num_nodes
        self._placement: dict[int, Placement] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> Contention:
        """A fork's copy: the per-node counts and the placements (tuples) copied one level,
        the per-node job sets deep (:mod:`cluster_envs.sim.copying`)."""
        return copy_sharing(self, memo, ("distributed_on", "_placement"))

    def add(self, j: int, placement: Placement) -> set[int]:
        """Register job ``j`` on its nodes; returns the other jobs whose speed may change."""
        if not self.enabled:
            return set()
        self._placement[j] = placement
        distributed = len(placement) > 1
        affected: set[int] = set()
        for node, _ in placement:
            affected |= self._affected_on(node, distributed)
            self.jobs_on[node].add(j)
            if distributed:
                self.distributed_on[node] += 1
        affected.discard(j)
        return affected

    def remove(self, j: int) -> set[int]:
        """Unregister job ``j``; returns the jobs whose speed may change."""
        placement = self._placement.pop(j, None)
        if placement is None:
            return set()
        distributed = len(placement) > 1
        affected: set[int] = set()
        for node, _ in placement:
            self.jobs_on[node].discard(j)
            if distributed:
                self.distributed_on[node] -= 1
            affected |= self._affected_on(node, distributed)
        return affected

    def _affected_on(self, node: int, distributed: bool) -> set[int]:
        if self.node_interference > 0:
            return set(self.jobs_on[node])
        if distributed and self.link_contention:
            return {k for k in self.jobs_on[node] if len(self._placement[k]) > 1}
        return set()

    def factors(self, j: int, placement: Placement) -> tuple[float, float]:
        """``(compute_divisor, network_divisor)`` for job ``j`` on ``placement``."""
        if not self.enabled:
            return 1.0, 1.0
        interference = self.node_interference
        if len(placement) == 1:  # no link contention; the one node's crowd
            if interference > 0:
                crowd = len(self.jobs_on[placement[0][0]])
                return (1.0 + interference * (crowd - 1) if crowd > 1 else 1.0), 1.0
            return 1.0, 1.0
        network = 1.0
        if self.link_contention:
            distributed_on = self.distributed_on
            most = 1
            for n, _ in placement:
                if distributed_on[n] > most:
                    most = distributed_on[n]
            network = float(most)
        compute = 1.0
        if interference > 0:
            jobs_on = self.jobs_on
            crowd = 1
            for n, _ in placement:
                if len(jobs_on[n]) > crowd:
                    crowd = len(jobs_on[n])
            compute = 1.0 + interference * (crowd - 1)
        return compute, network
