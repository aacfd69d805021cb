"""MoldableScheduling observations: cluster state -> a flat, normalised float32 vector.

Every value lies in [0, 1] (normalisers in :mod:`cluster_envs.envs.normalise`, re-exported
here). Job lengths are always *estimates* (:mod:`cluster_envs.sim.estimate`): the prior for
a job that has not run, the fitted loss curve for one that has. The layout (every index's
name) is declared once by :func:`moldable_layout`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.config import GPU_SPEED, REFERENCE_INTER_NODE_GBPS, ClusterConfig
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.normalise import (
    MODEL_NAMES,
    TIME_NORM_S,
    norm_time,
    norm_times,
    prior_curve_features,
    squash,
)
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import packed_shape

if TYPE_CHECKING:
    from cluster_envs.envs.moldable import MoldableConfig
    from cluster_envs.perf.speed import SpeedModel
    from cluster_envs.sim.engine import Simulator

__all__ = [
    "MODEL_NAMES",
    "QUEUE_NORM",
    "TIME_NORM_S",
    "MoldableEncoder",
    "moldable_layout",
    "norm_time",
    "norm_times",
    "prior_curve_features",
    "squash",
]

#: Queue lengths are normalised against this many jobs.
QUEUE_NORM = 200.0


def moldable_layout(
    window: int, levels: tuple[int, ...], gpus_per_node: int, num_running_slots: int
) -> ObsLayout:
    """The MoldableScheduling observation: ``window`` job slots, then the cluster."""
    per_slot = ["present", "age", "requested_gpus", "min_gpus", "max_gpus"]
    per_slot += [f"est_runtime@{lv}" for lv in levels]
    per_slot += [f"feasible@{lv}" for lv in levels]
    per_slot += ["prior_curve_b0", "prior_curve_b1", "prior_curve_b2"]
    per_slot += [f"model={m}" for m in MODEL_NAMES]
    cluster = ["free_gpu_fraction"]
    cluster += [f"nodes_with_free={g}" for g in range(gpus_per_node + 1)]
    cluster.append("running_jobs")
    for i in range(num_running_slots):
        cluster += [f"running_remaining_{i}", f"running_gpus_{i}"]
    cluster += ["queue_beyond_window", "queued_gpu_demand"]
    return ObsLayout(tuple(per_slot), window, tuple(cluster))


class MoldableEncoder:
    """Encodes the MoldableScheduling state (see :meth:`describe` for every index).

    Per window slot (K slots, in queue order), ``slot_size`` values:
    ``present``, ``age``, ``requested_gpus``, ``min_gpus``, ``max_gpus`` (GPU counts over
    the largest level), ``est_runtime@L`` for each level L (0 if not allowed),
    ``feasible@L`` for each level, ``prior_curve_b0/b1/b2``, ``model=<name>`` one-hot.
    Then the cluster: ``free_gpu_fraction``, ``nodes_with_free=g`` for g = 0..G (fraction
    of nodes), ``running_jobs`` (over total GPUs), ``running_remaining_i`` and
    ``running_gpus_i`` for the ``num_running_slots`` running jobs closest to finishing,
    ``queue_beyond_window``, ``queued_gpu_demand``.
    """

    def __init__(self, config: MoldableConfig, cluster: ClusterConfig) -> None:
        self.config = config
        self.levels = config.levels
        self.max_level = float(config.levels[-1])
        self.gpus_per_node = cluster.max_gpus_per_node
        self.num_gpus = cluster.num_gpus
        self.best_speed = max(GPU_SPEED[g.gpu_type] for g in cluster.node_groups)
        self.network = cluster.inter_node_gbps / REFERENCE_INTER_NODE_GBPS
        self.layout = moldable_layout(
            config.window, self.levels, self.gpus_per_node, config.num_running_slots
        )
        self.slot_size = self.layout.slot_size
        self.cluster_size = self.layout.global_size
        self.space = self.layout.space()
        self._slot_cache: dict[int, np.ndarray] = {}
        self._rate_cache: dict[tuple[int, int], float] = {}

    def reset(self) -> None:
        """Forget per-episode caches (ids of speed models are only unique within one)."""
        self._slot_cache = {}
        self._rate_cache = {}

    def describe(self) -> list[str]:
        """The name of every observation index."""
        return self.layout.describe()

    def _static_slot(self, sim: Simulator, j: int) -> np.ndarray:
        """Slot features that do not change while the job waits (cached per job)."""
        cached = self._slot_cache.get(j)
        if cached is not None:
            return cached
        spec = sim.jobs[j]
        remaining = sim.estimator.remaining(j)
        out = np.zeros(self.slot_size, dtype=np.float32)
        out[0] = 1.0
        out[2] = min(spec.num_gpus / self.max_level, 1.0)
        out[3] = min(spec.min_gpus / self.max_level, 1.0)
        out[4] = min(spec.max_gpus / self.max_level, 1.0)
        for i, lv in enumerate(self.levels):
            if spec.min_gpus <= lv <= spec.max_gpus:
                out[5 + i] = norm_time(remaining / self._rate(spec.speed, lv))
        base = 5 + 2 * len(self.levels)
        out[base : base + 3] = prior_curve_features(spec.model)
        model = spec.model if spec.model in zoo.ZOO_MODELS else "other"
        out[base + 3 + MODEL_NAMES.index(model)] = 1.0
        self._slot_cache[j] = out
        return out

    def _rate(self, speed: SpeedModel, level: int) -> float:
        """Iterations/s of ``speed`` packed at ``level`` GPUs on the fastest type (cached)."""
        key = (id(speed), level)
        rate = self._rate_cache.get(key)
        if rate is None:
            shape = packed_shape(level, self.gpus_per_node)
            rate = self._rate_cache[key] = speed.throughput(shape, self.best_speed, self.network)
        return rate

    def encode(self, sim: Simulator, window: list[int], mask: np.ndarray) -> np.ndarray:
        """The observation for the current state."""
        obs = np.zeros(self.space.shape[0], dtype=np.float32)
        p = len(self.levels)
        now = sim.now_s
        size, jobs = self.slot_size, sim.jobs
        for k, j in enumerate(window):
            start = k * size
            obs[start : start + size] = self._static_slot(sim, j)
            obs[start + 1] = norm_time(now - jobs[j].submit_time_s)
        if window:  # every slot's feasible@ row at once
            rows = obs[: len(window) * size].reshape(len(window), size)
            rows[:, 5 + p : 5 + 2 * p] = mask[: len(window) * p].reshape(len(window), p)
        c = self.config.window * self.slot_size
        inv = sim.inventory
        obs[c] = inv.num_free / inv.num_gpus
        hist = np.bincount(
            np.minimum(inv.free, self.gpus_per_node), minlength=self.gpus_per_node + 1
        )
        obs[c + 1 : c + 2 + self.gpus_per_node] = hist / len(inv.free)
        c += 2 + self.gpus_per_node
        obs[c] = min(len(sim.active) / self.num_gpus, 1.0)
        c += 1
        m = self.config.num_running_slots
        if m and sim.active:
            ids = np.fromiter(sim.active, dtype=np.int64, count=len(sim.active))
            rate = sim.rate[ids]
            left = sim.estimator.remaining_many(ids)
            secs = np.divide(left, rate, out=np.zeros_like(left), where=rate > 0)
            order = np.lexsort((sim.num_gpus_held[ids], secs))[:m]
            k = len(order)
            obs[c : c + 2 * k : 2] = norm_times(secs[order])
            obs[c + 1 : c + 2 * k : 2] = np.minimum(
                sim.num_gpus_held[ids][order] / self.max_level, 1.0
            )
        c += 2 * m
        beyond = max(len(sim.queue) - len(window), 0)
        obs[c] = min(math.log1p(beyond) / math.log1p(QUEUE_NORM), 1.0)
        demand = sum(sim.jobs[j].num_gpus for j in sim.queue)
        obs[c + 1] = min(demand / self.num_gpus, 1.0)
        return obs
