"""The greedy allocators value every GPU count of every job at once (issue 11's
"heuristics at simulator speed"); these pin that the batched values are the scalar
formulas' bit for bit, so the speed-up cannot change a decision."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import baselines.allocation as allocation
import baselines.slaq_window as slaq_window
import cluster_envs  # noqa: F401  (registers the envs)
from baselines.allocation import FRACTION_TIE_WEIGHT, SlaqAllocator
from baselines.slaq_window import WindowSlaqAllocator, delay_value, delay_values
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.perf import zoo
from cluster_envs.sim.curves import curve_integral
from cluster_envs.sim.engine import Simulator
from cluster_envs.workload import load_workload

METIS = "cluster_envs/MetisAllocation-v0"


def _bits(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("model", [*zoo.ZOO_MODELS, "not-a-zoo-model"])
def test_quality_many_is_quality_bit_for_bit(model: str) -> None:
    curve = curve_integral(model)
    rng = np.random.default_rng(0)
    breaks = np.array(curve.f)
    x = np.concatenate([
        rng.uniform(-0.3, 1.3, 5000), rng.uniform(0.0, 1.0, 500) ** 9, breaks,
        np.nextafter(breaks, 2.0), np.nextafter(breaks, -1.0), [0.0, -0.0, 1.0, -5.0, 7.0],
    ])  # fmt: skip
    want = [curve.quality(float(v)) for v in x]
    assert _bits(curve.quality_many(x)).tolist() == _bits(want).tolist()
    assert math.isnan(curve.quality_many(np.array([math.nan]))[0])


@pytest.mark.parametrize("model", [*zoo.ZOO_MODELS, "not-a-zoo-model"])
def test_curve_areas_and_delay_values_are_the_scalar_ones_bit_for_bit(model: str) -> None:
    curve = curve_integral(model)
    rng = np.random.default_rng(1)
    n = 4000
    f = np.concatenate(
        [rng.uniform(0.0, 1.0, n), np.zeros(50), np.ones(50), 1 - rng.uniform(0, 1e-3, 100)]
    )
    size = len(f)
    r = 10 ** rng.uniform(-9.0, -2.0, size)
    left = np.concatenate(
        [rng.uniform(-100.0, 4000.0, size - 100), np.full(50, 600.0), np.zeros(50)]
    )
    t = rng.choice([0.0, 1e-9, 30.0, 540.0, 570.0, 600.0], size)
    want = [delay_value(curve, *map(float, args)) for args in zip(f, r, left, t, strict=True)]
    assert _bits(delay_values(curve, f, r, left, t)).tolist() == _bits(want).tolist()
    x = rng.uniform(-0.2, 1.2, 2000)
    assert _bits(curve.area_many(x)).tolist() == _bits([curve.area(float(v)) for v in x]).tolist()
    f0, f1 = rng.uniform(0, 1, 2000), rng.uniform(0, 1, 2000)
    f1[:200] = f0[:200] + 1e-13  # the midpoint branch
    dt = rng.uniform(1.0, 600.0, 2000)
    want_ti = [
        curve.time_integral(float(a), float(b), float(c))
        for a, b, c in zip(f0, f1, dt, strict=True)
    ]
    assert _bits(curve.time_integral_many(f0, f1, dt)).tolist() == _bits(want_ti).tolist()


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


def test_rate_rows_are_the_per_count_rates() -> None:
    jobs = load_workload("philly-sample", num_jobs=20, seed=0).jobs
    sim = Simulator(jobs, "pollux-testbed", seed=0)
    while not sim.queue:
        sim.step()
    view, j = sim.view(), next(iter(sim.queue))
    policy = SlaqAllocator()
    speed = view.job(j).speed
    short = policy.rate_row(view, j, speed, 3)
    longer = policy.rate_row(view, j, speed, 8)
    assert short == longer[:4] and len(short) == 4 and len(longer) == 9  # a new list
    assert longer[0] == 0.0
    fresh = SlaqAllocator()
    assert longer[1:] == [fresh.speed_rate(view, j, speed, n) for n in range(1, 9)]
