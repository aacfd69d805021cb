"""Moldable baselines on hand-built scenarios: what each rule must pick, and why.

Jobs come from ``tests/helpers.py`` (runtime ``iterations / n`` seconds on ``n`` packed
GPUs). Their length prior is the true length times a per-job over-estimate factor in
``[1, 3]``, so the scenarios keep every comparison robust to a factor of 3.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make_job

from baselines.backfill import EasyBackfillScheduler, shadow_time
from baselines.moldable import (
    MaxParallelismScheduler,
    MinParallelismScheduler,
    SjfScheduler,
    job_levels,
)
from baselines.tetris import TetrisScheduler, alignment
from baselines.threshold import EfficiencyThresholdScheduler, QueueThresholdScheduler
from cluster_envs.errors import ConfigError
from cluster_envs.perf.speed import SpeedupThroughput
from cluster_envs.perf.speedup import Amdahl, speedup_from_speed_model
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision, JobKind

TWO_BY_FOUR = {"name": "2x4", "node_groups": [{"num_nodes": 2, "gpus_per_node": 4}]}
TWO_BY_EIGHT = {"name": "2x8", "node_groups": [{"num_nodes": 2, "gpus_per_node": 8}]}
ONE_BY_FOUR = {"name": "1x4", "node_groups": [{"num_nodes": 1, "gpus_per_node": 4}]}


def moldable(job_id: int, iterations: float, lo: int = 1, hi: int = 8, **kw: object):
    return make_job(job_id, 0.0, iterations, lo, kind=JobKind.MOLDABLE, min_gpus=lo,
                    max_gpus=hi, **kw)  # fmt: skip


def arrived(jobs: list, cluster: dict, until_s: float = 0.0) -> Simulator:
    """A simulator with every event up to ``until_s`` processed."""
    sim = Simulator(jobs, cluster)
    while sim.next_event_time() <= until_s:
        sim.step()
    return sim


def starts(decision: Decision) -> list[tuple[int, int]]:
    return [(a.job_id, sum(g for _, g in a.placement)) for a in decision.actions]


def test_sjf_starts_the_shortest_estimated_jobs_first() -> None:
    # Three 4-GPU jobs, 8 GPUs: two start. True lengths 1000, 30, 200 iterations.
    jobs = [make_job(i, 0.0, it, 4) for i, it in enumerate([1000.0, 30.0, 200.0])]
    sim = arrived(jobs, TWO_BY_FOUR)
    view = sim.view()
    sjf = SjfScheduler()
    keys = {j: sjf.runtime_key_s(view, view.job(j)) for j in view.queued_ids}
    decision = sjf.decide(view)
    assert [j for j, _ in starts(decision)] == sorted(keys, key=keys.get)[:2] == [1, 2]
    assert [j for j, _ in starts(make_policy("fifo").decide(view))] == [0, 1]


def test_max_and_min_parallelism_levels() -> None:
    # A rigid 3-GPU job runs on node 0 (1 GPU left there, 4 on node 1).
    jobs = [make_job(0, 0.0, 900.0, 3), moldable(1, 800.0)]
    sim = arrived(jobs, TWO_BY_FOUR)
    sim.apply(Decision((Allocate(0, ((0, 3),)),)))
    view = sim.view()
    assert MaxParallelismScheduler().decide(view).actions == (Allocate(1, ((1, 4),)),)
    assert MinParallelismScheduler().decide(view).actions == (Allocate(1, ((0, 1),)),)
    # On an empty cluster max takes the job's whole range (8 = both nodes).
    empty = arrived([moldable(0, 800.0)], TWO_BY_FOUR).view()
    assert starts(MaxParallelismScheduler().decide(empty)) == [(0, 8)]


def test_levels_are_clipped_to_the_job_range() -> None:
    job = arrived([moldable(0, 10.0, lo=3, hi=12)], TWO_BY_EIGHT).view().job(0)
    assert job_levels(job, (1, 2, 4, 8, 16)) == (3, 4, 8, 12)


@pytest.mark.parametrize(("eta", "level"), [(0.95, 1), (0.85, 2), (0.7, 4), (0.5, 8), (0.3, 16)])
def test_threshold_eta_picks_the_level_the_speedup_curve_implies(eta: float, level: int) -> None:
    # Amdahl f = 0.9: efficiency S(n)/n = 1, 0.909, 0.769, 0.588, 0.400 at n = 1..16.
    speed = SpeedupThroughput(rate_1=1.0, curve=Amdahl(0.9))
    sim = arrived([moldable(0, 5000.0, hi=16, speed=speed)], TWO_BY_EIGHT)
    view = sim.view()
    policy = EfficiencyThresholdScheduler(eta)
    curve = speedup_from_speed_model(speed, 8, 16)
    for n in (1, 2, 4, 8, 16):
        expected = curve.speedup(n) / n
        assert policy.efficiency(view, view.job(0), n) == pytest.approx(expected)
    assert policy.target_level(view, view.job(0)) == level
    assert starts(policy.decide(view)) == [(0, level)]


def test_threshold_eta_shrinks_to_what_fits() -> None:
    speed = SpeedupThroughput(rate_1=1.0, curve=Amdahl(0.9))
    jobs = [make_job(0, 0.0, 900.0, 5), moldable(1, 5000.0, hi=16, speed=speed)]
    sim = arrived(jobs, TWO_BY_FOUR)
    sim.apply(Decision((Allocate(0, ((0, 4), (1, 1))),)))
    assert starts(EfficiencyThresholdScheduler(0.5).decide(sim.view())) == [(1, 2)]


def test_queue_threshold_switches_at_q() -> None:
    jobs = [moldable(i, 1000.0) for i in range(3)]
    view = arrived(jobs, TWO_BY_FOUR).view()
    # q = 3: the head sees 2 others waiting (< 3) -> maximum parallelism, 8 GPUs.
    assert starts(QueueThresholdScheduler(3).decide(view)) == [(0, 8)]
    # q = 2: head sees 2 others -> minimum (1); next sees 1 -> max that fits (4 of 7);
    # last sees 0 -> max that fits (2 of 3).
    assert starts(QueueThresholdScheduler(2).decide(view)) == [(0, 1), (1, 4), (2, 2)]


def easy_scenario() -> list:
    # A: 3 GPUs, 100 s. H: 4 GPUs (the head from t=1). B: 1 GPU, 20 s. C: 1 GPU, 400 s.
    return [
        make_job(0, 0.0, 300.0, 3),
        make_job(1, 1.0, 400.0, 4),
        make_job(2, 2.0, 20.0, 1),
        make_job(3, 2.0, 400.0, 1),
    ]


def test_easy_backfills_only_jobs_that_keep_the_reservation() -> None:
    sim = arrived(easy_scenario(), ONE_BY_FOUR)
    sim.apply(Decision((Allocate(0, ((0, 3),)),)))
    while sim.next_event_time() <= 2.0:
        sim.step()
    # H does not fit; its shadow time is A's estimated end (100-300 s). B (<= 60 s
    # estimated) ends before it; C (>= 400 s) would hold the GPU H needs.
    assert starts(EasyBackfillScheduler().decide(sim.view())) == [(2, 1)]
    assert starts(make_policy("fifo").decide(sim.view())) == []


def test_easy_starts_the_head_at_its_reservation_where_greedy_backfill_delays_it() -> None:
    easy = run_episode(easy_scenario(), "easy-backfill", ONE_BY_FOUR).jobs["first_start_s"]
    greedy = run_episode(easy_scenario(), "fifo-skip", ONE_BY_FOUR).jobs["first_start_s"]
    assert easy[1] == pytest.approx(100.0)  # H starts when A ends
    assert easy[2] == pytest.approx(2.0)  # B was backfilled
    # Greedy backfill starts B at t=2, then C when B ends (t=22): H waits for C (t=422).
    assert greedy[3] == pytest.approx(22.0)
    assert greedy[1] == pytest.approx(422.0)


class RecordingEasy(EasyBackfillScheduler):
    """EASY that records every reservation it makes: ``(head job, shadow time)``."""

    def __init__(self) -> None:
        super().__init__()
        self.reservations: list[tuple[int, float]] = []

    def _choose(self, view, plan):  # noqa: ANN001, ANN202
        window = plan.window()
        if window:
            head = view.job(window[0])
            need = self._request(head)
            if plan.place(head, need) is None:
                shadow, _ = shadow_time(view.time_s, plan.num_free, self.releases(plan), need)
                self.reservations.append((head.job_id, shadow))
        return super()._choose(view, plan)


def test_easy_never_delays_the_head_job_past_its_reservation() -> None:
    # Estimates here are over-estimates (prior >= true length, no contention), so every
    # reservation must hold: the head starts no later than any shadow time given to it.
    rng = np.random.default_rng(7)
    submit = np.cumsum(rng.exponential(60.0, size=40))
    jobs = [
        make_job(i, float(submit[i]), float(rng.lognormal(6.0, 1.0)) * n, n)
        for i, n in enumerate(rng.choice([1, 2, 4, 8], size=40, p=[0.4, 0.3, 0.2, 0.1]))
    ]
    policy = RecordingEasy()
    result = run_episode(jobs, policy, TWO_BY_FOUR, {"link_contention": False})
    first_start = result.jobs["first_start_s"]
    assert len({j for j, _ in policy.reservations}) >= 5  # the scenario exercises EASY
    for job_id, shadow in policy.reservations:
        assert first_start[job_id] <= shadow + 1e-6, (job_id, shadow)
    fifo = run_episode(jobs, "fifo", TWO_BY_FOUR, {"link_contention": False}).metrics
    assert result.metrics["avg_jct_s"] < fifo["avg_jct_s"]


def test_shadow_time_counts_every_release_at_the_shadow_instant() -> None:
    assert shadow_time(0.0, 1, [(50.0, 2), (50.0, 3), (80.0, 4)], 3) == (50.0, 3)
    assert shadow_time(0.0, 4, [], 3) == (0.0, 1)
    assert shadow_time(0.0, 0, [(10.0, 1)], 2) == (float("inf"), 0)


def test_tetris_alignment_and_pick() -> None:
    cap = np.array([4.0, 4.0])
    assert alignment(np.array([4.0, 0.0]), np.array([4.0, 4.0]), cap) == pytest.approx(0.5)
    assert alignment(np.array([4.0, 4.0]), np.array([4.0, 4.0]), cap) == pytest.approx(1.0)
    assert alignment(np.array([0.0, 0.0]), np.array([0.0, 0.0]), cap) == 0.0
    # A 4-GPU and a 1-GPU rigid job: pure packing takes the 4-GPU one first; a strong
    # remaining-work preference takes the 1-GPU job (10 vs 1000 GPU-s) first.
    jobs = [make_job(0, 0.0, 1000.0, 4), make_job(1, 0.0, 10.0, 1)]
    view = arrived(jobs, TWO_BY_FOUR).view()
    assert [j for j, _ in starts(TetrisScheduler(0.0).decide(view))] == [0, 1]
    assert [j for j, _ in starts(TetrisScheduler(100.0).decide(view))] == [1, 0]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: MaxParallelismScheduler(levels=(2, 1)), "ascending"),
        (lambda: MaxParallelismScheduler(window=0), "window"),
        (lambda: EfficiencyThresholdScheduler(1.5), "eta"),
        (lambda: QueueThresholdScheduler(0), "q >= 1"),
        (lambda: TetrisScheduler(-1.0), "work_weight"),
        (lambda: make_policy("best-threshold", preset="defualt"), "did you mean 'default'"),
        (lambda: make_policy("tetirs"), "did you mean 'tetris'"),
    ],
)
def test_bad_parameters_are_clear_errors(make, match: str) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match=match):
        make()
