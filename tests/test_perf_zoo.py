"""Model-zoo API over the shipped JSON (no access to ../shared needed)."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.perf.loss_curve import iterations_to_target


def test_model_names_and_fields() -> None:
    assert zoo.ZOO_MODELS == ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
    epochs = {"bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10,
              "yolov3": 50}  # fmt: skip
    for name in zoo.ZOO_MODELS:
        model = zoo.get_model(name)
        assert model.name == name
        assert model.epochs == epochs[name]
        assert list(model.batch_sizes) == sorted(model.batch_sizes)
        assert model.default_batch_size == model.batch_sizes[0]
        assert len(model.iterations) == len(model.batch_sizes)
    assert zoo.get_model("yolov3").max_local_bsz == 8
    assert not zoo.get_model("deepspeech2").higher_is_better
    assert zoo.get_model("cifar10").higher_is_better


def test_unknown_model_suggests_close_match() -> None:
    with pytest.raises(ConfigError, match="did you mean 'cifar10'"):
        zoo.get_model("cifar")
    with pytest.raises(ConfigError, match="unknown zoo model"):
        zoo.speed_model("resnet", 128)


def test_speed_model_is_cached() -> None:
    a = zoo.speed_model("imagenet", 800)
    assert zoo.speed_model("imagenet", 800) is a
    assert a.batch_size == 800
    assert zoo.speed_model("imagenet", 1600) is not a


def test_iterations_to_complete_matches_runs_and_is_monotone() -> None:
    for name in zoo.ZOO_MODELS:
        model = zoo.get_model(name)
        for bsz, its in zip(model.batch_sizes, model.iterations, strict=True):
            assert zoo.iterations_to_complete(name, bsz) == pytest.approx(its)
        grid = np.geomspace(1, model.batch_sizes[-1] * 8, 60)
        values = [zoo.iterations_to_complete(name, b) for b in grid]
        assert all(v > 0 for v in values)
        assert all(b <= a * (1 + 1e-9) for a, b in zip(values, values[1:], strict=False))
        # Below the smallest profiled batch, halving the batch doubles the iterations.
        b0 = model.batch_sizes[0]
        if b0 >= 2:
            ratio = zoo.iterations_to_complete(name, b0 / 2) / zoo.iterations_to_complete(name, b0)
            assert ratio == pytest.approx(2.0)
    # cifar10 at B=128 is 100 epochs over 50,000 images.
    assert zoo.iterations_to_complete("cifar10", 128) == pytest.approx(100 * 50_000 / 128, rel=0.01)


@pytest.mark.parametrize("name", zoo.ZOO_MODELS)
@pytest.mark.parametrize("total", [100.0, 12_345.0, 1e6])
def test_loss_curve_hits_target_at_total_iterations(name: str, total: float) -> None:
    params, target = zoo.loss_curve_for(name, total)
    assert params.loss(total) == pytest.approx(target, rel=1e-12)
    assert iterations_to_target(params, target) == pytest.approx(total, rel=1e-9)
    assert params.loss(0.0) > params.loss(total / 2) > target


@pytest.mark.parametrize("name", zoo.ZOO_MODELS)
def test_quality_curves(name: str) -> None:
    curve = zoo.quality_curve(name)
    grid = np.linspace(-0.5, 1.5, 101)
    q = curve.quality(grid)
    assert isinstance(q, np.ndarray)
    assert np.all((q >= 0) & (q <= 1))
    assert np.all(np.diff(q) >= -1e-12)
    assert curve.quality(0.0) == 0.0
    assert curve.quality(1.0) == pytest.approx(1.0)
    assert isinstance(curve.quality(0.5), float)
    assert 0.0 < curve.quality(0.5) <= 1.0


def test_model_for_gpu_time_follows_pollux_buckets() -> None:
    rng = np.random.default_rng(0)
    hour = 3600.0
    small = {zoo.model_for_gpu_time(0.5 * hour, rng) for _ in range(50)}
    medium = {zoo.model_for_gpu_time(5 * hour, rng) for _ in range(50)}
    assert small == {"cifar10", "ncf"}
    assert medium == {"deepspeech2", "bert"}
    assert zoo.model_for_gpu_time(50 * hour, rng) == "yolov3"
    assert zoo.model_for_gpu_time(100 * hour, rng) == "imagenet"
    a = [zoo.model_for_gpu_time(60.0, np.random.default_rng(5)) for _ in range(3)]
    assert len(set(a)) == 1
    with pytest.raises(ValueError):
        zoo.model_for_gpu_time(-1.0, rng)


def test_shipped_json_is_small_and_reports_fit_errors() -> None:
    path = resources.files("cluster_envs").joinpath("data").joinpath("model_zoo.json")
    text = path.read_text()
    assert len(text.encode()) < 200_000
    data = json.loads(text)
    assert set(data["fit_errors"]) == set(zoo.ZOO_MODELS)
    for errors in data["fit_errors"].values():
        assert errors["step_time"]["placements_holdout"]["n"] > 0
        assert errors["loss_curve"]["extrapolate_second_half"]["n"] > 0
