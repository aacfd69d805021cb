"""Normalisers every encoder shares: durations, counts and ratios -> [0, 1].

Durations use ``log1p(t / 60 s) / log1p(TIME_NORM_S / 60 s)`` (clipped), so seconds-long
and week-long jobs both stay distinguishable; counts a ``log1p`` scale against a named
norm; unbounded non-negative ratios ``x / (1 + x)``.
"""

from __future__ import annotations

import math

import numpy as np

from cluster_envs.perf import zoo

#: Durations are normalised against 30 days.
TIME_NORM_S = 30 * 24 * 3600.0
_LOG_TIME_NORM = math.log1p(TIME_NORM_S / 60.0)
#: Model one-hot names: the zoo's models, then ``other`` for anything else.
MODEL_NAMES = (*zoo.ZOO_MODELS, "other")


def norm_time(seconds: float) -> float:
    """A duration (s) in [0, 1] on a log scale (0 s -> 0, 30 days -> 1)."""
    if not seconds > 0:
        return 0.0
    return min(math.log1p(seconds / 60.0) / _LOG_TIME_NORM, 1.0)


def norm_times(seconds: np.ndarray) -> np.ndarray:
    """:func:`norm_time` of an array of durations (s)."""
    return np.minimum(np.log1p(np.maximum(seconds, 0.0) / 60.0) / _LOG_TIME_NORM, 1.0)


def log_count(count: float, norm: float) -> float:
    """A count in [0, 1] on a log scale: ``log1p(count) / log1p(norm)``, clipped at 1."""
    return min(math.log1p(max(count, 0.0)) / math.log1p(norm), 1.0)


def squash(x: float) -> float:
    """Map ``[0, inf)`` to ``[0, 1)`` monotonically: ``x / (1 + x)``."""
    return x / (1.0 + x) if x > 0 else 0.0


def model_index(model: str) -> int:
    """Position of ``model`` in :data:`MODEL_NAMES` (``other`` for a non-zoo model)."""
    return MODEL_NAMES.index(model if model in zoo.ZOO_MODELS else "other")


def prior_curve_features(model: str) -> tuple[float, float, float]:
    """The model's prior loss-curve parameters (in fraction-of-training units), squashed."""
    if model not in zoo.ZOO_MODELS:
        return (0.0, 0.0, 0.0)
    c = zoo.get_model(model).loss_curve_fraction
    return (squash(c.b0), squash(c.b1), squash(c.b2))
