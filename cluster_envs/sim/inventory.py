"""GPU inventory: which node has how many GPUs free, of which type."""

from __future__ import annotations

import numpy as np

from cluster_envs.config import GPU_SPEED, REFERENCE_INTER_NODE_GBPS, ClusterConfig
from cluster_envs.types import Placement


class GpuInventory:
    """Free and total GPUs per node of one cluster (mutable; owned by the simulator).

    Attributes:
        config: The cluster configuration.
        total: GPUs per node, shape ``(num_nodes,)`` (read-only).
        free: Free GPUs per node, shape ``(num_nodes,)``.
        speed: Compute speed of each node's GPU type relative to a T4 (read-only).
        gpu_type: GPU type name per node.
        network_speed: Inter-node bandwidth relative to the Pollux testbed.
    """

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        totals: list[int] = []
        types: list[str] = []
        for group in config.node_groups:
            totals += [group.gpus_per_node] * group.num_nodes
            types += [group.gpu_type] * group.num_nodes
        self.total = np.asarray(totals, dtype=np.int64)
        self.total.setflags(write=False)
        self.gpu_type = tuple(types)
        self.speed = np.asarray([GPU_SPEED[t] for t in types], dtype=np.float64)
        self.speed.setflags(write=False)
        self._speed_list = self.speed.tolist()
        self.free = self.total.copy()
        self.num_gpus = int(self.total.sum())
        self.num_free = self.num_gpus
        self.network_speed = config.inter_node_gbps / REFERENCE_INTER_NODE_GBPS

    @property
    def num_nodes(self) -> int:
        return len(self.total)

    def take(self, placement: Placement) -> None:
        """Mark the GPUs of ``placement`` busy (caller has checked feasibility)."""
        for node, gpus in placement:
            self.free[node] -= gpus
            self.num_free -= gpus

    def give_back(self, placement: Placement) -> None:
        """Mark the GPUs of ``placement`` free again."""
        for node, gpus in placement:
            self.free[node] += gpus
            self.num_free += gpus

    def shape_and_speed(self, placement: Placement) -> tuple[tuple[int, ...], float]:
        """The placement's shape (GPUs per node, descending) and its slowest GPU's speed."""
        shape = tuple(sorted((g for _, g in placement), reverse=True))
        speed = min(self._speed_list[node] for node, _ in placement)
        return shape, speed
