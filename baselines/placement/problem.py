"""The batch placement problem: a cluster, its existing load, and a batch of jobs to place.

A :class:`PlacementInstance` is the black box the placers optimise over (and what a later
``JobPlacement-v0`` env can be built on): a heterogeneous cluster, *existing* jobs that
keep running on fixed placements, and a *batch* of ``B`` zoo jobs that all start at
``t = 0``. A configuration gives every batch job a placement (``((node, gpus), ...)``);
its cost is the batch's total JCT from a real simulator run (see
:mod:`baselines.placement.cost`).

Each batch job carries two lengths: its true iterations to convergence (only the
evaluation reads it) and the *estimate* a scheduler would have, fitted on noisy loss
observations of its first ``observed_fraction`` of training
(:func:`baselines.placement.convergence.estimate_iterations`). Existing jobs have trained
long enough that their remaining length is taken as known.

The JSON file format and its reader: :mod:`baselines.placement.instance_json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.config import (
    GPU_SPEED,
    ClusterConfig,
    SimConfig,
)
from cluster_envs.errors import ConfigError
from cluster_envs.types import Placement

#: Defaults of the optional instance fields.
DEFAULT_NODE_INTERFERENCE = 0.1
DEFAULT_OBSERVED_FRACTION = 0.2
DEFAULT_LOSS_NOISE_STD = 0.03


@dataclass(frozen=True)
class BatchJob:
    """A job of the batch to place.

    Attributes:
        name: Label.
        model: Model-zoo name.
        num_gpus: GPUs the job needs (rigid).
        batch_size: Global batch size.
        total_iterations: True iterations to convergence (evaluation only).
        estimated_iterations: The placer's estimate (fitted loss curve).
    """

    name: str
    model: str
    num_gpus: int
    batch_size: int
    total_iterations: float
    estimated_iterations: float


@dataclass(frozen=True)
class ExistingJob:
    """A job already running on a fixed placement (part of the load, never moved).

    Attributes:
        name: Label.
        model: Model-zoo name.
        batch_size: Global batch size.
        placement: Its GPUs, ``((node, gpus), ...)``.
        remaining_iterations: Iterations it still has to run.
    """

    name: str
    model: str
    batch_size: int
    placement: Placement
    remaining_iterations: float


@dataclass(frozen=True)
class PlacementInstance:
    """One batch placement problem (see the module docstring).

    Attributes:
        name: Label (preset and seed for generated instances).
        cluster: The cluster.
        existing: Running jobs with fixed placements.
        batch: The jobs to place, in decoding order.
        node_interference: Compute slowdown per extra job sharing a node (SimConfig).
        link_contention: Distributed jobs sharing a node split its bandwidth (SimConfig).
        observed_fraction: Fraction of each batch job's training whose loss was observed.
        loss_noise_std: Relative noise of those loss observations.
        seed: Seed of the loss-observation noise.
    """

    name: str
    cluster: ClusterConfig
    existing: tuple[ExistingJob, ...]
    batch: tuple[BatchJob, ...]
    node_interference: float = DEFAULT_NODE_INTERFERENCE
    link_contention: bool = True
    observed_fraction: float = DEFAULT_OBSERVED_FRACTION
    loss_noise_std: float = DEFAULT_LOSS_NOISE_STD
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.batch:
            raise ConfigError(f"instance {self.name!r}: the batch has no jobs")
        total = self.total_gpus
        free = total.copy()
        for job in self.existing:
            for node, gpus in job.placement:
                if not 0 <= node < len(total):
                    raise ConfigError(
                        f"instance {self.name!r}: existing job {job.name!r} uses node {node}, "
                        f"cluster has nodes 0..{len(total) - 1}"
                    )
                free[node] -= gpus
                if free[node] < 0:
                    raise ConfigError(
                        f"instance {self.name!r}: existing jobs use more than the "
                        f"{total[node]} GPUs of node {node}"
                    )
        demand = sum(j.num_gpus for j in self.batch)
        if demand > free.sum():
            raise ConfigError(
                f"instance {self.name!r}: the batch needs {demand} GPUs, only "
                f"{int(free.sum())} are free"
            )

    @property
    def total_gpus(self) -> np.ndarray:
        """GPUs per node, shape ``(num_nodes,)``."""
        return np.asarray(
            [g.gpus_per_node for g in self.cluster.node_groups for _ in range(g.num_nodes)],
            dtype=np.int64,
        )

    @property
    def free_gpus(self) -> np.ndarray:
        """GPUs per node not held by existing jobs."""
        free = self.total_gpus
        for job in self.existing:
            for node, gpus in job.placement:
                free[node] -= gpus
        return free

    @property
    def node_speed(self) -> np.ndarray:
        """Compute speed of each node's GPU type relative to a T4."""
        return np.asarray(
            [GPU_SPEED[g.gpu_type] for g in self.cluster.node_groups for _ in range(g.num_nodes)]
        )

    @property
    def node_load(self) -> np.ndarray:
        """Existing jobs on each node."""
        load = np.zeros(self.cluster.num_nodes, dtype=np.int64)
        for job in self.existing:
            for node, _ in job.placement:
                load[node] += 1
        return load

    @property
    def num_gpus(self) -> tuple[int, ...]:
        """GPUs of each batch job."""
        return tuple(j.num_gpus for j in self.batch)

    def sim_config(self) -> SimConfig:
        """Simulator settings of the cost runs."""
        return SimConfig(
            record_timeline=False,
            node_interference=self.node_interference,
            link_contention=self.link_contention,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data that :func:`baselines.placement.instance_json.instance_from_dict` reads back unchanged."""
        cluster = {
            "name": self.cluster.name,
            "node_groups": [
                {"num_nodes": g.num_nodes, "gpus_per_node": g.gpus_per_node, "gpu_type": g.gpu_type}
                for g in self.cluster.node_groups
            ],
            "inter_node_gbps": self.cluster.inter_node_gbps,
        }
        return {
            "name": self.name,
            "cluster": cluster,
            "node_interference": self.node_interference,
            "link_contention": self.link_contention,
            "observed_fraction": self.observed_fraction,
            "loss_noise_std": self.loss_noise_std,
            "seed": self.seed,
            "existing": [
                {
                    "name": j.name,
                    "model": j.model,
                    "batch_size": j.batch_size,
                    "placement": [list(p) for p in j.placement],
                    "remaining_iterations": j.remaining_iterations,
                }
                for j in self.existing
            ],
            "batch": [
                {
                    "name": j.name,
                    "model": j.model,
                    "num_gpus": j.num_gpus,
                    "batch_size": j.batch_size,
                    "total_iterations": j.total_iterations,
                    "estimated_iterations": j.estimated_iterations,
                }
                for j in self.batch
            ],
        }
