"""Measured step times of the Pollux testbed, interpolated as Pollux's artifact does.

The Pollux artifact's simulator (``simulator/applications.py``, petuum/adaptdl branch
``osdi21-artifact``) takes a job's *true* speed from step and sync times measured on its
16 x 4 T4 testbed, per placement and per-GPU (local) batch size:

* a placement with a measured row (every placement of 1-4 nodes, keyed by the rotation
  of its per-node GPU counts that reads smallest, e.g. ``(4, 4, 1)`` -> ``144``):
  linear interpolation in the local batch;
* any other placement (5+ nodes): linear interpolation over (nodes, GPUs, local batch)
  of the per-(nodes, GPUs, local batch) means of those rows plus the 6-16-node
  ``scalability`` rows (Delaunay, as ``scipy.interpolate.LinearNDInterpolator``), with
  nodes capped at 16.

:class:`MeasuredThroughput` is a :class:`~cluster_envs.perf.speed.SpeedModel` over these
tables for a job at a fixed global batch size, with the artifact's micro-batch rule;
:meth:`MeasuredTable.iteration_time` serves adaptive-batch jobs
(:class:`~cluster_envs.perf.goodput.GoodputSpeed`). Outside what was measured (a local
batch beyond the profiled range, more than 64 GPUs) both fall back to the model zoo's
fitted all-reduce model, which covers any shape; the artifact would stop there instead.
Other GPU types and networks scale the measured compute part (``step - sync``) by the
compute speed and the cross-node sync by the network speed, as the fitted model does.

The tables (``cluster_envs/data/pollux_throughput.json``) are written by
``scripts/make_measured_throughput.py``; see ``cluster_envs/data/DATA_LICENSES.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from scipy.interpolate import LinearNDInterpolator

from cluster_envs.config import unknown_name
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import shape_totals
from cluster_envs.perf.throughput import CEIL_EPS, PolluxThroughput
from cluster_envs.types import Immutable

MEASURED_FILE = "pollux_throughput.json"
#: Nodes beyond which the artifact reads the 16-node measurements.
MAX_MEASURED_NODES = 16


def measured_data() -> dict[str, Any]:
    """The shipped tables, loaded once."""
    return zoo.shipped_json(MEASURED_FILE)


def placement_key(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The artifact's key of a placement: zero counts dropped, smallest rotation.

    >>> placement_key((4, 0, 4, 1))
    (1, 4, 4)
    """
    used = tuple(g for g in shape if g)
    return min(used[i:] + used[:i] for i in range(len(used)))


@dataclass(eq=False)
class MeasuredTable:
    """One model's measured ``(step_time, sync_time)`` per placement and local batch.

    Attributes:
        name: Zoo model name.
        placements: Placement key -> ``(local_bsz, step_time, sync_time)`` arrays,
            ascending in local batch.
        points: ``(nodes, GPUs, local batch)`` rows of the many-node interpolation.
        values: ``(step_time, sync_time)`` at ``points``.
    """

    name: str
    placements: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]]
    points: np.ndarray
    values: np.ndarray
    _interpolator: LinearNDInterpolator | None = field(default=None, repr=False)
    _memo: dict[tuple[tuple[int, ...], int], tuple[float, float] | None] = field(
        default_factory=dict, repr=False
    )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Copies and pickles (vector-env workers, mid-episode deepcopies) share the one
        # cached table instead of copying arrays and a triangulation.
        return get_table, (self.name,)

    def step_sync(self, shape: tuple[int, ...], local_bsz: int) -> tuple[float, float] | None:
        """Measured ``(step_time, sync_time)`` s of one micro-step, or ``None`` if not measured.

        Args:
            shape: GPUs used on each node (order as placed; see :func:`placement_key`).
            local_bsz: Per-GPU micro-batch (samples).
        """
        key = (placement_key(shape), int(local_bsz))
        if key not in self._memo:
            self._memo[key] = self._lookup(*key)
        return self._memo[key]

    def _lookup(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float] | None:
        rows = self.placements.get(placement)
        if rows is not None:
            bsz, step, sync = rows
            if not bsz[0] <= local_bsz <= bsz[-1]:
                return None
            return float(np.interp(local_bsz, bsz, step)), float(np.interp(local_bsz, bsz, sync))
        if self._interpolator is None:
            self._interpolator = LinearNDInterpolator(self.points, self.values)
        nodes = min(len(placement), MAX_MEASURED_NODES)
        found = self._interpolator([[nodes, sum(placement), local_bsz]])[0]
        if not np.all(np.isfinite(found)):
            return None
        return float(found[0]), float(found[1])

    def iteration_time(
        self,
        shape: tuple[int, ...],
        local_bsz: int,
        accum_steps: int,
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float | None:
        """Seconds per iteration of ``accum_steps + 1`` micro-steps of ``local_bsz``.

        The first ``accum_steps`` micro-steps cost the compute part ``step - sync``, the
        last one the full step (it overlaps the sync). ``None`` where not measured.
        """
        found = self.step_sync(shape, local_bsz)
        if found is None:
            return None
        step, sync = found
        grad = max(step - sync, 0.0) / compute_speed
        nodes = sum(1 for g in shape if g)
        last = grad + (sync / network_speed if nodes > 1 else sync)
        return last + accum_steps * grad


@cache
def get_table(name: str) -> MeasuredTable:
    """The measured table of zoo model ``name``.

    Raises:
        ConfigError: No measurements for ``name`` (with a close-match suggestion).
    """
    models = measured_data()["models"]
    if name not in models:
        raise unknown_name("measured model", name, models, listed="models")
    raw = models[name]
    placements = {}
    grouped: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for key, rows in raw["placements"].items():
        arr = np.asarray(rows, dtype=float)
        shape = tuple(int(c) for c in key)
        placements[shape] = (arr[:, 0], arr[:, 1], arr[:, 2])
        for bsz, step, sync in rows:
            grouped.setdefault((len(shape), sum(shape), bsz), []).append((step, sync))
    # The artifact's groupby(["num_nodes", "num_replicas", "local_bsz"]).mean(), in
    # sorted key order, then the scalability rows appended.
    means = [(*k, *np.mean(grouped[k], axis=0)) for k in sorted(grouped)]
    table = np.asarray(means + [tuple(r) for r in raw["scalability"]], dtype=float)
    return MeasuredTable(name, placements, table[:, :3].copy(), table[:, 3:].copy())


def measured_speed_model(name: str, batch_size: int) -> MeasuredThroughput:
    """The measured-table speed model of zoo model ``name`` at global ``batch_size``."""
    info = zoo.get_model(name)
    return MeasuredThroughput(
        get_table(name), zoo.speed_model(name, batch_size),
        info.batch_sizes[0], info.batch_sizes[-1],
    )  # fmt: skip


def micro_batches(batch_size: int, replicas: int, max_local_bsz: int) -> tuple[int, int]:
    """``(accum_steps, local_bsz)`` of ``batch_size`` on ``replicas`` GPUs (Pollux's rule).

    ``s = ceil(B / K / max_local_bsz)`` micro-steps of ``ceil(B / K / s)`` samples.
    """
    local = batch_size / replicas
    steps = max(math.ceil(local / max_local_bsz - CEIL_EPS), 1)
    return steps - 1, math.ceil(local / steps - CEIL_EPS)


@dataclass(frozen=True)
class MeasuredThroughput(Immutable):
    """Iterations/s of a fixed-batch job from the measured tables (the artifact's truth).

    The micro-batch rule is the artifact's for jobs with a set batch size
    (``Job.update_local_bsz``): ``local = ceil(B / K)``, ``accum = ceil(local /
    max_local_bsz) - 1`` -- at least 1 on one GPU when ``B`` exceeds the model's initial
    batch -- ``micro = ceil(local / (accum + 1))``, and no more than ``max_batch_size``
    samples per iteration in all.

    Attributes:
        table: The model's measurements.
        fitted: The zoo's fitted model at the same batch, for what was not measured.
        init_batch_size: The model's initial (smallest profiled) batch.
        max_batch_size: The model's largest batch.
    """

    table: MeasuredTable
    fitted: PolluxThroughput
    init_batch_size: int
    max_batch_size: int

    @property
    def batch_size(self) -> int:
        """Global batch size (samples per iteration)."""
        return self.fitted.batch_size

    def with_batch_size(self, batch_size: int) -> MeasuredThroughput:
        """The same tables at another global batch size."""
        return MeasuredThroughput(
            self.table, self.fitted.with_batch_size(batch_size),
            self.init_batch_size, self.max_batch_size,
        )  # fmt: skip

    def iteration_time(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Seconds per iteration on the given placement shape.

        Raises:
            ValueError: Empty or all-zero placement, or non-positive speeds.
        """
        replicas, _ = shape_totals(gpus_per_node, compute_speed, network_speed)
        batch = self.batch_size
        local = math.ceil(batch / replicas - CEIL_EPS)
        accum = math.ceil(local / self.fitted.max_local_bsz - CEIL_EPS) - 1
        if replicas == 1 and batch > self.init_batch_size:
            accum = max(1, accum)
        micro = math.ceil(local / (accum + 1) - CEIL_EPS)
        micro = min(micro, self.max_batch_size // (replicas * (accum + 1)))
        found = self.table.iteration_time(gpus_per_node, micro, accum, compute_speed, network_speed)
        if found is None:
            return self.fitted.iteration_time(gpus_per_node, compute_speed, network_speed)
        return found

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Iterations per second (see :class:`~cluster_envs.perf.speed.SpeedModel`)."""
        return 1.0 / self.iteration_time(gpus_per_node, compute_speed, network_speed)


__all__ = [
    "MeasuredTable",
    "MeasuredThroughput",
    "get_table",
    "measured_data",
    "measured_speed_model",
    "micro_batches",
    "placement_key",
]
