"""Optimus loss curve: fitting, online refit, inversion, convergence rule, noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_envs.perf.loss_curve import (
    OnlineLossCurveFit,
    fit_loss_curve,
    has_converged,
    iterations_to_target,
    observe_loss,
)
from cluster_envs.types import LossCurveParams

TRUE = LossCurveParams(b0=2e-3, b1=0.5, b2=0.3)
K_OBS = np.arange(50.0, 4001.0, 50.0)
NOISE = 0.02
#: Stated tolerance: fitted iterations-to-target within 10 % at 2 % observation noise.
ITER_TOL = 0.10


def _noisy(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([observe_loss(TRUE, k, rng, NOISE) for k in K_OBS])


@pytest.mark.parametrize("seed", range(5))
def test_fit_recovers_iterations_to_target(seed: int) -> None:
    fit = fit_loss_curve(K_OBS, _noisy(seed))
    target = TRUE.loss(3500.0)
    predicted = iterations_to_target(fit, target)
    assert abs(predicted - 3500.0) / 3500.0 < ITER_TOL
    assert fit.b2 == pytest.approx(TRUE.b2, abs=0.05)


def test_fit_exact_on_noiseless_points() -> None:
    fit = fit_loss_curve(K_OBS, [TRUE.loss(k) for k in K_OBS])
    for k in (100.0, 1000.0, 4000.0):
        assert fit.loss(k) == pytest.approx(TRUE.loss(k), rel=1e-4)


def test_fit_needs_three_points() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        fit_loss_curve([1.0, 2.0], [1.0, 0.9])


def test_fit_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="differ"):
        fit_loss_curve([1.0, 2.0, 3.0], [1.0, 0.9])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=1e-3, max_value=1e3, allow_nan=False), min_size=3, max_size=12))
def test_fit_never_returns_nan(losses: list[float]) -> None:
    fit = fit_loss_curve(np.arange(len(losses), dtype=float), losses)
    assert all(math.isfinite(v) and v >= 0 for v in (fit.b0, fit.b1, fit.b2))


def test_online_fit_matches_batch_fit() -> None:
    losses = _noisy(7)
    online = OnlineLossCurveFit()
    assert online.params is None
    for i, (k, loss) in enumerate(zip(K_OBS, losses, strict=True)):
        online.update(k, loss)
        assert (online.params is None) == (i < 2)
    batch = fit_loss_curve(K_OBS, losses)
    assert online.params is not None
    for k in (500.0, 2000.0, 4000.0):
        assert online.params.loss(k) == pytest.approx(batch.loss(k), rel=0.01)
    target = TRUE.loss(3500.0)
    assert online.iterations_to_target(target) == pytest.approx(
        iterations_to_target(batch, target), rel=0.05
    )


def test_online_before_fit_is_infinite() -> None:
    online = OnlineLossCurveFit()
    online.update(1.0, 2.0)
    assert online.iterations_to_target(1.0) == math.inf


@pytest.mark.parametrize("k", [0.0, 10.0, 1234.5, 1e6])
def test_inversion_round_trip(k: float) -> None:
    assert iterations_to_target(TRUE, TRUE.loss(k)) == pytest.approx(k, rel=1e-9, abs=1e-6)


def test_inversion_unreachable_targets() -> None:
    assert iterations_to_target(TRUE, TRUE.b2) == math.inf
    assert iterations_to_target(TRUE, TRUE.b2 - 0.1) == math.inf
    assert iterations_to_target(TRUE, 10.0) == 0.0  # already below at k = 0


def test_convergence_rule() -> None:
    falling = [1.0, 0.8, 0.6, 0.4]
    flat = [1.0, 0.5, 0.45, 0.449, 0.448]
    assert not has_converged(falling, window=2, threshold=0.01)
    assert has_converged(flat, window=2, threshold=0.01)
    assert not has_converged(flat, window=4, threshold=0.01)  # 0.5 -> 0.448 over 4
    assert not has_converged([0.5, 0.5], window=2, threshold=0.01)  # too short
    with pytest.raises(ValueError):
        has_converged(flat, window=0, threshold=0.01)


def test_observe_loss_noise_is_seeded_and_positive() -> None:
    a = [observe_loss(TRUE, 100.0, np.random.default_rng(3), 0.05) for _ in range(3)]
    assert a[0] == a[1] == a[2]
    rng = np.random.default_rng(0)
    samples = np.array([observe_loss(TRUE, 100.0, rng, 0.05) for _ in range(4000)])
    assert samples.mean() == pytest.approx(TRUE.loss(100.0), rel=0.01)
    assert samples.std() / TRUE.loss(100.0) == pytest.approx(0.05, rel=0.1)
    wild = [observe_loss(TRUE, 100.0, rng, 5.0) for _ in range(200)]
    assert min(wild) > 0
    assert observe_loss(TRUE, 100.0, rng, 0.0) == TRUE.loss(100.0)
