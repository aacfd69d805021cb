"""Round-based GPU allocation: which jobs are eligible, the projection rule, placement.

One deterministic rule turns *requested* GPU counts into a feasible :class:`Decision`;
the MetisAllocation envs apply it to the agent's action and the allocation baselines
(``baselines/allocation.py``) to their own requests, so a heuristic gives the same
trajectory through the env and through the no-gym runner. Pure numpy: no gymnasium.

**Eligible jobs.** The ``num_slots`` lowest job ids among the submitted, unfinished jobs
(ids follow submission order in every :class:`~cluster_envs.workload.Workload`). A job
stays eligible until it finishes (no job with a lower id can arrive later); the others
wait, unallocated, in submission order.

**Projection** (:func:`project_counts`), over the eligible jobs in id order:

1. clamp each request to ``{0} U [min_gpus, max_gpus]`` (a positive request below
   ``min_gpus`` is raised to it);
2. if the requests exceed the capacity ``C`` (free GPUs + GPUs held by eligible jobs),
   cut the largest first (water-filling): each job gets ``min(request, L)`` with ``L``
   the largest level such that the sum fits, and the ``C - sum`` GPUs left go one each
   to the jobs whose request exceeded ``L``, in id order;
3. a job left with fewer than its ``min_gpus`` gets 0.

So the result never exceeds ``C``, and feasible requests pass unchanged.

**Placement** (:func:`plan_allocation`): a job whose count is unchanged keeps its GPUs
(no rescale cost). First every shrinking job releases GPUs: to 0 it is preempted;
otherwise it keeps its GPUs on the nodes where it holds the most (ties: lower node id).
Then every growing or starting job, largest count first (ties: id order), is placed,
counting its own GPUs as free: on one node if one fits it (best fit: the fitting node
with the fewest free GPUs; fastest GPU type first, ties lower id), else on the fewest
nodes (most free GPUs first) of the fastest type that has room, else of any type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.policies.placement import SMALL_CLUSTER, consolidate
from cluster_envs.sim.queue import QueueSnapshot
from cluster_envs.types import Allocate, Decision, Immutable, Placement

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.sim.view import ClusterView, JobTable

#: Jobs an allocation decision covers by default (the env's action slots).
DEFAULT_NUM_SLOTS = 32


def eligible_ids(job_ids: Iterable[int], num_slots: int) -> tuple[int, ...]:
    """The ``num_slots`` lowest ids of ``job_ids`` (queued + running), ascending."""
    return tuple(sorted(job_ids)[:num_slots])


def project_counts(
    requests: Sequence[int], min_gpus: Sequence[int], max_gpus: Sequence[int], capacity: int
) -> list[int]:
    """Project requested GPU counts onto a feasible allocation (see the module docstring).

    Args:
        requests: Requested GPUs per job, in priority (id) order; any integers.
        min_gpus: Each job's smallest allowed count (>= 1).
        max_gpus: Each job's largest allowed count.
        capacity: GPUs available to these jobs (>= 0).

    Returns:
        Counts with ``sum <= capacity`` and each 0 or within ``[min, max]``.
    """
    bounds = zip(map(int, requests), map(int, min_gpus), map(int, max_gpus), strict=True)
    # min(max(r, lo), hi) for r > 0, without the calls (the common case first)
    counts = [0 if r <= 0 else r if lo <= r <= hi else min(lo, hi) if r < lo else hi
              for r, lo, hi in bounds]  # fmt: skip
    capacity = max(int(capacity), 0)
    if sum(counts) <= capacity:
        return counts
    low, high = 0, max(counts)  # largest L with sum(min(c, L)) <= capacity
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(c, mid) for c in counts) <= capacity:
            low = mid
        else:
            high = mid - 1
    out = [min(c, low) for c in counts]
    left = capacity - sum(out)
    for i, c in enumerate(counts):
        if not left:
            break
        if c > low:
            out[i] += 1
            left -= 1
    return [0 if 0 < c < int(lo) else c for c, lo in zip(out, min_gpus, strict=True)]


@dataclass(frozen=True)
class AllocationState(Immutable):
    """What the projection and placement read: free GPUs and the eligible jobs' GPUs.

    Attributes:
        free: Free GPUs per node.
        node_speed: GPU speed per node (relative to a T4).
        ids: Eligible job ids, ascending.
        placement: Current placement of each eligible job (empty when queued).
        min_gpus: Smallest allowed count of each eligible job.
        max_gpus: Largest allowed count of each eligible job.

    Immutable (its arrays are never written; the cached properties are pure memos), so a
    fork shares a policy's last state with the original.
    """

    free: np.ndarray
    node_speed: np.ndarray
    ids: tuple[int, ...]
    placement: Mapping[int, Placement]
    min_gpus: Mapping[int, int]
    max_gpus: Mapping[int, int]

    #: The eligible jobs' :class:`~cluster_envs.sim.view.JobTable` when read from a view
    #: (heuristics reuse it instead of reading the view again).
    table: JobTable | None = field(default=None, repr=False, compare=False)

    @cached_property
    def counts(self) -> dict[int, int]:
        """GPUs each eligible job holds now."""
        if self.table is not None:  # the simulator's GPUs-held column: placement sizes
            return dict(zip(self.ids, self.table.num_gpus_held.tolist(), strict=True))
        return {j: sum(g for _, g in self.placement[j]) for j in self.ids}

    @cached_property
    def _bounds(self) -> tuple[list[int], list[int]]:
        if self.table is not None:
            return self.table.min_gpus.tolist(), self.table.max_gpus.tolist()
        return [self.min_gpus[j] for j in self.ids], [self.max_gpus[j] for j in self.ids]

    @cached_property
    def capacity(self) -> int:
        """Free GPUs plus the GPUs the eligible jobs hold."""
        return int(self.free.sum()) + sum(self.counts.values())

    def count(self, job_id: int) -> int:
        """GPUs job ``job_id`` holds now."""
        counts = self.counts
        if job_id in counts:
            return counts[job_id]
        return sum(g for _, g in self.placement[job_id])

    @classmethod
    def from_view(
        cls, view: ClusterView, num_slots: int, previous: AllocationState | None = None
    ) -> AllocationState:
        """The state a policy sees (eligible jobs of ``view``).

        ``previous``, the state of an earlier view of the same simulation, lends its
        bounds when its table shares the static columns of this one (same eligible ids).
        """
        queued = view.queued_ids  # only its num_slots smallest ids can be eligible
        lowest = queued.smallest(num_slots) if isinstance(queued, QueueSnapshot) else queued
        ids = eligible_ids((*lowest, *view.running_ids), num_slots)
        table = view.job_table(ids)
        held = table.num_gpus_held.tolist()
        free = np.asarray(view.free_gpus)
        old = previous.table if previous is not None else None
        if previous is not None and old is not None and old.min_gpus is table.min_gpus:
            min_gpus, max_gpus, bounds = previous.min_gpus, previous.max_gpus, previous._bounds
        else:
            bounds = table.min_gpus.tolist(), table.max_gpus.tolist()
            min_gpus = dict(zip(ids, bounds[0], strict=True))
            max_gpus = dict(zip(ids, bounds[1], strict=True))
        state = cls(
            free=free,
            node_speed=np.asarray(view.node_speed),
            ids=ids,
            placement=dict(zip(ids, table.placement, strict=True)),
            min_gpus=min_gpus,
            max_gpus=max_gpus,
            table=table,
        )
        # The cached properties, from the table (what they would compute, at once).
        vars(state).update(
            counts=dict(zip(ids, held, strict=True)),
            capacity=int(free.sum()) + sum(held),
            _bounds=bounds,
        )
        return state

    @classmethod
    def from_sim(cls, sim: Simulator, num_slots: int) -> AllocationState:
        """The same state read straight from the simulator (cheaper, for envs)."""
        lowest = sim.queued_and_running_ids()[0].smallest(num_slots)
        ids = eligible_ids((*lowest, *sim.active), num_slots)
        jobs, placements = sim.jobs, sim.placement
        placement = {j: placements[j] for j in ids}
        low, high = [jobs[j].min_gpus for j in ids], [jobs[j].max_gpus for j in ids]
        state = cls(
            free=sim.inventory.free.copy(),
            node_speed=sim.inventory.speed,
            ids=ids,
            placement=placement,
            min_gpus=dict(zip(ids, low, strict=True)),
            max_gpus=dict(zip(ids, high, strict=True)),
        )
        # The cached properties, computed as they would be (at once, without their locks):
        # a job's held GPUs are the sum of its placement (the simulator keeps both).
        held = sim.num_gpus_held[np.array(ids, dtype=np.int64)].tolist()
        counts = dict(zip(ids, held, strict=True))
        capacity = int(state.free.sum()) + sum(counts.values())
        vars(state).update(counts=counts, capacity=capacity, _bounds=(low, high))
        return state

    def project(self, requests: Mapping[int, int]) -> dict[int, int]:
        """:func:`project_counts` of ``requests`` (missing eligible jobs request 0)."""
        low, high = self._bounds
        ids = self.ids
        if tuple(requests) == ids:  # every eligible job, in id order (as policies ask)
            asked = list(requests.values())
        else:
            asked = [requests.get(j, 0) for j in ids]
        return dict(zip(ids, project_counts(asked, low, high, self.capacity), strict=True))


def _shrunk(placement: Placement, count: int) -> Placement:
    """Keep ``count`` GPUs of ``placement`` on the nodes where it holds the most."""
    kept: list[tuple[int, int]] = []
    need = count
    for node, gpus in sorted(placement, key=lambda p: (-p[1], p[0])):
        take = min(gpus, need)
        if take:
            kept.append((node, take))
            need -= take
    return tuple(sorted(kept))


def place(free: np.ndarray | list[int], node_speed: np.ndarray, count: int) -> Placement:
    """Consolidated best-fit placement of ``count`` GPUs (``free`` must hold them)."""
    found = consolidate(free, node_speed, count, "best-fit", split="fastest-type")  # type: ignore[arg-type]
    if found is None:
        raise ValueError(f"{count} GPUs do not fit in {int(sum(free))} free")
    return found


def plan_allocation(state: AllocationState, counts: Mapping[int, int]) -> Decision:
    """The decision that gives every eligible job ``counts[j]`` GPUs (see module doc).

    ``counts`` must be feasible (as :meth:`AllocationState.project` returns); jobs whose
    count does not change get no action.
    """
    held = state.counts
    if counts == held or (
        counts.keys() != held.keys() and [counts.get(j, 0) for j in held] == list(held.values())
    ):
        return Decision(())  # nothing changes (the loop below would give no action)
    # Plain ints on a small cluster (consolidate's own path there: the same placements).
    free_gpus = state.free.astype(np.int64)
    small = len(free_gpus) <= SMALL_CLUSTER
    free: Any = free_gpus.tolist() if small else free_gpus
    speed: Any = state.node_speed.tolist() if small else state.node_speed
    actions: list[Allocate] = []
    growing: list[tuple[int, int, int]] = []
    for rank, j in enumerate(state.ids):
        new, current = int(counts.get(j, 0)), held[j]
        if new < current:
            kept = _shrunk(state.placement[j], new)
            for node, gpus in state.placement[j]:
                free[node] += gpus
            for node, gpus in kept:
                free[node] -= gpus
            actions.append(Allocate(j, kept))
        elif new > current:
            growing.append((-new, rank, j))
    for neg_new, _, j in sorted(growing):
        for node, gpus in state.placement[j]:
            free[node] += gpus
        placement = place(free, speed, -neg_new)
        for node, gpus in placement:
            free[node] -= gpus
        actions.append(Allocate(j, placement))
    return Decision(tuple(actions))


def counts_after(state: AllocationState, decision: Decision) -> dict[int, int]:
    """Each eligible job's GPU count once ``decision`` is applied."""
    counts = {j: state.count(j) for j in state.ids}
    for action in decision.actions:
        placement = getattr(action, "placement", ())
        counts[int(action.job_id)] = sum(g for _, g in placement)
    return counts


__all__ = [
    "DEFAULT_NUM_SLOTS",
    "AllocationState",
    "counts_after",
    "eligible_ids",
    "place",
    "plan_allocation",
    "project_counts",
]
