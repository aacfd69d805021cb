"""Tetris-style multi-resource packing for moldable jobs.

Tetris (Grandl et al., "Multi-resource packing for cluster schedulers", SIGCOMM'14)
scores every runnable (task, machine) pair by the *alignment* of the task's demand vector
with the machine's free-resource vector, adds a shortest-remaining-work preference, starts
the best pair and repeats until nothing fits.

Here the resource vector is the GPUs of each node. A candidate is a (queued job, level)
pair; its demand is the per-node GPU take of the placement consolidated first-fit would
give it. Both vectors are normalised by the node sizes, and the alignment is their dot
product divided by the free vector's own squared norm, so it lies in ``[0, 1]`` and is 1
when the job would take every free GPU. The work term prefers the least estimated
remaining work (GPU-seconds at that level and placement): ``min_work / work`` in
``(0, 1]``. As in Tetris, the two combine as ``alignment + eps * work_term`` with
``eps = m * mean(alignment) / mean(work_term)`` over the current candidates, so ``m``
(``work_weight``) sets their relative weight independent of units.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from baselines.moldable import (
    DEFAULT_LEVELS,
    MoldableScheduler,
    Plan,
    placement_rate,
    remaining_iterations,
)
from cluster_envs.errors import ConfigError
from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import Placement

#: Default ``m``. Chosen on training seeds 0-19 of MoldableScheduling-v0's ``default``
#: preset from {0, 0.5, 1, 2, 4, 8, 16} (mean avg JCT 47.9k, 6.0k, 5.8k, 4.1k, 3.7k, 3.9k,
#: 4.0k s): in a moldable setting pure packing (m = 0) grabs every free GPU for one job.
DEFAULT_WORK_WEIGHT = 4.0
#: Floor of a candidate's remaining work (GPU-s), so a finished-looking job scores finitely.
MIN_WORK_GPU_S = 1e-9


def alignment(take: np.ndarray, free: np.ndarray, capacity: np.ndarray) -> float:
    """Normalised dot product of a per-node GPU take with the per-node free GPUs.

    Args:
        take: GPUs the candidate would use on each node.
        free: Free GPUs on each node (``take <= free``).
        capacity: GPUs on each node.

    Returns:
        ``<take/c, free/c> / <free/c, free/c>`` in ``[0, 1]`` (0 when nothing is free).
    """
    f = free / capacity
    denom = float(f @ f)
    if denom <= 0:
        return 0.0
    return float((take / capacity) @ f) / denom


class TetrisScheduler(MoldableScheduler):
    """Greedy packing: best alignment plus a shortest-remaining-work preference.

    Args:
        work_weight: Tetris's ``m``: weight of the remaining-work term relative to the
            alignment (0 = pure packing).
        levels: Allowed GPU counts (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """

    name = "tetris"

    def __init__(
        self,
        work_weight: float = DEFAULT_WORK_WEIGHT,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        super().__init__(levels, window, placement)
        if not (work_weight >= 0 and np.isfinite(work_weight)):
            raise ConfigError(f"tetris work_weight must be finite and >= 0, got {work_weight}")
        self.work_weight = float(work_weight)

    def scores(self, view: ClusterView, plan: Plan) -> list[tuple[float, int, int, Placement]]:
        """Every feasible candidate as ``(score, job id, level, placement)``, queue order."""
        capacity = view.total_gpus.astype(float)
        free = plan.free.astype(float)
        rows: list[tuple[float, float, int, int, Placement]] = []
        for j in plan.window():
            job = view.job(j)
            left = remaining_iterations(view, j)
            for n in self._levels(job):
                placement = plan.place(job, n)
                if placement is None:
                    continue
                take = np.zeros_like(free)
                for node, gpus in placement:
                    take[node] = gpus
                work_gpu_s = n * left / placement_rate(view, job, placement)
                rows.append((alignment(take, free, capacity), work_gpu_s, j, n, placement))
        if not rows:
            return []
        align = np.array([r[0] for r in rows])
        work = np.array([r[1] for r in rows])
        work = np.maximum(work, MIN_WORK_GPU_S)
        pref = work.min() / work
        eps = 0.0
        if self.work_weight > 0 and pref.mean() > 0:
            eps = self.work_weight * float(align.mean()) / float(pref.mean())
        total = align + eps * pref
        return [(float(s), r[2], r[3], r[4]) for s, r in zip(total, rows, strict=True)]

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        rows = self.scores(view, plan)
        if not rows:
            return None
        # Highest score; ties go to the earlier job, then the smaller level.
        best = max(range(len(rows)), key=lambda i: (rows[i][0], -i))
        _, j, _, placement = rows[best]
        return j, placement
