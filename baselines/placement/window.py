"""Joint placement of a queue window inside an episode (issue 17's "place a queue window
jointly", the offline instance shape at a decision point).

At a FIFO decision the head job is often not the only one that starts now: the queued
jobs behind it that fit in the GPUs it leaves start at the same instant. One job at a
time, each is placed while the later ones are not yet fixed (the projection plays them
out with consolidated first-fit). :func:`window_jobs` picks that *window* (the jobs
strict FIFO would start now, after the head); :func:`greedy_plan` places the whole window
with one greedy placer; :func:`joint_search` evaluates the greedy plans first and then
spends a budget of projections on a BO search over the joint space
(:class:`~baselines.placement.encoding.PlacementEncoding` of every window job, within a
trust region around the best greedy plan), so it never returns a plan projected worse
than the best greedy one. :class:`~baselines.placement.online.BOPlacement` decides
which plan to commit (``joint_window``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from baselines.placement.encoding import PlacementEncoding
from baselines.placement.methods import INITIAL_POINTS, TRUST_RADIUS, online_optimizer
from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Placement

Plan = tuple[Placement, ...]
"""One placement per window job, head first."""


def window_jobs(
    view: ClusterView, head: int, free_gpus: int, size: int, skip: set[int]
) -> list[JobStatus]:
    """The queued jobs strict FIFO starts right after ``head`` (at most ``size - 1``).

    Queue order, skipping ``head`` and the ids in ``skip`` (already placed this
    decision); stops at the first job whose requested GPUs exceed what is left of
    ``free_gpus`` (head-of-line blocking: consolidated first-fit fits any job whose GPU
    count fits the free total).
    """
    out: list[JobStatus] = []
    left = free_gpus
    for j in view.queued_ids:
        if len(out) + 1 >= size:
            break
        if j == head or j in skip:
            continue
        status = view.job(j)
        if status.num_gpus > left:
            break
        out.append(status)
        left -= status.num_gpus
    return out


def greedy_plan(
    placer: PlacementPolicy,
    view: ClusterView,
    jobs: Sequence[JobStatus],
    free: np.ndarray,
    first: Placement | None = None,
) -> Plan | None:
    """Every window job placed in order by ``placer`` (the head on ``first`` if given)."""
    left = np.array(free, dtype=np.int64)
    out = []
    for k, job in enumerate(jobs):
        placement = (
            first if k == 0 and first is not None else placer.place(view, job, job.num_gpus, left)
        )
        if placement is None:
            return None
        for node, gpus in placement:
            left[node] -= gpus
        if (left < 0).any():
            return None
        out.append(placement)
    return tuple(out)


def joint_search(
    method: str,
    enc: PlacementEncoding,
    cost: Callable[[Plan], float],
    seeds: Sequence[Plan],
    budget: int,
    seed: int,
) -> list[tuple[float, Plan]]:
    """Every plan evaluated, cheapest first: the ``seeds``, then ``budget`` more.

    With a space of at most ``budget`` points, every point; otherwise skopt's ask/tell
    ``Optimizer`` (``method``) within ``TRUST_RADIUS`` node ranks of the cheapest seed,
    told the seeds that the encoding reproduces exactly.
    """
    seen: dict[Plan, float] = {}
    for plan in seeds:
        if plan not in seen:
            seen[plan] = cost(plan)
    if enc.num_dims and budget > 0:
        if enc.size() <= budget:
            for x in enc.grid():
                plan = enc.decode(x)
                if plan not in seen:
                    seen[plan] = cost(plan)
        else:
            _bo(method, enc, cost, seen, budget, seed)
    return sorted(((v, p) for p, v in seen.items()), key=lambda t: t[0])


def _bo(
    method: str,
    enc: PlacementEncoding,
    cost: Callable[[Plan], float],
    seen: dict[Plan, float],
    budget: int,
    seed: int,
) -> None:
    best = min(seen, key=seen.__getitem__) if seen else None
    if best is not None:
        space: list[Any] = enc.trust_region(enc.encode(best), TRUST_RADIUS)
    else:
        space = enc.skopt_space()
    opt = online_optimizer(method, space, seed, min(INITIAL_POINTS, budget))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for plan, value in seen.items():  # warm start: the seeds the space reproduces
            x = enc.encode(plan)
            if enc.decode(x) == plan and all(
                d.low <= v <= d.high for d, v in zip(space, x, strict=True)
            ):
                opt.tell(x, value)
        for _ in range(budget):
            x = opt.ask()
            plan = enc.decode(x)
            if plan not in seen:
                seen[plan] = cost(plan)
            opt.tell(x, seen[plan])
