"""The greedy allocators value each job's GPU counts as one row (issue 11's "heuristics at
simulator speed"); these pin that the rows hold the documented formulas bit for bit, so
the speed-up cannot change a decision."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import baselines.allocation as allocation
import baselines.slaq_window as slaq_window
import cluster_envs  # noqa: F401  (registers the envs)
from baselines.allocation import FRACTION_TIE_WEIGHT, SlaqAllocator
from baselines.slaq_window import WindowSlaqAllocator, delay_value
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.sim.curves import curve_integral
from cluster_envs.sim.engine import Simulator
from cluster_envs.workload import load_workload

METIS = "cluster_envs/MetisAllocation-v0"


def _bits(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).view(np.int64)


def _scalar_window_value(policy: WindowSlaqAllocator, view: Any, j: int, n: int, now: int) -> float:
    """slaq-window's value of job ``j`` at ``n`` GPUs as the scalar code computed it."""
    if n == 0:
        return 0.0
    job = view.job(j)
    total = max(float(view.total_iterations([j])[0]), 1e-9)
    left_s = job.submit_time_s + policy.window_s - view.time_s
    cost = policy.switch_cost_s if n != now and job.first_start_s is not None else 0.0
    if 0 < now < n:
        cost *= policy.growth_cost_factor
    t = max(policy.slice_s - cost, 0.0)
    r = policy.speed_rate(view, j, job.speed, n) / total
    gain = delay_value(curve_integral(job.model), job.iterations_done / total, r, left_s, t)
    return gain / policy.slice_s + FRACTION_TIE_WEIGHT * r * t


def _scalar_slaq_utility(policy: SlaqAllocator, view: Any, j: int, n: int, now: int) -> float:
    """SLAQ's utility of job ``j`` at ``n`` GPUs as the scalar code computed it."""
    if n == 0:
        return 0.0
    job = view.job(j)
    total = float(view.total_iterations([j])[0])
    frac = job.iterations_done / max(total, 1e-9)
    ran = job.first_start_s is not None
    cost = policy.switch_cost_s if n != now and ran else 0.0
    t = max(policy.slice_s - cost, 0.0)
    df = policy.speed_rate(view, j, job.speed, n) * t / max(total, 1e-9)
    curve = curve_integral(job.model)
    return curve.quality(frac + df) - curve.quality(frac) + FRACTION_TIE_WEIGHT * df


@pytest.mark.parametrize("name", ["slaq", "slaq-window"])
@pytest.mark.parametrize("family", ["synthetic-64", "pollux"])
def test_greedy_values_every_count_as_its_scalar_formula(
    name: str, family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On MetisAllocation (malleable jobs that grow and shrink; 600 s and 60 s slices)."""
    env = gym.make(METIS, family=family, split="validation", num_jobs=40, observation="scale_free")
    agent = HeuristicAgent(env.unwrapped.policy(name))  # type: ignore[attr-defined]
    policy: Any = agent.policy
    scalar = _scalar_slaq_utility if name == "slaq" else _scalar_window_value
    checked, grew = 0, 0
    real_fill = allocation.greedy_fill

    def spy(state: Any, counts: Any, utility: Any = None, skip: bool = False, row: Any = None):
        nonlocal checked, grew
        view = env.unwrapped.sim.view()  # type: ignore[attr-defined]  # (before the apply)
        for j in state.ids:
            top, now = min(state.max_gpus[j], state.capacity), state.count(j)
            grew += 0 < now < top
            want = [scalar(policy, view, j, n, now) for n in range(top + 1)]
            assert _bits(row(j, 0, top)).tolist() == _bits(want).tolist(), j
        checked += 1
        return real_fill(state, counts, utility, skip, row)

    monkeypatch.setattr(allocation, "greedy_fill", spy)
    monkeypatch.setattr(slaq_window, "greedy_fill", spy)
    rollout(env, agent, seed=500, max_steps=40)
    assert checked >= 12 and grew >= 5  # running jobs that could grow were valued


def test_rate_rows_are_the_per_count_rates_and_never_change_in_place() -> None:
    jobs = load_workload("philly-sample", num_jobs=20, seed=0).jobs
    sim = Simulator(jobs, "pollux-testbed", seed=0)
    while not sim.queue:
        sim.step()
    view, j = sim.view(), next(iter(sim.queue))
    policy = SlaqAllocator()
    speed = view.job(j).speed
    middle = policy.rate_row(view, j, speed, 3, 4)
    assert middle[:3] == [None, None, None] and len(middle) == 5  # only what was asked
    assert policy.rate_row(view, j, speed, 3, 4) is middle  # nothing missing: the same list
    longer = policy.rate_row(view, j, speed, 1, 8)
    assert middle[:3] == [None, None, None] and longer is not middle  # a new list
    fresh = SlaqAllocator()
    assert longer[1:] == [fresh.speed_rate(view, j, speed, n) for n in range(1, 9)]
    assert longer[3:5] == middle[3:5]
