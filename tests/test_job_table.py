"""The bulk read-only accessors heuristics use (``ClusterView.job_table``, vectorised
estimates) show exactly what the per-job ``view.job(j)`` / ``view.estimate(j)`` show, leave
the simulator in the same state, and refuse writes; ``greedy_fill``'s heap gives the
choices of the plain round-by-round scan."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable

import numpy as np
import pytest

from baselines.allocation import MIN_GAIN, greedy_fill
from cluster_envs.policies.projection import AllocationState
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import decide_until_settled
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.view import StaleViewError
from cluster_envs.types import JobState
from cluster_envs.workload import load_workload

SCALAR_FIELDS = (
    "submit_time_s", "num_gpus", "min_gpus", "max_gpus", "batch_size", "iterations_done",
    "attained_gpu_s", "num_restarts", "rate_iter_per_s",
)  # fmt: skip


def _sims(policy: str = "tiresias", num_jobs: int = 80) -> tuple[Simulator, Simulator, object]:
    jobs = load_workload("philly-sample", num_jobs=num_jobs, seed=0).jobs
    return (
        Simulator(jobs, "pollux-testbed", seed=0),
        Simulator(jobs, "pollux-testbed", seed=0),
        (make_policy(policy)),
    )


def _checkpoints(sim: Simulator, policy: object, every: int = 15, count: int = 8):
    """Drive ``sim`` with ``policy``; yield at several instants with jobs in the system."""
    policy.reset(0)  # type: ignore[attr-defined]
    seen = 0
    while not sim.done and seen < count:
        for _ in range(every):
            if sim.done:
                break
            sim.step()
            if sim.queue:
                decide_until_settled(sim, policy)  # type: ignore[arg-type]
        if sim.queue or sim.active:
            seen += 1
            yield


def test_job_table_equals_the_per_job_snapshots_through_an_episode() -> None:
    sim, _, policy = _sims()
    checked = running = 0
    for _ in _checkpoints(sim, policy):
        # advance the clock between decisions so progress needs syncing
        view = sim.view()
        ids = sorted((*view.queued_ids, *view.running_ids))
        table = view.job_table(ids)
        assert table.job_ids.tolist() == ids
        for i, j in enumerate(ids):
            status = view.job(j)
            for name in SCALAR_FIELDS:
                assert getattr(table, name)[i] == getattr(status, name), (j, name)
            assert JobState(int(table.state[i])) == status.state
            assert table.placement[i] == status.placement
            assert table.num_gpus_held[i] == sum(g for _, g in status.placement)
            assert table.model[i] == status.model and table.speed[i] is status.speed
            first = table.first_start_s[i]
            assert (status.first_start_s is None) == bool(np.isnan(first))
            if status.first_start_s is not None:
                assert first == status.first_start_s
            running += status.state != JobState.QUEUED
            checked += 1
        estimates = [view.estimate(j) for j in ids]
        assert view.remaining_iterations(ids).tolist() == [
            e.remaining_iterations for e in estimates
        ]
        assert view.total_iterations(ids).tolist() == [e.total_iterations for e in estimates]
    assert checked > 50 and running > 10  # the checkpoints saw queued and running jobs


def test_job_table_syncs_progress_like_job_status_bit_for_bit() -> None:
    by_table, by_status, policy = _sims()
    twin = make_policy("tiresias")
    twin.reset(0)
    for _ in _checkpoints(by_table, policy, every=7):
        while by_status.num_events < by_table.num_events:  # replay the same events
            by_status.step()
            if by_status.queue:
                decide_until_settled(by_status, twin)
        ids = sorted((*by_table.queue, *by_table.active))
        by_table.view().job_table(ids)
        view = by_status.view()
        for j in ids:
            view.job(j)
        for name in ("progress", "attained_gpu_s", "last_update_s", "rate"):
            assert getattr(by_table, name).tobytes() == getattr(by_status, name).tobytes(), name


def test_job_table_is_read_only_fresh_and_rejects_unseen_jobs() -> None:
    sim, _, policy = _sims()
    for _ in _checkpoints(sim, policy, count=1):
        pass
    view = sim.view()
    ids = sorted((*view.queued_ids, *view.running_ids))
    table = view.job_table(ids)
    for name in (*SCALAR_FIELDS, "state", "first_start_s", "job_ids", "num_gpus_held"):
        column = getattr(table, name)
        with pytest.raises(ValueError):
            column[0] = column[0]
    with pytest.raises(ValueError):
        view.remaining_iterations(ids)[0] = 0.0
    before = sim.attained_gpu_s.copy()
    table.attained_gpu_s.setflags(write=False)  # allowed (already read-only) ...
    assert np.array_equal(sim.attained_gpu_s, before)  # ... and the sim is untouched
    unseen = [j for j in range(len(sim.jobs)) if sim.state[j] in (JobState.PENDING, 4)]
    assert unseen
    with pytest.raises(KeyError, match=f"job {unseen[0]} is"):
        view.job_table([ids[0], unseen[0]])
    with pytest.raises(KeyError, match="not in the workload"):
        view.job_table([len(sim.jobs)])
    with pytest.raises(KeyError, match="not in the workload"):
        view.job_table([-1])
    sim.step()
    with pytest.raises(StaleViewError):
        view.job_table(ids)


def _greedy_fill_by_scan(
    state: AllocationState, counts: dict[int, int], utility: Callable[[int, int], float],
    skip_unstarted: bool,
) -> dict[int, int]:  # fmt: skip
    """The round-by-round scan greedy_fill used to run (the reference)."""
    counts = dict(counts)
    left = state.capacity - sum(counts.values())
    while left > 0:
        best_gain, best = MIN_GAIN, None
        for j in state.ids:
            n = counts[j]
            if n == 0 and skip_unstarted:
                continue
            base = utility(j, n)
            for n2 in range(max(n + 1, state.min_gpus[j]), min(state.max_gpus[j], n + left) + 1):
                gain = (utility(j, n2) - base) / (n2 - n)
                if gain > best_gain:
                    best_gain, best = gain, (j, n2)
        if best is None:
            break
        j, n2 = best
        left -= n2 - counts[j]
        counts[j] = n2
    return counts


@pytest.mark.parametrize("seed", range(40))
def test_greedy_fill_matches_the_plain_scan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    num_jobs = int(rng.integers(1, 12))
    ids = tuple(sorted(rng.choice(100, num_jobs, replace=False).tolist()))
    low = {j: int(rng.integers(1, 3)) for j in ids}
    high = {j: low[j] + int(rng.integers(0, 9)) for j in ids}
    start = {j: int(rng.choice([0, low[j]])) for j in ids}
    free = int(rng.integers(0, 24))
    state = AllocationState(
        free=np.array([free]), node_speed=np.array([1.0]), ids=ids,
        placement={j: ((0, start[j]),) if start[j] else () for j in ids},
        min_gpus=low, max_gpus=high,
    )  # fmt: skip
    # Coarse values so that ties (same gain for several jobs or counts) are common.
    table = {(j, n): float(rng.integers(0, 6)) * (n > 0) + (n > 0) for j in ids for n in range(40)}
    if seed % 5 == 0:
        table[(ids[0], high[ids[0]])] = math.nan
    if seed % 5 == 1:  # NaN at a job's first candidate count, where a max() would keep it
        j = ids[-1]
        table[(j, max(start[j] + 1, low[j]))] = math.nan

    def utility(j: int, n: int) -> float:
        return table[(j, n)] + 0.25 * math.sqrt(n) * (seed % 2)

    for skip in (False, True):
        want = _greedy_fill_by_scan(state, start, utility, skip)
        assert greedy_fill(state, start, utility, skip) == want


def test_tables_of_the_same_ids_share_static_columns_and_pickles_drop_the_cache() -> None:
    sim, _, policy = _sims()
    for _ in _checkpoints(sim, policy, count=2):
        pass
    view = sim.view()
    ids = sorted((*view.queued_ids, *view.running_ids))
    first, again = view.job_table(ids), view.job_table(tuple(ids))
    assert again.num_gpus is first.num_gpus and again.model is first.model
    assert again.iterations_done is not first.iterations_done  # dynamic columns: fresh
    other = view.job_table(ids[1:])
    assert other.num_gpus.tolist() == first.num_gpus.tolist()[1:]
    assert other.placement == first.placement[1:] and other.speed == first.speed[1:]
    copy = pickle.loads(pickle.dumps(sim))
    assert "_last_rows" not in vars(copy)
    assert copy.view().job_table(ids).num_gpus.tolist() == first.num_gpus.tolist()


@pytest.mark.parametrize("name", ["tiresias", "fair", "optimus", "slaq", "fifo-rigid"])
def test_allocation_policies_settle_in_one_decision(name: str) -> None:
    """What lets the runner skip the second decide: it would always be empty."""
    sim, _, policy = _sims(name, num_jobs=60)
    assert policy.settles_in_one_decision  # type: ignore[attr-defined]
    policy.reset(0)  # type: ignore[attr-defined]
    decisions = 0
    while not sim.done:
        sim.step()
        if sim.queue and sim.apply(policy.decide(sim.view())):  # type: ignore[attr-defined]
            decisions += 1
            assert not policy.decide(sim.view()).actions  # type: ignore[attr-defined]
    assert decisions > 30


def test_policies_with_their_own_decide_or_placement_do_not_claim_to_settle() -> None:
    for name in ("optimus-oracle", "tiresias-artifact", "pollux"):
        policy = make_policy(name)
        want = name == "tiresias-artifact"  # the artifact's Tiresias is a TiresiasScheduler
        assert getattr(policy, "settles_in_one_decision", False) is want, name
