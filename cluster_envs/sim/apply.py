"""Validation of a :class:`Decision` against the simulator's read-only state.

A decision is checked action by action against a scratch copy of the free-GPU vector;
:meth:`Simulator.apply` changes anything only if every action is feasible, so a rejected
decision leaves the simulator exactly as it was. Errors name the job and the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.errors import InfeasibleDecisionError
from cluster_envs.types import Allocate, Decision, JobKind, JobState, Placement, Preempt

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator


def _fail(job_id: int, reason: str) -> InfeasibleDecisionError:
    return InfeasibleDecisionError(f"job {job_id}: {reason}")


_PENDING, _FINISHED = int(JobState.PENDING), int(JobState.FINISHED)
_MALLEABLE = JobKind.MALLEABLE
_INT = (int, np.integer)  # a tuple: isinstance(x, int | np.integer) builds a union per call


def _check_job(sim: Simulator, job_id: object, states: np.ndarray, num_jobs: int) -> int:
    if not isinstance(job_id, _INT) or not 0 <= int(job_id) < num_jobs:
        raise InfeasibleDecisionError(f"unknown job {job_id!r} (workload has {num_jobs} jobs)")
    j = int(job_id)
    state = states[j]
    if state == _PENDING:
        raise _fail(j, f"not submitted yet (submits at {sim.jobs[j].submit_time_s:.1f}s)")
    if state == _FINISHED:
        raise _fail(j, "already finished")
    return j


def _check_placement(sim: Simulator, j: int, placement: Placement, free: np.ndarray) -> None:
    num_nodes = len(free)
    seen: set[int] = set()
    total = 0
    for pair in placement:
        if len(pair) != 2:
            raise _fail(j, f"placement entry {pair!r} is not (node, gpus)")
        node, gpus = pair
        if not isinstance(node, _INT) or not 0 <= node < num_nodes:
            raise _fail(j, f"unknown node {node!r} (cluster has {num_nodes} nodes)")
        if node in seen:
            raise _fail(j, f"node {node} appears twice in the placement")
        seen.add(int(node))
        if not isinstance(gpus, _INT) or gpus < 1:
            raise _fail(j, f"GPU count {gpus!r} on node {node} must be a positive integer")
        if gpus > free[node]:
            raise _fail(j, f"node {node} has {int(free[node])} free GPUs, placement asks {gpus}")
        total += int(gpus)
    column = getattr(sim.jobs, "column", None)  # a lazy table: read, don't build the job
    if column is not None and column("min_gpus")[j] <= total <= column("max_gpus")[j]:
        return
    spec = sim.jobs[j]
    if not spec.min_gpus <= total <= spec.max_gpus:
        allowed = (
            f"exactly {spec.num_gpus}"
            if spec.kind is JobKind.RIGID
            else f"{spec.min_gpus}..{spec.max_gpus}"
        )
        raise _fail(j, f"{spec.kind.value} job given {total} GPUs; allowed {allowed}")


def validate_decision(sim: Simulator, decision: Decision) -> None:
    """Check every action of ``decision`` against the simulator's public state.

    Raises:
        InfeasibleDecisionError: Naming the first infeasible action's job and reason.
    """
    free = sim.inventory.free.copy()
    # Each job may appear once per decision, so a job's held GPUs are always the ones the
    # simulator records: validation costs O(actions), not O(running jobs).
    active, states, jobs, placements = sim.active, sim.state, sim.jobs, sim.placement
    num_jobs = len(jobs)
    touched: set[int] = set()
    for action in decision.actions:
        j = _check_job(sim, action.job_id, states, num_jobs)
        if j in touched:
            raise _fail(j, "appears in more than one action of the same decision")
        touched.add(j)
        if isinstance(action, Preempt) or (isinstance(action, Allocate) and not action.placement):
            if j not in active:
                raise _fail(j, "cannot preempt a job that is not running")
            for node, gpus in placements[j]:
                free[node] += gpus
            continue
        if not isinstance(action, Allocate):
            raise InfeasibleDecisionError(f"unknown action {action!r}")
        if action.batch_size is not None and not int(action.batch_size) >= 1:
            raise _fail(j, f"batch_size must be >= 1, got {action.batch_size}")
        if j in active:
            if jobs[j].kind is not _MALLEABLE:
                if tuple(sorted(action.placement)) == placements[j]:
                    continue  # re-stating the current placement is a no-op
                raise _fail(j, f"{jobs[j].kind.value} job is running and cannot be resized")
            for node, gpus in placements[j]:
                free[node] += gpus
        _check_placement(sim, j, action.placement, free)
        for node, gpus in action.placement:
            free[node] -= gpus
