"""A fast, vectorised Optimus loss-curve fit for use inside environment steps.

``fit_loss_curve`` (scipy least squares) costs about 2 ms; an env that refits every
running job's curve cannot afford that at 10k steps/s. For a fixed asymptote ``b2`` the
model is linear after a transform, ``1 / (l - b2) = b0 * k + b1``, so this fit profiles
``b2`` over a grid below the smallest observed loss, solves the weighted linear
regression for ``(b0, b1)`` of every grid point in closed form (one numpy pass), and
keeps the candidate with the smallest weighted squared error *in loss space*. Accuracy
is close to the full fit (see tests/test_perf_loss_fast.py); cost is ~50 us.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from cluster_envs.perf.loss_curve import (
    EARLIEST_WEIGHT,
    MIN_FIT_POINTS,
    PARAM_FLOOR,
    _as_arrays,
)
from cluster_envs.types import LossCurveParams

#: Candidate asymptotes, as fractions of the smallest observed loss.
B2_GRID = np.concatenate([[0.0], 1.0 - np.geomspace(1.0, 1e-3, 31)[1:], [0.9995]])


def fit_loss_curve_fast(
    k: ArrayLike, loss: ArrayLike, weights: ArrayLike | None = None
) -> LossCurveParams:
    """Fit ``l(k) = 1/(b0 k + b1) + b2`` by profiling ``b2`` (see module docstring).

    Args:
        k: Iterations at which the loss was observed (``>= 0``).
        loss: Observed losses.
        weights: Per-point weights (default: later points weigh more, as in
            :func:`~cluster_envs.perf.loss_curve.fit_loss_curve`).

    Returns:
        Parameters with ``b0, b1 > 0`` and ``0 <= b2 < min(loss)``.
    """
    k_arr, loss_arr, w = _as_arrays(k, loss, weights)
    return fit_arrays(k_arr, loss_arr, w)


def ramp_weights(k: np.ndarray) -> np.ndarray:
    """The default weights: a linear ramp from 0.25 (earliest point) to 1 (latest)."""
    span = float(k[-1] - k[0]) if len(k) > 1 else 0.0
    if span <= 0:
        return np.ones_like(k)
    return EARLIEST_WEIGHT + (1.0 - EARLIEST_WEIGHT) * (k - k[0]) / span


def fit_arrays(k_arr: np.ndarray, loss_arr: np.ndarray, w: np.ndarray) -> LossCurveParams:
    """:func:`fit_loss_curve_fast` on validated float arrays (no checks; hot path)."""
    lo = float(loss_arr.min())
    b2 = (B2_GRID * lo)[:, None]  # (G, 1)
    # Hot path: few numpy calls. Row sums of equal length are reduced together (one
    # reduce over the last axis of a stack gives each row the same sum as alone).
    sums = np.empty((3, len(B2_GRID), len(k_arr)))
    gap = np.subtract(loss_arr, b2, out=sums[2])  # (G, n), then floored in place
    np.maximum(gap, PARAM_FLOOR, out=gap)
    y = 1.0 / gap
    # Weighted regression of y on k, in closed form per grid row. The transform
    # stretches errors by (l - b2)^-2, so weigh by (l - b2)^2 to approximate loss space.
    wy = np.multiply(gap, gap, out=sums[0])
    wy *= w
    np.multiply(wy, k_arr, out=sums[1])
    np.multiply(wy, y, out=sums[2])
    sw, swk, swy = np.add.reduce(sums, axis=2)
    mk = swk / sw
    my = swy / sw
    dk = k_arr - mk[:, None]
    wdk = wy * dk
    y -= my[:, None]
    np.multiply(wdk, dk, out=sums[1])
    np.multiply(wdk, y, out=sums[2])
    var, cov = np.add.reduce(sums[1:], axis=2)
    ok = var > 0
    b0 = np.where(ok, cov / np.where(ok, var, 1.0), 0.0)
    np.maximum(b0, PARAM_FLOOR, out=b0)
    b1 = np.maximum(my - b0 * mk, PARAM_FLOOR)
    pred = np.multiply.outer(b0, k_arr)
    pred += b1[:, None]
    np.divide(1.0, pred, out=pred)
    pred += b2
    pred -= loss_arr
    pred *= pred
    pred *= w
    best = int(np.argmin(np.add.reduce(pred, axis=1)))
    return LossCurveParams(b0=float(b0[best]), b1=float(b1[best]), b2=float(b2[best, 0]))


__all__ = ["MIN_FIT_POINTS", "fit_arrays", "fit_loss_curve_fast", "ramp_weights"]
