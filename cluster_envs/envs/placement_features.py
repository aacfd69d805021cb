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
#: ``min(count / JOBS_PER_NODE_NORM, 1.0)`` of the counts below the norm (1.0 above).
_COUNT_FIELD = [min(k / JOBS_PER_NODE_NORM, 1.0) for k in range(int(JOBS_PER_NODE_NORM) + 1)]


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
        self._offset = self.layout.global_offset
        self._nodes_sim: Simulator | None = None  # the node template below is of this one
        self._template = self._base
        self._queue_fields: dict[int, float] = {}  # queue length -> its field
        self._packed_rates: dict[tuple[int, int], tuple[object, float]] = {}
        # (tentative counts, observation, free and total GPUs per node, GPUs requested)
        # of the last call, for the current key.
        self._last: tuple[list[int], np.ndarray, list[int], list[int], int] | None = None

    def describe(self) -> list[str]:
        """The name of every observation index."""
        return self.layout.describe()

    def encode(self, sim: Simulator, head: int | None, tentative: np.ndarray) -> np.ndarray:
        """The observation while job ``head`` (None: none) has ``tentative`` GPUs per node.

        Everything but the tentative GPUs is computed once per simulator state and head
        job (the steps that place one job's GPUs change only those fields: a step after
        the first rewrites the nodes whose tentative count changed).
        """
        if head is None:
            return np.zeros(self.layout.size, dtype=np.float32)
        key = (sim.state_version, head)
        counts = tentative.tolist()
        last = self._last
        if sim is not self._sim or key != self._key or last is None:
            obs = self._base = self._state_part(sim, head)
            self._sim, self._key = sim, key
            inv, need = sim.inventory, sim.jobs[head].num_gpus
            free, total = inv.free.tolist(), inv.total.tolist()
            # (a - b) / c of Python ints rounds as numpy's float64 does
            size, c = self.layout.slot_size, self._offset
            obs[0:c:size] = [(f - t) / n for f, t, n in zip(free, counts, total, strict=True)]
            obs[1:c:size] = [t / need for t in counts]
            last = self._last = (counts, obs, free, total, need)
        else:  # the same state: only the nodes whose tentative count changed
            before, obs, free, total, need = last
            size = self.layout.slot_size
            for k, (now, was) in enumerate(zip(counts, before, strict=True)):
                if now != was:
                    obs[k * size] = (free[k] - now) / total[k]
                    obs[k * size + 1] = now / need
            self._last = (counts, obs, free, total, need)
        left = last[4] - sum(counts)
        obs[self._offset] = min(left / (JOB_GPUS_NORM_NODES * self._big), 1.0)
        return obs.copy()

    def _state_part(self, sim: Simulator, head: int) -> np.ndarray:
        """The fields that do not depend on the tentative GPUs."""
        inv = sim.inventory
        if sim is not self._nodes_sim:  # node speeds and sizes: fixed for the episode
            template = np.zeros(self.layout.size, dtype=np.float32)
            nodes = template[: self._offset].reshape(inv.num_nodes, self.layout.slot_size)
            self._big = float(inv.total.max())
            nodes[:, 2] = inv.speed / self.fastest
            nodes[:, 3] = inv.total / self._big
            self._template, self._nodes_sim = template, sim
            self._packed_rates = {}  # (speed model id, GPUs) -> rate: ids of this episode
        obs = self._template.copy()
        big = self._big
        spec = sim.jobs[head]
        contention = sim.contention
        if contention.enabled:  # counts / 8: exact in any precision
            size, c = self.layout.slot_size, self._offset
            table, top = _COUNT_FIELD, len(_COUNT_FIELD)
            obs[4:c:size] = [table[d] if d < top else 1.0 for d in contention.distributed_on]
            obs[5:c:size] = [table[k] if k < top else 1.0 for k in contention.num_jobs_on]
        c = self._offset
        obs[c + 1] = min(spec.num_gpus / (JOB_GPUS_NORM_NODES * big), 1.0)
        # A pure function of the speed model and the count: once per episode. The entry
        # holds the model, so its id cannot be reused (nor a copy's stale id match).
        key = (id(spec.speed), spec.num_gpus)
        hit = self._packed_rates.get(key)
        if hit is not None and hit[0] is spec.speed:
            rate = hit[1]
        else:
            rate = spec.speed.throughput(
                packed_shape(spec.num_gpus, int(big)), self.fastest, inv.network_speed
            )
            self._packed_rates[key] = (spec.speed, rate)
        obs[c + 2] = norm_time(sim.estimator.remaining(head) / rate)
        obs[c + 3 + model_index(spec.model)] = 1.0
        c += len(JOB_FIELDS)
        queued = len(sim.queue)
        queue_field = self._queue_fields.get(queued)
        if queue_field is None:
            queue_field = min(np.log1p(queued) / np.log1p(QUEUE_NORM), 1.0)
            self._queue_fields[queued] = queue_field
        obs[c] = queue_field
        obs[c + 1] = inv.num_free / inv.num_gpus
        return obs
