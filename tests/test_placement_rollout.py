"""The rollout placer (`fifo-rollout`): the oracle's believed mode as an online policy."""

from __future__ import annotations

import numpy as np
import pytest

import cluster_envs
from baselines.placement.oracle import play_oracle
from baselines.placement.rollout import RolloutScheduler
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.view import StaleViewError
from cluster_envs.workload import synthetic_workload

CLUSTER = "hetero-small"
CONFIG = {"node_interference": 0.1}


def _workload(seed: int):
    return synthetic_workload(
        num_jobs=14, cluster=CLUSTER, seed=seed, load=1.5,
        gpu_demand_probs={1: 0.3, 2: 0.3, 4: 0.3, 8: 0.1},
    )  # fmt: skip


def _run(seed: int, policy, policy_seed: int = 0) -> dict[str, float]:
    return cluster_envs.simulate(
        _workload(seed), policy=policy, cluster=CLUSTER, seed=policy_seed, config=CONFIG
    )


@pytest.mark.parametrize(
    ("seed", "candidates", "cap"), [(1, "full", 12), (2, "full", 5), (4, "greedy", 12)]
)
def test_plays_the_believed_oracle_episode_exactly(seed: int, candidates: str, cap: int) -> None:
    oracle = play_oracle(
        Simulator(_workload(seed).jobs, CLUSTER, CONFIG, seed=3),  # the runner's seeds
        candidates=candidates, max_candidates=cap, seed=3, information="believed",
    )  # fmt: skip
    policy = _unguarded(candidates=candidates, max_candidates=cap)
    metrics = _run(seed, policy, policy_seed=3)
    assert metrics == oracle.metrics
    assert policy.num_decisions == oracle.decisions == 14
    assert policy.num_deviations == oracle.deviations
    assert policy.num_rollouts == oracle.rollouts > 0


def _unguarded(**options) -> RolloutScheduler:
    """The oracle's rule: no margin, no guard (hetero-small has 8 nodes: a small cluster)."""
    rule = {"small_cluster_nodes": None, "fragmentation_weight": 0, "max_extra_nodes": None}
    return RolloutScheduler(**{**rule, **options})


def _same_episode(a: dict[str, float], b: dict[str, float]) -> bool:
    """Equal up to float rounding: one placement per decision applies FIFO's placements
    one at a time, which sums the same rates in another order (a last-bit difference)."""
    return a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-12) for k in a)


def test_first_fit_candidates_only_play_fifo() -> None:
    policy = RolloutScheduler("base")
    assert _same_episode(_run(1, policy), _run(1, "fifo"))
    assert policy.num_rollouts == 0 and policy.num_deviations == 0


def test_deviates_somewhere_and_a_margin_keeps_first_fit() -> None:
    moved = [_unguarded() for _ in range(3)]
    for seed, policy in enumerate(moved, start=1):
        _run(seed, policy)
    assert sum(p.num_deviations for p in moved) > 0
    # A believed saving of 99 % is never met: first-fit's placement every time.
    for strict in (
        _unguarded(improvement_margin=0.99),
        _unguarded(small_cluster_nodes=8, small_cluster_margin=0.99),  # hetero-small: 8 nodes
    ):
        assert _same_episode(_run(1, strict), _run(1, "fifo"))
        assert strict.num_rollouts > 0 and strict.num_deviations == 0
    # On a cluster above small_cluster_nodes the small-cluster margin does not apply.
    big = _unguarded(small_cluster_nodes=7, small_cluster_margin=0.99)
    _run(1, big)
    assert big.num_deviations == moved[0].num_deviations > 0


def _first_view(seed: int):
    sim = Simulator(_workload(seed).jobs, CLUSTER, CONFIG, seed=0)
    while not sim.queue:
        sim.step()
    return sim, sim.view()


def test_fragmentation_guard_charges_a_broken_whole_node_while_jobs_are_to_come() -> None:
    sim, view = _first_view(1)
    free = view.free_gpus.copy()
    assert view.num_pending > 0 and (free == view.total_gpus).all()  # every node whole
    policy = RolloutScheduler(fragmentation_weight=1.0, small_cluster_nodes=None)
    policy.decide(view)  # notes the requests seen
    big = int(np.argmax(view.total_gpus))
    small = int(np.argmin(view.total_gpus))
    need = policy._required_saving(view, free, ((small, 1),), ((big, 1),))
    assert need > policy.improvement_margin  # breaking the biggest node costs more
    assert policy._required_saving(view, free, ((big, 1),), ((small, 1),)) == 0.0
    off = RolloutScheduler(fragmentation_weight=0.0, small_cluster_nodes=None)
    assert off._required_saving(view, free, ((small, 1),), ((big, 1),)) == 0.0


def test_spread_guard_never_rolls_out_a_wider_placement() -> None:
    seen: list[tuple[int, int]] = []

    class Spy(RolloutScheduler):
        def _best(self, view, head, free, options):  # type: ignore[no-untyped-def]
            seen.extend((len(options[0]), len(p)) for p in options)
            return super()._best(view, head, free, options)

    _run(2, Spy(max_extra_nodes=0, small_cluster_nodes=None))
    assert seen and all(width <= first for first, width in seen)
    seen.clear()
    _run(2, Spy(max_extra_nodes=None, small_cluster_nodes=None))
    assert any(width > first for first, width in seen)  # without it, wider ones are tried


def test_episode_is_deterministic_and_reset_restarts_it() -> None:
    policy = RolloutScheduler(max_candidates=4)
    first = _run(2, policy, policy_seed=5)
    assert _run(2, policy, policy_seed=5) == first  # simulate() resets the policy


def test_registered_and_plays_a_job_placement_cell() -> None:
    from cluster_envs.harness.grid import Cell, run_cell

    policy = make_policy("fifo-rollout")
    assert isinstance(policy, RolloutScheduler) and policy.name == "fifo-rollout"
    env = "cluster_envs/JobPlacement-v0"
    rows = [run_cell(Cell(env, "w", {"num_jobs": 10}, p, 0)) for p in ("fifo-rollout", "fifo")]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[0]["metrics"]["num_finished"] == rows[1]["metrics"]["num_finished"] == 10


def test_believed_simulator_hides_true_lengths_and_future() -> None:
    sim = Simulator(_workload(1).jobs, CLUSTER, CONFIG, seed=0)
    while not sim.queue:
        sim.step()
    view = sim.view()
    copy = view.believed_simulator()
    assert copy is not sim and copy.next_event_time() >= sim.now_s
    known = [*view.queued_ids, *view.running_ids]
    estimates = view.total_iterations(known)
    assert np.allclose([copy.jobs[j].total_iterations for j in known], np.maximum(estimates, 1e-9))
    assert copy.num_arrived == sim.num_arrived  # nothing more ever arrives in the copy
    while copy.next_event_time() < np.inf:
        copy.step()
        copy.apply(make_policy("fifo").decide(copy.view()))
    assert copy.num_arrived == sim.num_arrived
    sim.step()
    with pytest.raises(StaleViewError):
        view.believed_simulator()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"candidates": "all"}, "unknown candidates 'all'"),
        ({"max_candidates": 0}, "max_candidates must be an integer >= 1"),
        ({"max_candidates": True}, "max_candidates must be an integer >= 1"),
        ({"improvement_margin": 1.0}, "improvement_margin must be a number in"),
        ({"improvement_margin": float("nan")}, "improvement_margin must be a number in"),
        ({"small_cluster_margin": -0.1}, "small_cluster_margin must be a number in"),
        ({"fragmentation_weight": -1}, "fragmentation_weight must be a finite number >= 0"),
        ({"max_extra_nodes": -1}, "max_extra_nodes must be None or an integer >= 0"),
        ({"spread_guard_nodes": 0}, "spread_guard_nodes must be None or an integer >= 1"),
        ({"small_cluster_nodes": 2.5}, "small_cluster_nodes must be None or an integer >= 1"),
    ],
)
def test_bad_settings_name_the_option(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RolloutScheduler(**kwargs)
