"""Interference: distributed jobs sharing a node split its link; node interference."""

from __future__ import annotations

import pytest
from helpers import SpreadPenaltySpeed, make_job

from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision

TWO_NODES = {"name": "two", "node_groups": [{"num_nodes": 2, "gpus_per_node": 2}]}


def _start_two_spread_jobs(config: dict) -> Simulator:
    # Two 2-GPU jobs, each spread over both nodes: both use both nodes' links.
    jobs = [make_job(0, 0, 3000, 2), make_job(1, 0, 600, 2)]
    sim = Simulator(jobs, TWO_NODES, config)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1), (1, 1))), Allocate(1, ((0, 1), (1, 1))))))
    return sim


def test_link_contention_slows_both_and_recovers_when_one_ends() -> None:
    sim = _start_two_spread_jobs({})
    # Alone: 2 / (1 + 0.5) it/s. Sharing the links halves network speed: 2 / (1 + 1.0).
    assert sim.rate[0] == pytest.approx(1.0) and sim.rate[1] == pytest.approx(1.0)
    while not sim.done:
        sim.step()
        sim.check_invariants()
    # Job 1 ends at 600 s; job 0 then has 2400 it left at 4/3 it/s: 600 + 1800.
    assert sim.finish_s[1] == pytest.approx(600.0)
    assert sim.finish_s[0] == pytest.approx(2400.0)


def test_link_contention_can_be_switched_off() -> None:
    sim = _start_two_spread_jobs({"link_contention": False})
    assert sim.rate[0] == pytest.approx(2 / 1.5)


def test_single_node_jobs_are_not_slowed_by_link_contention() -> None:
    jobs = [make_job(0, 0, 100, 2), make_job(1, 0, 100, 2, speed=SpreadPenaltySpeed())]
    sim = Simulator(jobs, TWO_NODES)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 2),)), Allocate(1, ((1, 2),)))))
    assert sim.rate.tolist() == [2.0, 2.0]


def test_node_interference_slows_jobs_sharing_a_node() -> None:
    jobs = [make_job(0, 0, 100, 1), make_job(1, 0, 100, 1)]
    sim = Simulator(jobs, TWO_NODES, {"node_interference": 0.25})
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1),)),)))
    assert sim.rate[0] == pytest.approx(1.0)
    sim.apply(Decision((Allocate(1, ((0, 1),)),)))
    assert sim.rate[0] == pytest.approx(1 / 1.25) and sim.rate[1] == pytest.approx(1 / 1.25)
