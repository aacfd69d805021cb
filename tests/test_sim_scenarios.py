"""Hand-computed simulator scenarios: exact JCTs, placement factors, costs, metrics."""

from __future__ import annotations

import math

import pytest
from helpers import SpreadPenaltySpeed, make_job

from cluster_envs.config import GPU_SPEED
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.runner import SimulationStalledError, run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.view import StaleViewError
from cluster_envs.types import Allocate, Decision, JobKind, JobState, Preempt

ONE_GPU = {"name": "one", "node_groups": [{"num_nodes": 1, "gpus_per_node": 1}]}
TWO_NODES = {"name": "two", "node_groups": [{"num_nodes": 2, "gpus_per_node": 2}]}


def test_two_jobs_one_gpu_fifo_exact_jcts() -> None:
    # Job 0 (100 s) and job 1 (50 s) both at t=0 on one GPU: FIFO runs 0 then 1.
    result = run_episode([make_job(0, 0, 100), make_job(1, 0, 50)], "fifo", ONE_GPU)
    assert result.jobs["finish_s"].tolist() == [100.0, 150.0]
    m = result.metrics
    assert m["avg_jct_s"] == pytest.approx(125.0)
    assert m["avg_queue_s"] == pytest.approx(50.0)
    assert m["makespan_s"] == pytest.approx(150.0)
    assert m["gpu_utilization"] == pytest.approx(1.0)
    # Bounded slowdown: job 0: 100/100 = 1; job 1: 150/50 = 3 -> mean 2.
    assert m["bounded_slowdown"] == pytest.approx(2.0)
    # Lower bound: each job alone: (100 + 50) / 2.
    assert m["lower_bound_avg_jct_s"] == pytest.approx(75.0)
    assert m["jct_ratio_to_lower_bound"] == pytest.approx(125.0 / 75.0)


def test_late_arrival_and_idle_gap() -> None:
    # Job 1 arrives after job 0 finished: no queueing; utilisation counts the idle gap.
    result = run_episode([make_job(0, 0, 10), make_job(1, 30, 10)], "fifo", ONE_GPU)
    assert result.jobs["finish_s"].tolist() == [10.0, 40.0]
    assert result.metrics["avg_queue_s"] == 0.0
    assert result.metrics["gpu_utilization"] == pytest.approx(20.0 / 40.0)


def test_spread_placement_slower_by_model_factor() -> None:
    # A 2-GPU job: packed on one node runs at 2 it/s; spread over 2 nodes at 2/(1+0.5).
    job = make_job(0, 0, 600, num_gpus=2)
    packed = run_episode([job], "fifo", TWO_NODES).jobs["finish_s"][0]
    spread = run_episode([job], "fifo-spread", TWO_NODES).jobs["finish_s"][0]
    assert packed == pytest.approx(300.0)
    assert spread == pytest.approx(450.0)
    assert spread / packed == pytest.approx(1.5)


def test_gpu_type_and_network_speed_change_runtime() -> None:
    fast = {"name": "a", "node_groups": [{"num_nodes": 2, "gpus_per_node": 1, "gpu_type": "A100"}]}
    job = make_job(0, 0, 450, num_gpus=1)
    expected = 450 / GPU_SPEED["A100"]
    assert run_episode([job], "fifo", fast).jobs["finish_s"][0] == pytest.approx(expected)
    # Spread over 2 nodes with a 2x faster network halves the cross-node penalty.
    slow_net = dict(TWO_NODES, inter_node_gbps=50.0)
    fast_net = dict(TWO_NODES, inter_node_gbps=100.0)
    job2 = make_job(0, 0, 600, num_gpus=2)
    t_slow = run_episode([job2], "fifo-spread", slow_net).jobs["finish_s"][0]
    t_fast = run_episode([job2], "fifo-spread", fast_net).jobs["finish_s"][0]
    assert t_slow == pytest.approx(300 * 1.5)
    assert t_fast == pytest.approx(300 * 1.25)


def test_strict_fifo_blocks_and_skip_variant_backfills() -> None:
    jobs = [make_job(0, 0, 100, 2), make_job(1, 1, 100, 4), make_job(2, 2, 10, 1)]
    strict = run_episode(jobs, "fifo", TWO_NODES).jobs["first_start_s"]
    skip = run_episode(jobs, "fifo-skip", TWO_NODES).jobs["first_start_s"]
    # Job 0 runs 50 s on 2 GPUs; job 1 (4 GPUs over 2 nodes) runs 100 / (4 / 1.5) = 37.5 s.
    assert strict.tolist() == [0.0, 50.0, 87.5]  # job 2 waits behind job 1
    assert skip.tolist() == [0.0, 50.0, 2.0]  # job 2 jumps ahead


def test_preemption_keeps_progress_and_pays_restart_cost() -> None:
    sim = Simulator([make_job(0, 0, 100)], ONE_GPU, {"restart_cost_s": 5.0})
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    sim.advance_to(40.0)
    sim.apply(Decision((Preempt(0),)))
    assert sim.state[0] == JobState.QUEUED and sim.progress[0] == pytest.approx(40.0)
    sim.advance_to(50.0)
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    assert sim.state[0] == JobState.RESCALING
    while not sim.done:
        sim.step()
        sim.check_invariants()
    # 40 s done, 10 s queued, 5 s restart, 60 s left: finish at 115.
    assert sim.finish_s[0] == pytest.approx(115.0)
    assert sim.num_restarts[0] == 1


def test_malleable_rescale_costs_time_and_changes_rate() -> None:
    job = make_job(0, 0, 400, 1, kind=JobKind.MALLEABLE, min_gpus=1, max_gpus=2)
    sim = Simulator([job], TWO_NODES, {"rescale_cost_s": 10.0})
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    sim.advance_to(100.0)  # 100 iterations done
    sim.apply(Decision((Allocate(0, ((0, 2),)),)))  # grow to 2 GPUs on one node
    while not sim.done:
        sim.step()
    # 10 s rescale, then 300 iterations at 2 it/s = 150 s: 100 + 10 + 150.
    assert sim.finish_s[0] == pytest.approx(260.0)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (Allocate(7, ((0, 1),)), "unknown job 7"),
        (Allocate(0, ((5, 1),)), "unknown node 5"),
        (Allocate(0, ((0, 3),)), "node 0 has 2 free GPUs"),
        (Allocate(0, ((0, 1), (1, 1), (1, 1))), "appears twice"),
        (Allocate(1, ((0, 1),)), "not submitted yet"),
        (Allocate(0, ((0, 1),)), "allowed exactly 2"),
        (Preempt(0), "not running"),
    ],
)
def test_infeasible_decisions_name_job_and_reason(action: object, message: str) -> None:
    sim = Simulator([make_job(0, 0, 10, 2), make_job(1, 99, 10, 1)], TWO_NODES)
    sim.step()
    before = sim.inventory.free.copy()
    with pytest.raises(InfeasibleDecisionError, match=message):
        sim.apply(Decision((action,)))  # type: ignore[arg-type]
    assert (sim.inventory.free == before).all()  # nothing changed


def test_rejected_decision_is_atomic() -> None:
    sim = Simulator([make_job(0, 0, 10, 2), make_job(1, 0, 10, 2)], TWO_NODES)
    sim.step()
    bad = Decision((Allocate(0, ((0, 2),)), Allocate(1, ((0, 2),))))  # node 0 twice over
    with pytest.raises(InfeasibleDecisionError, match="job 1: node 0 has 0 free"):
        sim.apply(bad)
    assert sim.inventory.num_free == 4 and not sim.active


def test_rigid_running_job_cannot_be_resized() -> None:
    sim = Simulator([make_job(0, 0, 10, 1)], TWO_NODES)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    with pytest.raises(InfeasibleDecisionError, match="rigid job is running"):
        sim.apply(Decision((Allocate(0, ((1, 1),)),)))


def test_job_larger_than_cluster_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs at least 8 GPUs"):
        Simulator([make_job(0, 0, 10, 8)], TWO_NODES)


def test_unknown_policy_suggests_close_name() -> None:
    with pytest.raises(ConfigError, match="did you mean 'fifo'"):
        run_episode([make_job(0, 0, 10)], "fiffo", ONE_GPU)


class _Idle:
    name = "idle"

    def reset(self, seed: int | None = None) -> None: ...

    def decide(self, view: object) -> Decision:
        return Decision()


def test_stalling_policy_is_reported_not_looped() -> None:
    with pytest.raises(SimulationStalledError, match="left 1 job"):
        run_episode([make_job(0, 0, 10)], _Idle(), ONE_GPU)
    with pytest.raises(SimulationStalledError):
        run_episode([make_job(0, 0, 10)], _Idle(), ONE_GPU, {"time_slice_s": 60})


def test_time_slices_and_horizon() -> None:
    jobs = [make_job(0, 0, 100), make_job(1, 5, 50)]
    rounds = run_episode(jobs, "fifo", ONE_GPU, {"time_slice_s": 60.0})
    # Job 0 starts at the t=0 round; job 1 waits for the round after job 0 ends (120 s).
    assert rounds.jobs["first_start_s"].tolist() == [0.0, 120.0]
    assert rounds.jobs["finish_s"].tolist() == [100.0, 170.0]
    cut = run_episode(jobs, "fifo", ONE_GPU, {"horizon_s": 120.0})
    assert cut.truncated and cut.metrics["num_finished"] == 1
    assert math.isnan(cut.metrics["jct_ratio_to_lower_bound"])


def test_view_is_immutable_and_refuses_stale_reads() -> None:
    sim = Simulator([make_job(0, 0, 10), make_job(1, 0, 10)], TWO_NODES)
    sim.step()
    view = sim.view()
    assert view.queued_ids == (0, 1) and view.num_free_gpus == 4
    with pytest.raises(ValueError):
        view.free_gpus[0] = 0
    status = view.job(0)
    assert not hasattr(status, "total_iterations")  # the truth stays hidden
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    with pytest.raises(StaleViewError):
        view.job(1)
    assert view.free_gpus.tolist() == [2, 2]  # the snapshot did not change


def test_speed_model_sees_slowest_gpu_of_mixed_placement() -> None:
    mixed = {
        "name": "mixed",
        "node_groups": [
            {"num_nodes": 1, "gpus_per_node": 1, "gpu_type": "A100"},
            {"num_nodes": 1, "gpus_per_node": 1, "gpu_type": "T4"},
        ],
    }
    sim = Simulator([make_job(0, 0, 300, 2, speed=SpreadPenaltySpeed(penalty=0.0))], mixed)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1), (1, 1))),)))
    assert sim.rate[0] == pytest.approx(2.0)  # two GPUs at T4 speed, not A100


def test_episode_result_records_every_gpu_holding() -> None:
    jobs = [make_job(0, 0, 100), make_job(1, 0, 50)]
    result = run_episode(jobs, "fifo", ONE_GPU)
    assert result.segments == [(0, 0.0, 100.0, ((0, 1),)), (1, 100.0, 150.0, ((0, 1),))]


def test_lower_bound_is_finite_for_a_job_no_node_group_holds_alone() -> None:
    """A 6-GPU job on two 4-GPU node groups of different types: a finite bound and ratio."""
    from cluster_envs.runner import run_episode

    cluster = {
        "name": "two-types",
        "node_groups": [
            {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "T4"},
            {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "V100"},
        ],
    }
    result = run_episode([make_job(0, 0.0, 600.0, num_gpus=6)], "fifo", cluster)
    lb = result.metrics["lower_bound_avg_jct_s"]
    assert 0 < lb < float("inf")
    assert 0 < result.metrics["jct_ratio_to_lower_bound"] < float("inf")
    assert result.metrics["avg_jct_s"] >= lb
