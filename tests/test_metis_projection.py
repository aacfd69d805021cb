"""The allocation projection and placement rule: feasible whatever is asked (hypothesis)."""

from __future__ import annotations

import numpy as np
from helpers import make_job
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_envs.policies.projection import (
    AllocationState,
    counts_after,
    eligible_ids,
    plan_allocation,
    project_counts,
)
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import JobKind


@st.composite
def requests_and_limits(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], int]:
    n = draw(st.integers(1, 12))
    lows = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    highs = [lo + draw(st.integers(0, 12)) for lo in lows]
    requests = draw(st.lists(st.integers(-5, 40), min_size=n, max_size=n))
    return requests, lows, highs, draw(st.integers(0, 64))


@settings(max_examples=300, deadline=None)
@given(requests_and_limits())
def test_projection_never_exceeds_capacity_or_limits(case: tuple) -> None:
    requests, lows, highs, capacity = case
    counts = project_counts(requests, lows, highs, capacity)
    assert sum(counts) <= capacity
    for c, lo, hi in zip(counts, lows, highs, strict=True):
        assert c == 0 or lo <= c <= hi
    clamped = [
        0 if r <= 0 else min(max(r, lo), hi)
        for r, lo, hi in zip(requests, lows, highs, strict=True)
    ]
    if sum(clamped) <= capacity:
        assert counts == clamped  # feasible requests pass unchanged
    else:
        assert all(c <= r for c, r in zip(counts, clamped, strict=True))  # only cuts
    assert project_counts(counts, lows, highs, capacity) == counts  # idempotent


def test_projection_cuts_the_largest_requests_first() -> None:
    assert project_counts([8, 2, 6, 1], [1] * 4, [16] * 4, 12) == [5, 2, 4, 1]
    assert project_counts([3, 3, 3], [2, 2, 2], [8, 8, 8], 5) == [2, 2, 0]  # 1 < min -> 0


@st.composite
def cluster_states(draw: st.DrawFn) -> tuple[Simulator, dict[int, int], int]:
    """A real simulator with some malleable jobs running, and arbitrary requests."""
    n = draw(st.integers(1, 10))
    jobs = [
        make_job(i, 0.0, 1e6, 1, kind=JobKind.MALLEABLE, min_gpus=1, max_gpus=8) for i in range(n)
    ]
    sim = Simulator(jobs, "toy", {"rescale_cost_s": 0.0}, seed=0)
    sim.advance_to(0.0)
    num_slots = draw(st.integers(1, 10))
    start = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    state = AllocationState.from_sim(sim, num_slots)
    sim.apply(plan_allocation(state, state.project(dict(zip(range(n), start, strict=True)))))
    requests = dict(enumerate(draw(st.lists(st.integers(-2, 20), min_size=n, max_size=n))))
    return sim, requests, num_slots


@settings(max_examples=150, deadline=None)
@given(cluster_states())
def test_plans_are_accepted_by_the_simulator_and_reach_the_counts(case: tuple) -> None:
    sim, requests, num_slots = case
    state = AllocationState.from_sim(sim, num_slots)
    counts = state.project(requests)
    decision = plan_allocation(state, counts)
    assert counts_after(state, decision) == counts
    sim.apply(decision)  # raises InfeasibleDecisionError if any node is over-committed
    sim.check_invariants()
    held = {j: int(sim.num_gpus_held[j]) for j in state.ids}
    assert held == counts
    assert sum(held.values()) <= sim.inventory.num_gpus
    again = AllocationState.from_sim(sim, num_slots)
    assert not plan_allocation(again, again.project(requests)).actions  # settled


def test_eligible_jobs_are_the_lowest_ids_and_placement_consolidates() -> None:
    assert eligible_ids([9, 3, 7, 1, 5], 3) == (1, 3, 5)
    jobs = [make_job(i, 0.0, 1e6, 1, kind=JobKind.MALLEABLE, max_gpus=8) for i in range(2)]
    sim = Simulator(jobs, "toy", None, seed=0)
    sim.advance_to(0.0)
    state = AllocationState.from_sim(sim, 4)
    decision = plan_allocation(state, {0: 3, 1: 4})
    placements = {a.job_id: a.placement for a in decision.actions}
    assert placements == {1: ((0, 4),), 0: ((1, 3),)}  # largest first, one node each
    assert np.array_equal(state.free, sim.inventory.free)  # planning changes nothing
