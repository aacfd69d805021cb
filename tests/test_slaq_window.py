"""``slaq-window``: SLAQ's greedy valued over each job's quality_auc window."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from baselines.slaq_window import WindowSlaqAllocator, area_ahead, delay_value
from cluster_envs.errors import ConfigError
from cluster_envs.harness.suites import METIS_BASELINES
from cluster_envs.perf.quality import QualityCurve
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode
from cluster_envs.sim.curves import CurveIntegral

METIS = "cluster_envs/MetisAllocation-v0"


def _curve(rng: np.random.Generator) -> CurveIntegral:
    inner = np.sort(rng.uniform(0.0, 1.0, size=int(rng.integers(1, 6))))
    fractions = (0.0, *inner.tolist(), 1.0)
    qualities = np.sort(rng.uniform(0.0, 1.0, size=len(fractions))).tolist()
    return CurveIntegral(QualityCurve(tuple(fractions), tuple(qualities)))


def _numeric(curve: CurveIntegral, f: float, r: float, a: float, b: float) -> float:
    taus = np.linspace(a, b, 20001)
    values = [curve.quality(min(f + r * t, 1.0)) for t in taus]
    return float(np.trapezoid(values, taus))


def test_area_ahead_is_the_integral_of_quality_along_the_capped_progress() -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        curve = _curve(rng)
        f, r = float(rng.uniform(0, 1)), float(rng.uniform(0, 5e-4))
        a = float(rng.uniform(0, 2000))
        b = a + float(rng.uniform(1, 3000))
        # b - a above (1 - f) / r often: the progress reaches 1 inside the interval
        assert area_ahead(curve, f, r, a, b) == pytest.approx(
            _numeric(curve, f, r, a, b), rel=1e-4, abs=1e-6
        )
    assert area_ahead(_curve(rng), 0.3, 1e-4, 50.0, 50.0) == 0.0


def test_delay_value_counts_only_what_is_left_of_the_window() -> None:
    curve = CurveIntegral(QualityCurve((0.0, 0.5, 1.0), (0.0, 0.8, 1.0)))
    assert delay_value(curve, 0.2, 1e-4, 0.0, 600.0) == 0.0  # the window has passed
    assert delay_value(curve, 0.2, 1e-4, -5.0, 600.0) == 0.0
    assert delay_value(curve, 0.2, 0.0, 3000.0, 600.0) == 0.0  # no progress, no gain
    # Window ending inside the slice: the run's own gain over what is left.
    short = delay_value(curve, 0.2, 1e-4, 300.0, 600.0)
    assert short == pytest.approx(
        _numeric(curve, 0.2, 1e-4, 0.0, 300.0) - 300.0 * curve.quality(0.2)
    )
    # Longer window: the quality reached at its end, held over the slice's length.
    long = delay_value(curve, 0.2, 1e-4, 3000.0, 600.0)
    want = _numeric(curve, 0.2, 1e-4, 2400.0, 3000.0) - 600.0 * curve.quality(0.2)
    assert long == pytest.approx(want, rel=1e-4)
    # Early in the window the same progress is worth more (concave curve, more time held).
    assert delay_value(curve, 0.0, 1e-4, 3600.0, 600.0) > delay_value(
        curve, 0.0, 1e-4, 900.0, 600.0
    )


def test_it_is_a_registered_metis_baseline_that_takes_the_envs_window() -> None:
    assert "slaq-window" in METIS_BASELINES
    env = gym.make(METIS, quality_window_s=1800.0, time_slice_s=300.0)
    policy = env.unwrapped.policy("slaq-window")  # type: ignore[attr-defined]
    assert isinstance(policy, WindowSlaqAllocator)
    assert (policy.window_s, policy.slice_s) == (1800.0, 300.0)


def test_bad_arguments_fail_clearly() -> None:
    with pytest.raises(ConfigError, match="window_s"):
        make_policy("slaq-window", window_s=0.0)
    with pytest.raises(ConfigError, match="window_s"):
        make_policy("slaq-window", window_s=float("inf"))
    with pytest.raises(ConfigError, match="growth_cost_factor"):
        make_policy("slaq-window", growth_cost_factor=0.5)


def test_it_beats_slaq_where_jobs_queue_for_their_window() -> None:
    """mixed/validation: SLAQ's one-slice greedy leaves arriving jobs waiting (quality
    AUC 0.82 against 0.88, benchmarks/results/generalist_metis.md)."""
    env = gym.make(METIS, family="mixed", split="validation", observation="scale_free")
    auc: dict[str, list[float]] = {"slaq": [], "slaq-window": []}
    for seed in (500, 501):
        env.reset(seed=seed)
        base = env.unwrapped
        for name, values in auc.items():
            values.append(
                run_episode(policy=base.policy(name), **base.runner_args()).metrics["quality_auc"]
            )  # type: ignore[attr-defined]
    assert np.mean(auc["slaq-window"]) > np.mean(auc["slaq"]) + 0.02


def test_growing_a_running_job_pays_the_rescale_again() -> None:
    """With the factor 1 (grow at a single rescale) the greedy resizes more often."""
    env = gym.make(METIS, preset="toy", time_slice_s=60.0)
    restarts = {}
    for factor in (1.0, 2.0):
        total = 0
        for seed in (100, 101, 102):
            env.reset(seed=seed)
            base = env.unwrapped
            policy = base.policy(WindowSlaqAllocator(growth_cost_factor=factor))  # type: ignore[attr-defined]
            total += int(
                run_episode(policy=policy, **base.runner_args()).jobs["num_restarts"].sum()
            )  # type: ignore[attr-defined]
        restarts[factor] = total
    assert restarts[2.0] < restarts[1.0]
