"""JobPlacement observations: every node, then the job being placed, then the queue.

Every value lies in [0, 1]; :func:`placement_layout` declares every index. Per node
(``num_nodes`` slots, ``node{i}.<field>``): free GPU fraction (GPUs the current job has
tentatively taken count as used), GPUs of the current job already put there (over its
request), GPU speed (over the fastest type), node size (over the largest), distributed
jobs using the node and jobs on the node (over :data:`JOBS_PER_NODE_NORM`). Then the
current job: GPUs left to place and requested (over 4 x the largest node), estimated
runtime packed on the fastest type (log time), model one-hot; then the queue length
(log) and the free GPU fraction. With no job to place (episode over) every value is 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.config import GPU_SPEED, ClusterConfig
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.normalise import MODEL_NAMES, model_index, norm_time
from cluster_envs.perf.speed import packed_shape

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: Running-job counts are normalised against this many jobs per node.
JOBS_PER_NODE_NORM = 8.0
#: Queue lengths are normalised against this many jobs.
QUEUE_NORM = 100.0
#: A job's GPU counts are shown over this many of the largest nodes.
JOB_GPUS_NORM_NODES = 4
NODE_FIELDS = (
    "free_fraction",
    "tentative_fraction",
    "speed",
    "size",
    "distributed_jobs",
    "jobs",
)
JOB_FIELDS = (
    "job.gpus_left",
    "job.requested_gpus",
    "job.est_runtime_packed",
    *(f"job.model={m}" for m in MODEL_NAMES),
)
CLUSTER_FIELDS = ("queue_length", "free_gpu_fraction")


def placement_layout(num_nodes: int) -> ObsLayout:
    """The JobPlacement observation: ``num_nodes`` node slots, then job and cluster."""
    return ObsLayout(NODE_FIELDS, num_nodes, JOB_FIELDS + CLUSTER_FIELDS, "node", None)


class PlacementEncoder:
    """Encodes the JobPlacement state (see the module docstring; :meth:`describe`)."""

    def __init__(self, cluster: ClusterConfig) -> None:
        self.layout = placement_layout(cluster.num_nodes)
        self.space = self.layout.space()
        self.fastest = max(GPU_SPEED[g.gpu_type] for g in cluster.node_groups)
        self._sim: Simulator | None = None  # the state part below is of this simulator
        self._key: tuple[int, int] | None = None
        self._base = np.zeros(self.layout.size, dtype=np.float32)
        self._big = 1.0

    def describe(self) -> list[str]:
        """The name of every observation index."""
        return self.layout.describe()

    def encode(self, sim: Simulator, head: int | None, tentative: np.ndarray) -> np.ndarray:
        """The observation while job ``head`` (None: none) has ``tentative`` GPUs per node.

        Everything but the tentative GPUs is computed once per simulator state and head
        job (the steps that place one job's GPUs change only those fields).
        """
        if head is None:
            return np.zeros(self.layout.size, dtype=np.float32)
        key = (sim.state_version, head)
        if sim is not self._sim or key != self._key:
            self._base = self._state_part(sim, head)
            self._sim, self._key = sim, key
        obs = self._base.copy()
        inv = sim.inventory
        spec = sim.jobs[head]
        nodes = obs[: self.layout.global_offset].reshape(inv.num_nodes, self.layout.slot_size)
        nodes[:, 0] = (inv.free - tentative) / inv.total
        nodes[:, 1] = tentative / spec.num_gpus
        left = spec.num_gpus - int(np.add.reduce(tentative))
        obs[self.layout.global_offset] = min(left / (JOB_GPUS_NORM_NODES * self._big), 1.0)
        return obs

    def _state_part(self, sim: Simulator, head: int) -> np.ndarray:
        """The fields that do not depend on the tentative GPUs."""
        obs = np.zeros(self.layout.size, dtype=np.float32)
        inv = sim.inventory
        n = inv.num_nodes
        spec = sim.jobs[head]
        big = self._big = float(inv.total.max())
        nodes = np.zeros((n, self.layout.slot_size), dtype=np.float32)
        nodes[:, 2] = inv.speed / self.fastest
        nodes[:, 3] = inv.total / big
        contention = sim.contention
        if contention.enabled:
            nodes[:, 4] = np.minimum(np.asarray(contention.distributed_on) / JOBS_PER_NODE_NORM, 1)
            crowd = np.array([len(s) for s in contention.jobs_on], dtype=np.float32)
            nodes[:, 5] = np.minimum(crowd / JOBS_PER_NODE_NORM, 1.0)
        obs[: self.layout.global_offset] = nodes.ravel()
        c = self.layout.global_offset
        obs[c + 1] = min(spec.num_gpus / (JOB_GPUS_NORM_NODES * big), 1.0)
        rate = spec.speed.throughput(
            packed_shape(spec.num_gpus, int(big)), self.fastest, inv.network_speed
        )
        obs[c + 2] = norm_time(sim.estimator.remaining(head) / rate)
        obs[c + 3 + model_index(spec.model)] = 1.0
        c += len(JOB_FIELDS)
        obs[c] = min(np.log1p(len(sim.queue)) / np.log1p(QUEUE_NORM), 1.0)
        obs[c + 1] = inv.num_free / inv.num_gpus
        return obs
