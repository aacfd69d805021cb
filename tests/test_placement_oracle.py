"""The oracle rollout placer (issue 17's bound): exact, never worse than its base, checked."""

from __future__ import annotations

import numpy as np
import pytest

import cluster_envs
from baselines.placement.oracle import (
    CANDIDATE_SETS,
    INFORMATION,
    candidate_placements,
    play_oracle,
    rollout_cost,
)
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_policy
from cluster_envs.policies.placement import ConsolidatedPlacement
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import fork, play_out
from cluster_envs.types import Allocate, Decision
from cluster_envs.workload import synthetic_workload

CLUSTER = "hetero-small"
CONFIG = {"node_interference": 0.1}


def _workload(seed: int):
    return synthetic_workload(
        num_jobs=14, cluster=CLUSTER, seed=seed, load=1.5,
        gpu_demand_probs={1: 0.3, 2: 0.3, 4: 0.3, 8: 0.1},
    )  # fmt: skip


def _sim(seed: int) -> Simulator:
    return Simulator(_workload(seed).jobs, CLUSTER, CONFIG, seed=0)


def _first_decision(seed: int):
    """``(sim, view, head job, free GPUs)`` at the episode's first instant where the head
    job fits."""
    sim = _sim(seed)
    while not sim.done:
        sim.step()
        view = sim.view()
        if view.queued_ids and view.requested_gpus(view.queued_ids[0]) <= view.free_gpus.sum():
            return sim, view, view.queued_ids[0], view.free_gpus.copy()
    raise AssertionError("no decision")


def test_base_candidates_replay_the_fifo_episode_exactly() -> None:
    expected = cluster_envs.simulate(
        _workload(3), policy="fifo", cluster=CLUSTER, seed=0, config=CONFIG
    )
    result = play_oracle(_sim(3), candidates="base")
    assert result.metrics == expected
    assert result.deviations == 0 and result.rollouts == 0 and result.decisions == 14


@pytest.mark.parametrize("candidates", ["greedy", "full"])
@pytest.mark.parametrize("seed", [1, 2, 4])
def test_true_oracle_is_never_worse_than_first_fit(candidates: str, seed: int) -> None:
    fifo = make_policy("fifo")
    fifo.reset(0)
    base = play_out(_sim(seed), fifo)["avg_jct_s"]
    result = play_oracle(_sim(seed), candidates=candidates, max_candidates=6)
    assert result.metrics["num_finished"] == 14
    assert result.metrics["avg_jct_s"] <= base * (1 + 1e-12)
    assert result.rollouts > 0
    assert max(result.candidates_per_decision) <= 6


def test_oracle_episode_is_deterministic() -> None:
    a = play_oracle(_sim(2), candidates="full", max_candidates=5, seed=7)
    b = play_oracle(_sim(2), candidates="full", max_candidates=5, seed=7)
    assert a.metrics == b.metrics and a.deviations == b.deviations


def test_candidates_are_distinct_feasible_and_start_with_first_fit() -> None:
    sim, view, head, free = _first_decision(1)
    job = view.job(head)
    options = candidate_placements(view, head, free, "full", max_candidates=8)
    ff = ConsolidatedPlacement("first-fit").place(view, job, job.num_gpus, free.copy())
    assert options[0] == ff
    assert 1 <= len(options) <= 8 and len(set(options)) == len(options)
    for p in options:
        assert sum(g for _, g in p) == job.num_gpus
        assert all(0 < g <= free[n] for n, g in p)
    assert candidate_placements(view, head, free, "base") == [ff]
    assert (free == view.free_gpus).all()  # the caller's free GPUs are not taken


def test_lengths_and_believed_forks_leave_the_simulator_untouched() -> None:
    sim, view, head, free = _first_decision(4)
    decision = Decision((Allocate(head, candidate_placements(view, head, free, "base")[0]),))
    fifo = make_policy("fifo")
    before = (sim.now_s, sim.finish_s.copy(), len(sim.queue))
    costs = {info: rollout_cost(sim, fifo, decision, info) for info in INFORMATION}
    assert (sim.now_s, len(sim.queue)) == before[::2] and np.array_equal(
        sim.finish_s, before[1], equal_nan=True
    )
    assert all(np.isfinite(c) and c > 0 for c in costs.values())
    # Without future arrivals the fork averages over the jobs submitted so far only.
    sim_copy, _ = fork(sim, None)
    assert sim_copy.drop_arrivals() > 0
    assert sim_copy.next_event_time() >= sim.now_s


def test_bad_settings_fail_with_their_name() -> None:
    _, view, head, free = _first_decision(1)
    with pytest.raises(ConfigError, match="unknown candidate set 'all'.*base, greedy, full"):
        candidate_placements(view, head, free, "all")
    with pytest.raises(ConfigError, match="max_candidates must be an integer >= 1, got 0"):
        candidate_placements(view, head, free, "full", max_candidates=0)
    with pytest.raises(ConfigError, match="unknown information 'future'"):
        play_oracle(_sim(1), information="future")
    assert CANDIDATE_SETS == ("base", "greedy", "full")
