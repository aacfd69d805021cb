"""Speedup curves: hand-computed values, limits, validation, tabulation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_envs.perf.speed import Speedup, packed_shape
from cluster_envs.perf.speedup import (
    Amdahl,
    Downey,
    PowerLaw,
    TabulatedSpeedup,
    speedup_from_speed_model,
)
from cluster_envs.perf.throughput import PolluxThroughput


def test_amdahl_hand_computed() -> None:
    assert Amdahl(0.9).speedup(4) == pytest.approx(1.0 / (0.1 + 0.225))
    assert Amdahl(1.0).speedup(8) == pytest.approx(8.0)
    assert Amdahl(0.0).speedup(8) == pytest.approx(1.0)


def test_power_law() -> None:
    assert PowerLaw(0.5).speedup(16) == pytest.approx(4.0)
    assert PowerLaw(1.0).speedup(7) == pytest.approx(7.0)


def test_downey_hand_computed() -> None:
    # Low variance, n <= A: A n / (A + sigma (n - 1) / 2) = 50 / 11.
    assert Downey(10, 0.5).speedup(5) == pytest.approx(50 / 11)
    # Low variance, A <= n <= 2A - 1: 10*15 / (0.5 * 9.5 + 15 * 0.75) = 150 / 16.
    assert Downey(10, 0.5).speedup(15) == pytest.approx(150 / 16)
    # High variance: n A (sigma + 1) / (sigma (n + A - 1) + A) = 150 / 38.
    assert Downey(10, 2.0).speedup(5) == pytest.approx(150 / 38)


def test_downey_limits() -> None:
    for n in (1, 3, 10, 50):
        assert Downey(10, 0.0).speedup(n) == pytest.approx(min(n, 10))
    for sigma in (0.0, 0.3, 1.0, 2.0, 10.0):
        assert Downey(10, sigma).speedup(10_000) == pytest.approx(10)
    # The two branches meet at sigma = 1.
    for n in (1, 2, 5, 10, 15, 19, 25):
        low = Downey(10, 1.0).speedup(n)
        high = Downey(10, 1.0 + 1e-12).speedup(n)
        assert low == pytest.approx(high, rel=1e-9)


@given(
    st.floats(min_value=1.0, max_value=200.0),
    st.floats(min_value=0.0, max_value=20.0),
    st.integers(min_value=1, max_value=500),
)
def test_speedups_start_at_one_and_never_decrease(a: float, sigma: float, n: int) -> None:
    for curve in (Downey(a, sigma), Amdahl(min(sigma / 20, 1.0)), PowerLaw(min(sigma / 20, 1.0))):
        assert isinstance(curve, Speedup)
        assert curve.speedup(1) == pytest.approx(1.0)
        assert curve.speedup(n + 1) >= curve.speedup(n) - 1e-9
        assert 1.0 - 1e-9 <= curve.speedup(n) <= n + 1e-9


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda: Amdahl(1.5), "f"),
        (lambda: PowerLaw(-0.1), "p"),
        (lambda: Downey(0.5, 1.0), "A"),
        (lambda: Downey(4.0, -1.0), "sigma"),
    ],
)
def test_bad_parameters_named(factory, name: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=f"parameter {name} "):
        factory()


def test_n_below_one_rejected() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        Amdahl(0.5).speedup(0)


def test_tabulated_log_linear_and_flat() -> None:
    curve = TabulatedSpeedup(((1, 1.0), (4, 3.0), (16, 6.0)))
    assert curve.speedup(1) == 1.0
    assert curve.speedup(2) == pytest.approx(2.0)  # halfway in log between 1 and 4
    assert curve.speedup(8) == pytest.approx(4.5)
    assert curve.speedup(64) == 6.0
    assert TabulatedSpeedup(((2, 1.8),)).speedup(1) == 1.0  # (1, 1) added


@pytest.mark.parametrize("points", [((1, 2.0),), ((1, 1.0), (1, 1.5)), ((1, 1.0), (4, 0.0)), ()])
def test_tabulated_rejects_bad_points(points: tuple) -> None:
    with pytest.raises(ValueError):
        TabulatedSpeedup(points)


def test_speedup_from_speed_model() -> None:
    model = PolluxThroughput(0.01, 0.001, 0.05, 0.01, 0.005, 0.001, 1.0, 1024, 1024)
    curve = speedup_from_speed_model(model, gpus_per_node=4, max_gpus=32)
    base = model.throughput((1,))
    for n in (1, 2, 5, 8, 13, 32):
        expected = model.throughput(packed_shape(n, 4)) / base
        assert curve.speedup(n) == pytest.approx(expected)
    assert curve.speedup(100) == curve.speedup(32)
    assert math.isclose(curve.speedup(1), 1.0)
