"""Pollux all-reduce and Optimus parameter-server throughput models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cluster_envs.perf.speed import SpeedModel, packed_shape
from cluster_envs.perf.throughput import (
    OptimusPSThroughput,
    PolluxThroughput,
    fit_optimus_ps,
    fit_pollux,
    predict_step_time,
)
from cluster_envs.perf.zoo import ZOO_MODELS, speed_model, zoo_data

HAND = PolluxThroughput(
    alpha_c=0.1, beta_c=0.01, alpha_n=0.2, beta_n=0.02, alpha_r=0.05, beta_r=0.01,
    gamma=2.0, batch_size=256, max_local_bsz=64,
)  # fmt: skip
#: Stated accuracy of the shipped fits on real step times they never saw (median).
HELD_OUT_MEDIAN_TOL = 0.15


def test_hand_computed_single_node() -> None:
    # 4 GPUs on one node: m = 64, T_grad = 0.74, T_sync = 0.05 + 0.01 * 2 = 0.07.
    expected = math.sqrt(0.74**2 + 0.07**2)
    assert HAND.iteration_time((4,)) == pytest.approx(expected)
    assert HAND.throughput((4,)) == pytest.approx(1.0 / expected)


def test_hand_computed_cross_node_and_single_gpu() -> None:
    # (2, 2): T_grad = 0.74, T_sync = 0.2 + 0.02 * 2 = 0.24 (network speed 2 halves it).
    assert HAND.iteration_time((2, 2), network_speed=2.0) == pytest.approx(
        math.sqrt(0.74**2 + 0.12**2)
    )
    # One GPU: m = 256 > 64, so 4 micro-steps of 64 and no sync.
    assert HAND.iteration_time((1,)) == pytest.approx(4 * 0.74)


def test_accumulation_rounds_micro_batches_up() -> None:
    model = PolluxThroughput(0.1, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0, 100, 30)
    # m = 100 -> ceil(100/30) = 4 steps of ceil(100/4) = 25 samples.
    assert model.iteration_time((1,)) == pytest.approx(4 * (0.1 + 0.25))


def test_spread_placement_is_slower_than_packed() -> None:
    for name in ZOO_MODELS:
        model = speed_model(name, 512)
        assert model.throughput((2, 2)) < model.throughput((4,)), name
        assert model.throughput((1, 1)) < model.throughput((2,)), name
        # Pollux's model only distinguishes one node from several, not how many.
        assert model.throughput((4, 4)) == model.throughput((2, 2, 2, 2)), name
    assert HAND.throughput((2, 2)) < HAND.throughput((4,))


def test_more_gpus_faster_up_to_a_point() -> None:
    model = PolluxThroughput(0.01, 0.001, 0.05, 0.01, 0.005, 0.001, 1.0, 1024, 1024)
    rates = [model.throughput(packed_shape(n, 4)) for n in range(1, 65)]
    best = int(np.argmax(rates)) + 1
    assert 1 < best < 64
    assert rates[1] > rates[0]
    assert rates[-1] < max(rates)


def test_real_model_scales_at_large_batch() -> None:
    model = speed_model("imagenet", 3200)
    assert model.throughput((4,)) > 2 * model.throughput((1,))
    assert model.throughput((4, 4)) > model.throughput((4,))


def test_compute_and_network_speed() -> None:
    packed, spread = (4,), (2, 2)
    assert HAND.throughput(packed, compute_speed=2.0) > HAND.throughput(packed)
    assert HAND.throughput(packed, compute_speed=2.0) < 2 * HAND.throughput(packed)
    assert HAND.throughput((1,), compute_speed=2.0) == pytest.approx(2 * HAND.throughput((1,)))
    assert HAND.throughput(packed, network_speed=4.0) == HAND.throughput(packed)
    assert HAND.throughput(spread, network_speed=4.0) > HAND.throughput(spread)


@pytest.mark.parametrize("shape", [(), (0,), (0, 0)])
def test_empty_placement_rejected(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="no GPUs"):
        HAND.throughput(shape)


def test_protocol_hashable_and_validated() -> None:
    assert isinstance(HAND, SpeedModel)
    assert hash(HAND) == hash(HAND.with_batch_size(256))
    assert HAND.throughput((4, 0)) == HAND.throughput((4,))
    with pytest.raises(ValueError, match="gamma"):
        PolluxThroughput(0.1, 0.01, 0.0, 0.0, 0.0, 0.0, 0.5, 1, 1)
    with pytest.raises(ValueError, match="beta_n"):
        PolluxThroughput(0.1, 0.01, 0.0, -1.0, 0.0, 0.0, 1.0, 1, 1)


def test_fit_pollux_recovers_synthetic_model() -> None:
    rng = np.random.default_rng(0)
    true = [0.05, 0.004, 0.3, 0.02, 0.04, 0.01, 1.5]
    shapes = [(1,), (2,), (4,), (1, 1), (2, 2), (4, 4), (4, 4, 4), (4,) * 8, (3, 1), (4, 4, 2)]
    rows = [(len(s), sum(s), m) for s in shapes for m in (8, 16, 32, 64)]
    nodes, reps, bsz = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    step, grad, _ = predict_step_time(true, nodes, reps, bsz)
    step = step * (1 + 0.01 * rng.standard_normal(step.size))
    fit = fit_pollux(nodes, reps, bsz, step, np.maximum(step - grad, 0.0))
    pred, _, _ = predict_step_time(
        [fit.alpha_c, fit.beta_c, fit.alpha_n, fit.beta_n, fit.alpha_r, fit.beta_r, fit.gamma],
        nodes, reps, bsz,
    )  # fmt: skip
    assert np.median(np.abs(pred - step) / step) < 0.02


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_shipped_fit_reproduces_held_out_measurements(name: str) -> None:
    model = speed_model(name, 1)
    rows = np.array(zoo_data()["models"][name]["holdout_sample"], dtype=float)
    params = [model.alpha_c, model.beta_c, model.alpha_n, model.beta_n, model.alpha_r,
              model.beta_r, model.gamma]  # fmt: skip
    pred, _, _ = predict_step_time(params, rows[:, 0], rows[:, 1], rows[:, 2])
    assert np.median(np.abs(pred - rows[:, 3]) / rows[:, 3]) < HELD_OUT_MEDIAN_TOL
    errors = zoo_data()["fit_errors"][name]["step_time"]
    assert errors["placements_holdout"]["median_rel_err"] < HELD_OUT_MEDIAN_TOL
    assert errors["scalability_holdout"]["median_rel_err"] < HELD_OUT_MEDIAN_TOL


def test_nnls_recovers_parameter_server_params() -> None:
    true = OptimusPSThroughput(t0=1e-3, t1=0.02, t2=5e-3, t3=1e-3, t4=2e-3, batch_size=128)
    points = [(p, w) for p in (1, 2, 4) for w in (1, 2, 4, 8) if p <= w]
    p, w = (np.array(c, dtype=float) for c in zip(*points, strict=True))
    speed = np.array([true.speed(a, b) for a, b in points])
    fit = fit_optimus_ps(p, w, speed, batch_size=128)
    for name in ("t0", "t1", "t2", "t3", "t4"):
        assert getattr(fit, name) == pytest.approx(getattr(true, name), rel=1e-6, abs=1e-10)


def test_parameter_server_as_speed_model() -> None:
    model = OptimusPSThroughput(1e-3, 0.02, 5e-3, 1e-3, 2e-3, batch_size=128)
    assert isinstance(model, SpeedModel)
    assert model.throughput((4, 4)) == pytest.approx(model.speed(2, 8))
    assert model.throughput((4, 4), network_speed=2.0) == pytest.approx(
        model.speed(2, 8, network_speed=2.0)
    )
    assert model.throughput((4,), network_speed=2.0) == model.throughput((4,))
    assert model.throughput((4,), compute_speed=2.0) > model.throughput((4,))
    with pytest.raises(ValueError):
        model.throughput(())
    with pytest.raises(ValueError):
        fit_optimus_ps([1, 2], [1], [1.0, 2.0])
