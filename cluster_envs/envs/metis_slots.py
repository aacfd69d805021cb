"""MetisAllocation's slots: which job each action entry addresses, kept until it ends.

The J earliest-submitted jobs in the system are *eligible*; each takes a free slot when
it becomes eligible and keeps it until it finishes, so an agent sees a job at the same
index for its whole life. Also the bridge from a heuristic's Decision to the action that
carries it out through the env's projection.
"""

from __future__ import annotations

import numpy as np

from cluster_envs.errors import InfeasibleDecisionError
from cluster_envs.policies.projection import (
    AllocationState,
    counts_after,
    eligible_ids,
    plan_allocation,
)
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Decision

Slots = list[int | None]


def sync_slots(slots: Slots, sim: Simulator) -> Slots:
    """``slots`` with finished jobs' slots freed and new eligible jobs in free slots."""
    eligible = eligible_ids((*sim.queue, *sim.active), len(slots))
    keep = set(eligible)
    slots = [j if j in keep else None for j in slots]
    placed = {j for j in slots if j is not None}
    free = iter(k for k, j in enumerate(slots) if j is None)
    for j in eligible:
        if j not in placed:
            slots[next(free)] = j
    return slots


def held_gpus(slots: Slots, sim: Simulator) -> np.ndarray:
    """GPUs held by each slot's job (0 for an empty slot)."""
    return np.array([0 if j is None else int(sim.num_gpus_held[j]) for j in slots], np.int64)


def slot_mask(slots: Slots, sim: Simulator, max_gpus: int) -> np.ndarray:
    """Per-slot allowed counts, ``(J, G + 1)``: 0, and ``[min, max]`` of its job."""
    mask = np.zeros((len(slots), max_gpus + 1), dtype=bool)
    mask[:, 0] = True
    for k, j in enumerate(slots):
        if j is not None:
            spec = sim.jobs[j]
            mask[k, spec.min_gpus : spec.max_gpus + 1] = True
    return mask


def action_for_decision(slots: Slots, sim: Simulator, decision: Decision) -> np.ndarray:
    """The per-slot counts whose projection carries out ``decision`` exactly.

    Raises:
        InfeasibleDecisionError: The decision touches a job outside the slots or
            places GPUs otherwise than the env's placement rule would.
    """
    state = AllocationState.from_sim(sim, len(slots))
    for action in decision.actions:
        if int(action.job_id) not in state.ids:
            raise InfeasibleDecisionError(f"job {action.job_id} is not in the env's slots")
    counts = counts_after(state, decision)
    if plan_allocation(state, counts) != decision:
        raise InfeasibleDecisionError(
            f"decision {decision} differs from the env's placement of the same counts"
        )
    return np.array([0 if j is None else counts[j] for j in slots], dtype=np.int64)
