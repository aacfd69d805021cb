"""Consolidating placement for round-based allocators (Pollux's artifact policies).

The shared projection (:func:`cluster_envs.policies.projection.plan_allocation`) keeps a
shrinking job on a subset of its GPUs and fits growing jobs into whatever is free, so
after many rounds most jobs span more nodes than they need (on the Pollux workloads
three quarters of the GPU time of an elastic policy ran fragmented, and cross-node
all-reduce is up to 3x slower). The artifact's policies instead re-place every job
whose GPU count changes. :func:`repack_decision` does the same: jobs keeping their
count keep their GPUs; every other job is placed afresh, largest first, by the
consolidated best-fit rule, and the actions are ordered so that each one only uses
GPUs that are free when it is applied.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cluster_envs.policies.projection import AllocationState, place
from cluster_envs.types import Allocate, Decision, Placement


def repack_decision(state: AllocationState, counts: Mapping[int, int]) -> Decision:
    """The decision giving every eligible job ``counts[j]`` GPUs, consolidated.

    ``counts`` must fit in ``state.capacity``. Jobs whose count does not change get no
    action.
    """
    free = state.free.astype(np.int64).copy()
    changed = [j for j in state.ids if int(counts.get(j, 0)) != state.count(j)]
    for j in changed:
        for node, gpus in state.placement[j]:
            free[node] += gpus
    target: dict[int, Placement] = {}
    for j in sorted(changed, key=lambda j: (-int(counts.get(j, 0)), j)):
        n = int(counts.get(j, 0))
        target[j] = place(free, state.node_speed, n) if n > 0 else ()
        for node, gpus in target[j]:
            free[node] -= gpus
    return Decision(tuple(_ordered(state, target)))


def _ordered(state: AllocationState, target: dict[int, Placement]) -> list[Allocate]:
    """Order the moves so each finds its GPUs free (releases and shrinks first)."""
    free = state.free.astype(np.int64).copy()
    pending = sorted(target, key=lambda j: (sum(g for _, g in target[j]), j))
    actions: list[Allocate] = []
    while pending:
        progressed = False
        for j in list(pending):
            avail = free.copy()
            for node, gpus in state.placement[j]:
                avail[node] += gpus
            if all(avail[node] >= gpus for node, gpus in target[j]):
                for node, gpus in target[j]:
                    avail[node] -= gpus
                free = avail
                actions.append(Allocate(j, target[j]))
                pending.remove(j)
                progressed = True
        if not progressed:  # a cycle of swaps: stop one job now, it restarts next round
            j = pending.pop(0)
            if state.placement[j]:
                for node, gpus in state.placement[j]:
                    free[node] += gpus
                actions.append(Allocate(j, ()))
    return actions


__all__ = ["repack_decision"]
