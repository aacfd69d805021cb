"""The model zoo: six real DL training jobs profiled by the Pollux authors.

Everything here comes from ``cluster_envs/data/model_zoo.json``, which
``scripts/fit_model_zoo.py`` fits once from the Pollux (Qiao et al., OSDI'21) traces;
see ``cluster_envs/data/DATA_LICENSES.md``. Runtime needs neither pandas nor the raw
data. Models: ``bert`` (SQuAD fine-tuning), ``cifar10`` (ResNet-18), ``deepspeech2``
(CMU-ARCTIC), ``imagenet`` (ResNet-50), ``ncf`` (NeuMF, MovieLens), ``yolov3`` (VOC).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import numpy as np

from cluster_envs.config import unknown_name
from cluster_envs.errors import ConfigError
from cluster_envs.perf.quality import QualityCurve
from cluster_envs.perf.throughput import PolluxThroughput
from cluster_envs.types import LossCurveParams

ZOO_MODELS: tuple[str, ...] = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
ZOO_FILE = "model_zoo.json"
_HOUR_S = 3600.0
#: Pollux's GPU-time buckets (``simulator/workload.py``): upper bounds in GPU-seconds.
GPU_TIME_SMALL_S = 1 * _HOUR_S
GPU_TIME_MEDIUM_S = 10 * _HOUR_S
GPU_TIME_LARGE_S = 100 * _HOUR_S
#: Log-log slope of iterations vs batch below the smallest profiled batch: a fixed
#: number of epochs over a fixed data set takes ``1/B`` times as many iterations.
SMALL_BATCH_SLOPE = -1.0


@dataclass(frozen=True)
class ZooModel:
    """One profiled training job.

    Attributes:
        name: Zoo key, e.g. ``"cifar10"``.
        description: Network and data set.
        batch_sizes: Global batch sizes with a real validation run (ascending).
        default_batch_size: Pollux's initial batch size (the smallest profiled one).
        epochs: Epochs of a full run (Pollux's ``max_epochs``).
        metric_name: Validation metric of the runs (e.g. ``"top1_accuracy"``).
        higher_is_better: Direction of the metric.
        max_local_bsz: Largest per-GPU micro-batch (beyond it: gradient accumulation).
        min_local_bsz: Smallest profiled per-GPU batch.
        iterations: Iterations of a full run at each of ``batch_sizes``.
        throughput: Fitted T4 throughput model at ``default_batch_size``.
        loss_curve_fraction: Optimus curve of the error-like metric vs the fraction of
            training done (``k`` in [0, 1]).
        quality: Normalised quality vs the fraction of training done.
    """

    name: str
    description: str
    batch_sizes: tuple[int, ...]
    default_batch_size: int
    epochs: int
    metric_name: str
    higher_is_better: bool
    max_local_bsz: int
    min_local_bsz: int
    iterations: tuple[float, ...]
    throughput: PolluxThroughput
    loss_curve_fraction: LossCurveParams
    quality: QualityCurve


@cache
def shipped_json(filename: str) -> dict[str, Any]:
    """A JSON file shipped in ``cluster_envs/data/``, parsed once per process."""
    text = resources.files("cluster_envs").joinpath("data").joinpath(filename).read_text()
    return json.loads(text)


def zoo_data() -> dict[str, Any]:
    """The raw shipped JSON (models, ``fit_errors``, ``a100_over_t4``), loaded once."""
    return shipped_json(ZOO_FILE)


def _build(name: str, raw: dict[str, Any]) -> ZooModel:
    batch_sizes = tuple(int(b) for b in raw["batch_sizes"])
    loss = raw["loss_curve_fraction"]
    return ZooModel(
        name=name,
        description=raw["description"],
        batch_sizes=batch_sizes,
        default_batch_size=batch_sizes[0],
        epochs=int(raw["epochs"]),
        metric_name=raw["metric_name"],
        higher_is_better=bool(raw["higher_is_better"]),
        max_local_bsz=int(raw["max_local_bsz"]),
        min_local_bsz=int(raw["min_local_bsz"]),
        iterations=tuple(float(i) for i in raw["iterations"]),
        throughput=PolluxThroughput(
            **raw["perf"], batch_size=batch_sizes[0], max_local_bsz=int(raw["max_local_bsz"])
        ),
        loss_curve_fraction=LossCurveParams(loss["c0"], loss["b1"], loss["b2"]),
        quality=QualityCurve.from_dict(raw["quality"]),
    )


@cache
def get_model(name: str) -> ZooModel:
    """The zoo entry ``name``.

    Raises:
        ConfigError: Unknown name (with a close-match suggestion).
    """
    if name not in ZOO_MODELS:
        raise unknown_name("zoo model", name, ZOO_MODELS, listed="models")
    return _build(name, zoo_data()["models"][name])


def _check_batch(batch_size: float) -> None:
    if not (batch_size >= 1 and math.isfinite(batch_size)):
        raise ConfigError(f"batch_size must be a finite number >= 1, got {batch_size}")


@lru_cache(maxsize=4096)
def speed_model(name: str, batch_size: int) -> PolluxThroughput:
    """The fitted T4 throughput model of ``name`` at global ``batch_size`` (cached)."""
    _check_batch(batch_size)
    return get_model(name).throughput.with_batch_size(int(batch_size))


@lru_cache(maxsize=4096)
def iterations_to_complete(name: str, batch_size: int) -> float:
    """Iterations of a full run (the model's ``epochs``) at global ``batch_size`` (cached).

    Between profiled batch sizes: linear interpolation of ``log(iterations)`` in
    ``log(batch)``, from the last row of each real ``validation-<B>.csv`` run. Below the
    smallest profiled batch: ``iterations ~ 1/B`` (same epochs over the same data).
    Above the largest: the last segment's log-log slope, clamped to [-1, 0], so the
    count keeps falling but never faster than ``1/B``.
    """
    _check_batch(batch_size)
    model = get_model(name)
    log_b = np.log(np.asarray(model.batch_sizes, dtype=float))
    log_i = np.log(np.asarray(model.iterations, dtype=float))
    x = math.log(batch_size)
    if x <= log_b[0]:
        return float(math.exp(log_i[0] + SMALL_BATCH_SLOPE * (x - log_b[0])))
    if x >= log_b[-1]:
        slope = (log_i[-1] - log_i[-2]) / (log_b[-1] - log_b[-2]) if log_b.size > 1 else -1.0
        slope = min(max(slope, -1.0), 0.0)
        return float(math.exp(log_i[-1] + slope * (x - log_b[-1])))
    return float(math.exp(np.interp(x, log_b, log_i)))


def loss_curve_for(name: str, total_iterations: float) -> tuple[LossCurveParams, float]:
    """The true loss curve of a ``name`` job in its own iterations, and its target.

    The zoo curve is fitted to an error-like validation metric (``1 - accuracy``,
    ``1 - F1/100``, ``1 - hit rate``, ``WER/100``, YOLOv3 validation loss) against the
    fraction of training ``x``; here ``x = k / total_iterations``, i.e.
    ``b0 = c0 / total_iterations``. The target is the curve's value at
    ``total_iterations``, so the job converges exactly there.

    Returns:
        ``(params, target_loss)``.
    """
    if not (total_iterations > 0 and math.isfinite(total_iterations)):
        raise ConfigError(f"total_iterations must be finite and > 0, got {total_iterations}")
    frac = get_model(name).loss_curve_fraction
    params = LossCurveParams(b0=frac.b0 / total_iterations, b1=frac.b1, b2=frac.b2)
    return params, frac.loss(1.0)


def quality_curve(name: str) -> QualityCurve:
    """Normalised quality vs fraction of training of ``name`` (from the real runs)."""
    return get_model(name).quality


def model_for_gpu_time(gpu_time_s: float, rng: np.random.Generator) -> str:
    """Pollux's mapping from a Philly job's GPU time to a zoo model.

    Reproduces ``generate()`` in ``simulator/workload.py`` of petuum/adaptdl (branch
    ``osdi21-artifact``, commit de25dcc): under 1 GPU-hour: ``cifar10`` or ``ncf``
    (equally likely); 1-10 GPU-hours: ``deepspeech2``, half of them switched to
    ``bert``; 10-100: ``yolov3``; 100 and more: ``imagenet`` (Pollux also drops jobs
    over 1,000 GPU-hours before sampling; that filter belongs to the trace loader).

    Args:
        gpu_time_s: Duration times GPUs of the trace job, in GPU-seconds (>= 0).
        rng: The caller's generator; one draw for the two-way buckets.
    """
    if not (gpu_time_s >= 0 and math.isfinite(gpu_time_s)):
        raise ValueError(f"gpu_time_s must be finite and >= 0, got {gpu_time_s}")
    if gpu_time_s < GPU_TIME_SMALL_S:
        return ("cifar10", "ncf")[int(rng.integers(2))]
    if gpu_time_s < GPU_TIME_MEDIUM_S:
        return ("deepspeech2", "bert")[int(rng.integers(2))]
    if gpu_time_s < GPU_TIME_LARGE_S:
        return "yolov3"
    return "imagenet"


__all__ = [
    "ZOO_MODELS",
    "ZooModel",
    "get_model",
    "iterations_to_complete",
    "loss_curve_for",
    "model_for_gpu_time",
    "quality_curve",
    "speed_model",
    "zoo_data",
]
