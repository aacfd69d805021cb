"""Quality metrics: a hand-computed scenario, exact curve integrals, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make_job

from cluster_envs.perf import zoo
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.quality import (
    QualitySettings,
    curve_integral,
    quality_metrics,
    track_quality,
)

ONE_GPU = {"name": "one", "node_groups": [{"num_nodes": 1, "gpus_per_node": 1}]}


def test_two_jobs_on_one_gpu_by_hand() -> None:
    """Model "test" has Q(f) = f; each job runs at 1 iteration/s on the single GPU.

    A: 3600 iterations from t=0, done at 3600, q = t/3600. B: 1800 iterations, submitted
    at 1800, waits, runs 3600..5400, q = (t-3600)/1800. With W = 3600 s:
    area_A = 1800, area_B = 0 (waiting) + 900 -> quality_auc = 2700 / 7200 = 0.375.
    A reaches 0.95 at 3420 s, B at 3600 + 1710 = 5310 s; gap = 1800 + (1800 + 900) s.
    """
    jobs = [make_job(0, 0.0, 3600.0), make_job(1, 1800.0, 1800.0)]
    m = run_episode(jobs, "fifo", ONE_GPU, {"link_contention": False}, seed=0, quality=True).metrics
    assert m["quality_auc"] == pytest.approx(0.375, abs=1e-12)
    assert m["time_to_quality_s"] == pytest.approx(5310.0, abs=1e-9)
    assert m["time_to_best_s"] == pytest.approx(3420.0, abs=1e-9)
    assert m["quality_gap_job_h"] == pytest.approx(4500.0 / 3600.0, abs=1e-12)
    assert m["mean_final_quality"] == 1.0
    # A longer window holds finished jobs at their final quality: A adds 1 * 3600,
    # B adds 1 * (1800 + 7200 - 5400).
    wide = run_episode(
        jobs, "fifo", ONE_GPU, None, seed=0, quality=QualitySettings(window_s=7200.0)
    ).metrics
    assert wide["quality_auc"] == pytest.approx((1800 + 3600 + 900 + 3600) / 14400, abs=1e-12)


def test_truncated_episode_holds_unfinished_quality_and_reports_nan() -> None:
    jobs = [make_job(0, 0.0, 3600.0)]
    m = run_episode(jobs, "fifo", ONE_GPU, {"horizon_s": 1800.0}, seed=0, quality=True).metrics
    # q = t/3600 until 1800 (area 450), then held at 0.5 for the other 1800 s.
    assert m["quality_auc"] == pytest.approx((450 + 900) / 3600, abs=1e-12)
    assert np.isnan(m["time_to_quality_s"]) and np.isnan(m["time_to_best_s"])
    assert m["mean_final_quality"] == pytest.approx(0.5)


@pytest.mark.parametrize("model", zoo.ZOO_MODELS)
def test_curve_integral_matches_fine_numerical_integration(model: str) -> None:
    curve = zoo.quality_curve(model)
    exact = curve_integral(model)
    grid = np.linspace(0.0, 1.0, 400_001)
    values = curve.quality(grid)
    cumulative = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (values[1:] + values[:-1]) / 2)])
    for f in (0.0, 0.013, 0.2, 0.5, 0.77, 1.0):
        assert exact.quality(f) == pytest.approx(curve.quality(f), abs=1e-12)
        assert exact.area(f) == pytest.approx(np.interp(f, grid, cumulative), abs=1e-9)
    # time integral of Q(f(t)) with f linear from 0.1 to 0.6 over 1000 s, by brute force
    t = np.linspace(0.0, 1000.0, 200_001)
    q = curve.quality(0.1 + 0.5 * t / 1000.0)
    brute = float(np.sum(np.diff(t) * (q[1:] + q[:-1]) / 2))
    assert exact.time_integral(0.1, 0.6, 1000.0) == pytest.approx(brute, rel=1e-7)
    target = exact.first_fraction(0.95 * exact.final)
    assert curve.quality(target) == pytest.approx(0.95 * exact.final)
    assert curve.quality(target - 1e-6) < 0.95 * exact.final


def test_quality_tracking_needs_a_fresh_simulator() -> None:
    sim = Simulator([make_job(0, 0.0, 10.0)], ONE_GPU, None, seed=0)
    with pytest.raises(ValueError, match="track_quality"):
        quality_metrics(sim)
    sim.advance_to(5.0)
    with pytest.raises(ValueError, match="fresh simulator"):
        track_quality(sim)
    with pytest.raises(ValueError, match="window_s"):
        QualitySettings(window_s=0.0)
