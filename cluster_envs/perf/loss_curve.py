"""Optimus loss curves: fitting, online refitting, inversion, convergence and noise.

Optimus (Peng et al., EuroSys'18) models the training loss after ``k`` iterations as
``l(k) = 1 / (b0 * k + b1) + b2`` with ``b0, b1, b2 >= 0`` and fits it to the observed
``(k, loss)`` history by non-negative (bounded) least squares, weighting later points
more. The scheduler only ever sees curves fitted to noisy observations; the true curve
(a :class:`~cluster_envs.types.LossCurveParams`) stays inside the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import least_squares

from cluster_envs.types import LossCurveParams

#: Fewest observations a three-parameter fit accepts.
MIN_FIT_POINTS = 3
#: Lower bound on b0 and b1 in the fit, so that ``l(0)`` stays finite.
PARAM_FLOOR = 1e-12
#: Default weight ramp: the earliest point weighs this much, the latest 1.
EARLIEST_WEIGHT = 0.25
#: Initial guess of b2 as a fraction of the smallest observed loss.
B2_INIT_FRACTION = 0.5
#: Function-evaluation budget of a warm-started (online) refit.
WARM_MAX_NFEV = 50
#: Observed losses are clipped to at least this fraction of the true loss.
MIN_OBSERVED_FRACTION = 1e-3


def _default_weights(k: np.ndarray) -> np.ndarray:
    """Linear ramp from EARLIEST_WEIGHT (first iteration seen) to 1 (last)."""
    span = float(k.max() - k.min())
    if span <= 0:
        return np.ones_like(k)
    return EARLIEST_WEIGHT + (1.0 - EARLIEST_WEIGHT) * (k - k.min()) / span


def _initial_guess(k: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Linearise ``1 / (l - b2) = b0 * k + b1`` for a guessed ``b2`` and regress."""
    b2 = max(B2_INIT_FRACTION * float(loss.min()), 0.0)
    y = 1.0 / np.maximum(loss - b2, PARAM_FLOOR)
    if float(np.ptp(k)) > 0:
        b0, b1 = np.polyfit(k, y, 1)
    else:
        b0, b1 = 0.0, float(y.mean())
    b0 = max(float(b0), PARAM_FLOOR)
    b1 = max(float(b1), PARAM_FLOOR)
    return np.array([b0, b1, b2])


def _solve(
    k: np.ndarray, loss: np.ndarray, weights: np.ndarray, x0: np.ndarray, max_nfev: int | None
) -> LossCurveParams:
    sqrt_w = np.sqrt(weights)
    scale = max(float(np.abs(loss).mean()), PARAM_FLOOR)

    def residuals(x: np.ndarray) -> np.ndarray:
        return sqrt_w * (1.0 / (x[0] * k + x[1]) + x[2] - loss) / scale

    lower = np.array([PARAM_FLOOR, PARAM_FLOOR, 0.0])
    x0 = np.clip(np.nan_to_num(x0, nan=PARAM_FLOOR), lower, None)
    x0 = np.maximum(x0, lower * 2)  # strictly inside the bounds
    result = least_squares(residuals, x0, bounds=(lower, np.inf), x_scale="jac", max_nfev=max_nfev)
    x = result.x if np.all(np.isfinite(result.x)) else x0
    return LossCurveParams(b0=float(x[0]), b1=float(x[1]), b2=float(x[2]))


def _as_arrays(
    k: ArrayLike, loss: ArrayLike, weights: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k_arr = np.asarray(k, dtype=float).ravel()
    loss_arr = np.asarray(loss, dtype=float).ravel()
    if k_arr.shape != loss_arr.shape:
        raise ValueError(f"k and loss differ in length: {k_arr.size} vs {loss_arr.size}")
    if k_arr.size < MIN_FIT_POINTS:
        raise ValueError(
            f"fit_loss_curve needs at least {MIN_FIT_POINTS} (k, loss) points, got {k_arr.size}"
        )
    if not (np.all(np.isfinite(k_arr)) and np.all(np.isfinite(loss_arr))):
        raise ValueError("k and loss must be finite")
    if np.any(k_arr < 0):
        raise ValueError("iteration counts k must be >= 0")
    if weights is None:
        w = _default_weights(k_arr)
    else:
        w = np.asarray(weights, dtype=float).ravel()
        if w.shape != k_arr.shape or np.any(w < 0) or not np.any(w > 0):
            raise ValueError("weights must be non-negative, not all zero, one per point")
    return k_arr, loss_arr, w


def fit_loss_curve(
    k: ArrayLike, loss: ArrayLike, weights: ArrayLike | None = None
) -> LossCurveParams:
    """Fit ``l(k) = 1 / (b0 * k + b1) + b2`` by bounded weighted least squares.

    Args:
        k: Iterations (or epochs) at which the loss was observed, each ``>= 0``.
        loss: Observed losses, same length as ``k``.
        weights: Per-point weights; default ramps linearly from 0.25 at the earliest
            point to 1 at the latest (Optimus weighs later points more).

    Returns:
        Fitted parameters, all finite, ``b0, b1 > 0`` and ``b2 >= 0``.

    Raises:
        ValueError: Fewer than 3 points, mismatched lengths or non-finite input.
    """
    k_arr, loss_arr, w = _as_arrays(k, loss, weights)
    return _solve(k_arr, loss_arr, w, _initial_guess(k_arr, loss_arr), max_nfev=None)


def iterations_to_target(params: LossCurveParams, target: float) -> float:
    """Iterations until the curve reaches ``target``: ``k* = (1/(L* - b2) - b1) / b0``.

    Returns ``inf`` when the target is at or below the asymptote ``b2`` (or the curve
    is flat), and ``0`` when the curve starts at or below the target.
    """
    if target <= params.b2 or params.b0 <= 0:
        return math.inf
    return max((1.0 / (target - params.b2) - params.b1) / params.b0, 0.0)


def has_converged(losses: Sequence[float], window: int, threshold: float) -> bool:
    """Optimus's convergence rule on a per-epoch loss history.

    The job has converged once the loss dropped by less than ``threshold`` (absolute
    loss units) over the last ``window`` epochs, i.e. ``losses[-window-1] -
    losses[-1] < threshold``. Needs ``window + 1`` entries, else returns False.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    if len(losses) < window + 1:
        return False
    return float(losses[-window - 1]) - float(losses[-1]) < threshold


def observe_loss(
    params: LossCurveParams, k: float, rng: np.random.Generator, noise_std: float
) -> float:
    """A noisy observation ``l(k) * (1 + noise_std * N(0, 1))``, kept positive.

    Args:
        params: The true curve.
        k: Iterations done.
        rng: The caller's random generator (never the global one).
        noise_std: Relative standard deviation of the multiplicative noise, ``>= 0``.
    """
    if noise_std < 0:
        raise ValueError(f"noise_std must be >= 0, got {noise_std}")
    true = params.loss(k)
    noisy = true * (1.0 + noise_std * float(rng.standard_normal()))
    return max(noisy, MIN_OBSERVED_FRACTION * true)


class OnlineLossCurveFit:
    """A loss-curve fit that grows with the observation history.

    Each :meth:`update` refits, warm-started from the previous parameters with a small
    evaluation budget, so refitting after every epoch stays cheap.
    """

    def __init__(self) -> None:
        self._k: list[float] = []
        self._loss: list[float] = []
        self._params: LossCurveParams | None = None

    def __len__(self) -> int:
        return len(self._k)

    @property
    def params(self) -> LossCurveParams | None:
        """The current fit, or None before MIN_FIT_POINTS observations."""
        return self._params

    def update(self, k: float, loss: float) -> LossCurveParams | None:
        """Add the observation ``(k, loss)`` and refit; returns the new parameters."""
        if not (math.isfinite(k) and math.isfinite(loss)) or k < 0:
            raise ValueError(f"bad observation k={k}, loss={loss}")
        self._k.append(float(k))
        self._loss.append(float(loss))
        if len(self._k) < MIN_FIT_POINTS:
            return None
        k_arr, loss_arr, w = _as_arrays(self._k, self._loss, None)
        if self._params is None:
            x0, budget = _initial_guess(k_arr, loss_arr), None
        else:
            p = self._params
            x0, budget = np.array([p.b0, p.b1, p.b2]), WARM_MAX_NFEV
        self._params = _solve(k_arr, loss_arr, w, x0, max_nfev=budget)
        return self._params

    def iterations_to_target(self, target: float) -> float:
        """Fitted iterations to reach ``target`` (``inf`` before a fit or if unreachable)."""
        if self._params is None:
            return math.inf
        return iterations_to_target(self._params, target)


__all__ = [
    "MIN_FIT_POINTS",
    "OnlineLossCurveFit",
    "fit_loss_curve",
    "has_converged",
    "iterations_to_target",
    "observe_loss",
]
