"""Tiresias's discretised two-dimensional least-attained-service scheduler (2D-LAS).

Tiresias (Gu et al., NSDI'19) ranks jobs by *attained service*, GPUs x time received so
far (``JobStatus.attained_gpu_s``), without knowing their lengths. Service is discretised
into queues by thresholds; a job starts in the highest-priority queue and is demoted
when its service crosses a threshold. Jobs are ordered by queue, then FIFO (submission
order) inside a queue, and get their requested GPU count in that order while it fits --
a job that does not fit is skipped (backfilling). Scheduling is preemptive: a running
job outranked by jobs that take its GPUs is stopped and keeps its progress (it pays the
restart cost on resume). Jobs are never resized.

Simplifications: no starvation guard (Tiresias's ``STARVELIMIT`` promotion) and no
placement-profile consolidation decisions (placement is the shared rule of
:mod:`cluster_envs.policies.projection`). Runs over the same eligible jobs as the env.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from baselines.allocation import AllocationPolicy, Requests, job_table
from cluster_envs.errors import ConfigError
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.view import ClusterView

#: Queue thresholds of attained service (GPU-seconds): 1 and 10 GPU-hours.
DEFAULT_THRESHOLDS_GPU_S: tuple[float, ...] = (3600.0, 36000.0)


class TiresiasScheduler(AllocationPolicy):
    """2D-LAS with discretised queues (see the module docstring).

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
        thresholds_gpu_s: Ascending attained-service thresholds between queues.
    """

    name = "tiresias"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        thresholds_gpu_s: Sequence[float] = DEFAULT_THRESHOLDS_GPU_S,
    ) -> None:
        super().__init__(num_slots)
        thresholds = tuple(float(t) for t in thresholds_gpu_s)
        if list(thresholds) != sorted(set(thresholds)) or any(t <= 0 for t in thresholds):
            raise ConfigError(
                f"thresholds_gpu_s must be distinct, ascending and > 0, got {thresholds_gpu_s}"
            )
        self.thresholds = thresholds
        self._bounds = np.array(thresholds)
        # Requested counts of the jobs of a table (their sum and smallest), kept while the
        # simulator shares its static columns (same simulation, same eligible ids).
        self._wants: tuple[np.ndarray, list[int], int, int] | None = None

    def queue_of(self, attained_gpu_s: float) -> int:
        """Queue index (0 = highest priority) of a job with this attained service."""
        return bisect.bisect_right(self.thresholds, attained_gpu_s)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        table = job_table(view, state)
        if self._wants is None or self._wants[0] is not table.num_gpus:  # static columns
            clipped = np.minimum(np.maximum(table.num_gpus, table.min_gpus), table.max_gpus)
            wants = clipped.tolist()
            self._wants = (table.num_gpus, wants, sum(wants), min(wants, default=0))
        _, wants, total, smallest = self._wants
        ids = state.ids
        left = state.capacity
        if total <= left:  # every job fits, whatever the order
            return dict(zip(ids, wants, strict=True))
        queues = np.searchsorted(self._bounds, table.attained_gpu_s, side="right")
        order = np.argsort(queues, kind="stable").tolist()  # ids ascend: (queue, id) order
        counts = dict.fromkeys(ids, 0)
        for i in order:
            if left < smallest:  # no other job fits
                break
            want = wants[i]
            if want <= left:
                counts[ids[i]] = want
                left -= want
        return counts


__all__ = ["DEFAULT_THRESHOLDS_GPU_S", "TiresiasScheduler"]
