"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson, IEEE TPDS 2001) for moldable jobs.

Jobs run at their requested size in queue order. When the head job does not fit, it gets
a *reservation*: the earliest time (the *shadow time*) at which enough GPUs will be free,
computed from the running jobs' estimated remaining times. A later job may start now
only if it is estimated to end by the shadow time, or if it uses only *extra* GPUs -- those
free at the shadow time beyond what the head job needs -- so the head job's reservation
never moves later (in the estimated world).

Estimates are observable only: a running job's remaining time is its estimated remaining
iterations (``view.estimate``, prior or fitted loss curve) over its modelled throughput on
its current placement. Jobs started earlier in the same decision count as running, so
asking once per start (the env) and once per instant (the runner) gives the same starts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from baselines.moldable import MoldableScheduler, Plan, placement_rate, remaining_iterations
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Placement


def shadow_time(
    now_s: float, num_free: int, releases: Sequence[tuple[float, int]], need: int
) -> tuple[float, int]:
    """The head job's reservation: when ``need`` GPUs are free, and the GPUs to spare then.

    Args:
        now_s: Current time (s).
        num_free: GPUs free now.
        releases: ``(end_time_s, num_gpus)`` of every running job.
        need: GPUs the head job needs.

    Returns:
        ``(shadow_time_s, extra_gpus)``: the earliest time at which at least ``need`` GPUs
        are free (``now_s`` if already), and how many more than ``need`` are free then
        (every release at exactly the shadow time counted). ``(inf, 0)`` if never.
    """
    avail = num_free
    if avail >= need:
        return now_s, avail - need
    ordered = sorted(releases)
    for end_s, gpus in ordered:
        avail += gpus
        if avail >= need:
            extra = num_free + sum(g for t, g in ordered if t <= end_s) - need
            return end_s, extra
    return math.inf, 0


class EasyBackfillScheduler(MoldableScheduler):
    """EASY backfilling at the requested size (see the module docstring).

    Args:
        levels: Allowed GPU counts; a job runs at the largest level <= its request.
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """

    name = "easy-backfill"

    def _request(self, job: JobStatus) -> int:
        levels = self._levels(job)
        return max((lv for lv in levels if lv <= job.num_gpus), default=levels[0])

    def _prepare(self, view: ClusterView, plan: Plan) -> None:
        # Estimate every running job at every decision, whether or not the head job fits:
        # the estimator refits loss curves when asked, so asking at the same instants on
        # every path keeps the estimates (and the decisions) path-independent.
        self._running: list[tuple[float, int]] = []
        for job in view.running:
            end_s = view.time_s + self._remaining_s(view, job, job.placement)
            self._running.append((end_s, sum(g for _, g in job.placement)))
        self._planned: dict[int, float] = {}

    @staticmethod
    def _remaining_s(view: ClusterView, job: JobStatus, placement: Placement) -> float:
        """Estimated seconds ``job`` still runs on ``placement``."""
        return remaining_iterations(view, job.job_id) / placement_rate(view, job, placement)

    def releases(self, plan: Plan) -> list[tuple[float, int]]:
        """``(end_time_s, gpus)`` of running jobs and of the starts planned so far."""
        planned = [
            (self._planned[j], sum(g for _, g in placement))
            for j, placement in plan.started.items()
        ]
        return self._running + planned

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        window = plan.window()
        if not window:
            return None
        head = view.job(window[0])
        need = self._request(head)
        placement = plan.place(head, need)
        if placement is not None:
            return self._start(view, head, placement)
        shadow_s, extra = shadow_time(view.time_s, plan.num_free, self.releases(plan), need)
        for j in window[1:]:
            job = view.job(j)
            n = self._request(job)
            placement = plan.place(job, n)
            if placement is None:
                continue
            end_s = view.time_s + self._remaining_s(view, job, placement)
            if end_s <= shadow_s or n <= extra:
                return self._start(view, job, placement)
        return None

    def _start(
        self, view: ClusterView, job: JobStatus, placement: Placement
    ) -> tuple[int, Placement]:
        self._planned[job.job_id] = view.time_s + self._remaining_s(view, job, placement)
        return job.job_id, placement
