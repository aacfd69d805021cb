"""Optimus's parameter-server throughput model and its NNLS fit.

Optimus (Peng et al., EuroSys'18, eq. 3, synchronous training) predicts the training
speed of a job with ``p`` parameter servers and ``w`` workers as

``f(p, w) = 1 / (t0 * M / w + t1 + t2 * w / p + t3 * w + t4 * p)``  (iterations/s)

where ``M`` is the global batch size: ``t0 * M / w`` is the forward/backward time of one
worker's share, ``t1`` the fixed update overhead, ``t2 * w / p`` the parameter transfer
through each server, and ``t3 * w`` / ``t4 * p`` the per-connection overheads. The
``t`` coefficients are non-negative and fitted by non-negative least squares on
``1 / f`` from a handful of profiled ``(p, w)`` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import nnls

from cluster_envs.perf.speed import shape_totals
from cluster_envs.types import Immutable


@dataclass(frozen=True)
class OptimusPSThroughput(Immutable):
    """Parameter-server speed model, usable as a :class:`SpeedModel`.

    As a SpeedModel, the job runs one worker per GPU (``w`` = total GPUs) and one
    parameter server per node it spans (``p`` = number of nodes). ``compute_speed``
    divides the ``t0`` (forward/backward) term; ``network_speed`` divides the transfer
    term ``t2 * w / p`` when the job spans more than one node (on one node the transfer
    stays on the host and does not use the inter-node network).

    Attributes:
        t0: Compute time per sample on one worker (s/sample).
        t1: Fixed per-iteration overhead (s).
        t2: Transfer time factor (s).
        t3: Per-worker overhead (s).
        t4: Per-server overhead (s).
        batch_size: Global batch size ``M`` (samples per iteration).
    """

    t0: float
    t1: float
    t2: float
    t3: float
    t4: float
    batch_size: int = 1

    def __post_init__(self) -> None:
        for name in ("t0", "t1", "t2", "t3", "t4"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"OptimusPSThroughput.{name} must be finite and >= 0, got {value}")
        if self.t0 + self.t1 + self.t2 + self.t3 + self.t4 <= 0:
            raise ValueError("OptimusPSThroughput needs at least one positive t coefficient")
        if self.batch_size < 1:
            raise ValueError(f"OptimusPSThroughput.batch_size must be >= 1, got {self.batch_size}")

    def speed(self, p: float, w: float, network_speed: float = 1.0) -> float:
        """``f(p, w)`` in iterations/s for ``p`` servers and ``w`` workers."""
        if p <= 0 or w <= 0:
            raise ValueError(f"need p > 0 and w > 0, got p={p}, w={w}")
        transfer = self.t2 * w / p / network_speed
        denom = self.t0 * self.batch_size / w + self.t1 + transfer + self.t3 * w + self.t4 * p
        return 1.0 / denom

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Iterations per second with ``w = sum(gpus_per_node)``, ``p = nodes spanned``."""
        w, p = shape_totals(gpus_per_node, compute_speed, network_speed)
        net = network_speed if p > 1 else 1.0
        denom = (
            self.t0 * self.batch_size / w / compute_speed
            + self.t1
            + self.t2 * w / p / net
            + self.t3 * w
            + self.t4 * p
        )
        return 1.0 / denom


def fit_optimus_ps(
    p: ArrayLike, w: ArrayLike, speed: ArrayLike, batch_size: int = 1
) -> OptimusPSThroughput:
    """Fit ``t0..t4`` to profiled speeds by non-negative least squares on ``1/speed``.

    Args:
        p: Parameter servers per profiled point.
        w: Workers per profiled point.
        speed: Measured iterations per second per point.
        batch_size: Global batch size ``M`` the points were measured at.

    Raises:
        ValueError: Mismatched lengths, no points, or non-positive values.
    """
    p_arr, w_arr, s_arr = (np.asarray(a, dtype=float).ravel() for a in (p, w, speed))
    if not (p_arr.size == w_arr.size == s_arr.size) or p_arr.size == 0:
        raise ValueError("fit_optimus_ps needs equal-length, non-empty p, w, speed")
    if np.any(p_arr <= 0) or np.any(w_arr <= 0) or np.any(s_arr <= 0):
        raise ValueError("fit_optimus_ps needs p, w and speed > 0")
    design = np.column_stack([batch_size / w_arr, np.ones_like(w_arr), w_arr / p_arr, w_arr, p_arr])
    # Relative error: divide each row by its target so slow and fast points weigh alike.
    target = 1.0 / s_arr
    coef, _ = nnls(design / target[:, None], np.ones_like(target))
    t0, t1, t2, t3, t4 = (float(c) for c in coef)
    return OptimusPSThroughput(t0, t1, t2, t3, t4, batch_size=int(batch_size))


__all__ = ["OptimusPSThroughput", "fit_optimus_ps"]
