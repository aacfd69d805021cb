"""The greedy allocators value every GPU count of every job at once (issue 11's
"heuristics at simulator speed"); these pin that the batched values are the scalar
formulas' bit for bit, so the speed-up cannot change a decision."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import baselines.allocation as allocation
from baselines.allocation import FRACTION_TIE_WEIGHT, SlaqAllocator
from cluster_envs.perf import zoo
from cluster_envs.runner import decide_until_settled
from cluster_envs.sim.curves import curve_integral
from cluster_envs.sim.engine import Simulator
from cluster_envs.workload import load_workload


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


@pytest.mark.parametrize("slice_s", [60.0, 600.0])
def test_slaq_values_every_count_as_its_scalar_formula(
    slice_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = load_workload("philly-sample", num_jobs=60, seed=1).jobs
    sim = Simulator(jobs, "pollux-testbed", seed=0)
    policy = SlaqAllocator(slice_s=slice_s, switch_cost_s=20.0)
    policy.reset(0)
    checked = 0
    real_fill = allocation.greedy_fill

    def spy(state: Any, counts: Any, utility: Any = None, skip: bool = False, row: Any = None):
        nonlocal checked
        view = sim.view()  # the instant SLAQ decides at (its view is read before the apply)
        for j in state.ids:
            top, now = min(state.max_gpus[j], state.capacity), state.count(j)
            want = [_scalar_slaq_utility(policy, view, j, n, now) for n in range(top + 1)]
            assert _bits(row(j, 0, top)).tolist() == _bits(want).tolist(), j
        checked += 1
        return real_fill(state, counts, utility, skip, row)

    monkeypatch.setattr(allocation, "greedy_fill", spy)
    while not sim.done and checked < 12:
        sim.step()
        if sim.queue:
            decide_until_settled(sim, policy)
    assert checked >= 12


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
