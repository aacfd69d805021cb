"""Pollux's all-reduce throughput model: prediction (fast, scalar) and fitting.

Pollux (Qiao et al., OSDI'21, ``simulator/goodput.py`` of petuum/adaptdl) models one
data-parallel iteration on ``K`` replicas with local batch ``m`` as

* compute ``T_grad(m) = alpha_c + beta_c * m``,
* sync ``T_sync = alpha_n + beta_n * max(K - 2, 0)`` when the replicas span several
  nodes, ``alpha_r + beta_r * max(K - 2, 0)`` on one node, and none when ``K = 1``,
* overlap ``T_iter = (T_grad^gamma + T_sync^gamma)^(1 / gamma)``, ``gamma >= 1``.

Like Pollux's, the model tells one node from several but not how many nodes: (4, 4)
and (2, 2, 2, 2) run at the same speed (the retrogression term grows with ``K``).

The parameter-server model of Optimus lives in :mod:`cluster_envs.perf.optimus_ps` and
is re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import least_squares

from cluster_envs.perf.optimus_ps import OptimusPSThroughput, fit_optimus_ps
from cluster_envs.perf.speed import shape_totals
from cluster_envs.types import Immutable

#: Tolerance of the ceil() in the gradient-accumulation rule (as in Pollux).
CEIL_EPS = 1e-8
#: Bounds of the overlap exponent (Pollux limits gamma to [1, 10]).
GAMMA_BOUNDS = (1.0, 10.0)
#: Smallest value any time parameter may take in the fit (s).
TIME_FLOOR_S = 1e-8
#: Default weight of the compute-time and sync-time residuals against the step-time ones.
#: 0 (Pollux's choice: fit step time only) predicted held-out step times best here
#: (median error 4-7 % vs 5-10 % at 0.5; scripts/fit_model_zoo.py).
COMPONENT_WEIGHT = 0.0


@dataclass(frozen=True)
class PolluxThroughput(Immutable):
    """Iterations per second of an all-reduce job at a fixed global batch size.

    Attributes:
        alpha_c: Constant compute time per micro-step (s).
        beta_c: Compute time per sample of local batch (s/sample).
        alpha_n: Cross-node sync constant (s).
        beta_n: Cross-node sync retrogression per replica beyond 2 (s).
        alpha_r: Single-node sync constant (s).
        beta_r: Single-node sync retrogression per replica beyond 2 (s).
        gamma: Compute/sync overlap exponent (1 = no overlap, large = full overlap).
        batch_size: Global batch size ``B`` (samples per iteration).
        max_local_bsz: Largest micro-batch one GPU fits. Gradient accumulation rule
            (Pollux's): with ``m = B / K`` the job takes ``s = ceil(m / max_local_bsz)``
            micro-steps of ``a = ceil(m / s)`` samples; the first ``s - 1`` cost
            ``T_grad(a)`` each and the last one costs ``T_iter(a)`` (it overlaps sync).
    """

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float
    batch_size: int
    max_local_bsz: int

    def __post_init__(self) -> None:
        for name in ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"PolluxThroughput.{name} must be finite and >= 0, got {value}")
        if self.alpha_c + self.beta_c <= 0:
            raise ValueError("PolluxThroughput needs alpha_c + beta_c > 0")
        if not self.gamma >= 1:
            raise ValueError(f"PolluxThroughput.gamma must be >= 1, got {self.gamma}")
        if self.batch_size < 1 or self.max_local_bsz < 1:
            raise ValueError(
                f"PolluxThroughput needs batch_size >= 1 and max_local_bsz >= 1, got "
                f"{self.batch_size}, {self.max_local_bsz}"
            )

    def with_batch_size(self, batch_size: int) -> PolluxThroughput:
        """The same hardware model at another global batch size."""
        return replace(self, batch_size=int(batch_size))

    def iteration_time(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Seconds per iteration (all micro-steps included) on the given placement shape.

        Raises:
            ValueError: Empty or all-zero placement, or non-positive speeds.
        """
        replicas, nodes = shape_totals(gpus_per_node, compute_speed, network_speed)
        local = self.batch_size / replicas
        steps = max(math.ceil(local / self.max_local_bsz - CEIL_EPS), 1)
        atomic = math.ceil(local / steps - CEIL_EPS)
        t_grad = (self.alpha_c + self.beta_c * atomic) / compute_speed
        if replicas == 1:
            return steps * t_grad
        extra = replicas - 2 if replicas > 2 else 0
        if nodes > 1:
            t_sync = (self.alpha_n + self.beta_n * extra) / network_speed
        else:
            t_sync = self.alpha_r + self.beta_r * extra
        g = self.gamma
        t_iter = (t_grad**g + t_sync**g) ** (1.0 / g) if t_sync > 0 else t_grad
        return (steps - 1) * t_grad + t_iter

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Iterations per second (see :class:`~cluster_envs.perf.speed.SpeedModel`).

        Args:
            gpus_per_node: GPUs used on each node the job spans (order irrelevant).
            compute_speed: Speed of the slowest GPU type used, relative to a T4; divides
                ``T_grad``.
            network_speed: Inter-node bandwidth relative to 50 Gbit/s; divides only the
                cross-node sync time.
        """
        return 1.0 / self.iteration_time(gpus_per_node, compute_speed, network_speed)


def predict_step_time(
    params: ArrayLike, num_nodes: ArrayLike, num_replicas: ArrayLike, local_bsz: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised single-micro-step prediction, for fitting and evaluation.

    Args:
        params: ``(alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma)``.
        num_nodes: Nodes spanned per row.
        num_replicas: GPUs per row.
        local_bsz: Per-GPU batch per row (samples).

    Returns:
        ``(step_time_s, grad_time_s, sync_time_s)`` arrays.
    """
    a_c, b_c, a_n, b_n, a_r, b_r, gamma = np.asarray(params, dtype=float)
    nodes = np.asarray(num_nodes, dtype=float)
    reps = np.asarray(num_replicas, dtype=float)
    t_grad = a_c + b_c * np.asarray(local_bsz, dtype=float)
    extra = np.maximum(reps - 2.0, 0.0)
    t_sync = np.where(nodes > 1, a_n + b_n * extra, a_r + b_r * extra)
    t_sync = np.where(reps > 1, t_sync, 0.0)
    step = (t_grad**gamma + t_sync**gamma) ** (1.0 / gamma)
    return step, t_grad, t_sync


def _linear_nonneg(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares ``y ~ a + b*x`` (relative error) with ``a, b >= 0``."""
    if x.size == 0:
        return TIME_FLOOR_S, TIME_FLOOR_S
    design = np.column_stack([np.ones_like(x), x]) / y[:, None]
    res = least_squares(lambda p: design @ p - 1.0, [y.mean(), 0.0], bounds=(0.0, np.inf))
    return float(max(res.x[0], TIME_FLOOR_S)), float(max(res.x[1], TIME_FLOOR_S))


def fit_pollux(
    num_nodes: ArrayLike,
    num_replicas: ArrayLike,
    local_bsz: ArrayLike,
    step_time: ArrayLike,
    sync_time: ArrayLike,
    *,
    batch_size: int = 1,
    max_local_bsz: int = 1,
    component_weight: float = COMPONENT_WEIGHT,
) -> PolluxThroughput:
    """Fit the seven Pollux parameters to measured iterations.

    First ``T_grad`` is fitted to ``step_time - sync_time``, the single-node and the
    multi-node sync parameters to ``sync_time`` of the matching rows (all in relative
    error); these start a joint fit of all seven on ``log(step_time)`` (optionally keeping
    ``component_weight``-weighted residuals of the compute and sync times). All times
    are >= 0 and ``gamma`` lies in [1, 10].

    Args:
        num_nodes: Nodes spanned per measurement.
        num_replicas: GPUs per measurement.
        local_bsz: Per-GPU batch (samples) per measurement.
        step_time: Measured seconds per iteration.
        sync_time: Measured seconds of it spent in gradient synchronisation.
        batch_size: Global batch of the returned model.
        max_local_bsz: Micro-batch limit of the returned model.
        component_weight: Weight of the log-error residuals of ``step - sync`` (compute)
            and ``sync`` against the step-time ones; 0 fits step time only.
    """
    nodes, reps, bsz, step, sync = (
        np.asarray(a, dtype=float).ravel()
        for a in (num_nodes, num_replicas, local_bsz, step_time, sync_time)
    )
    if not (nodes.size == reps.size == bsz.size == step.size == sync.size) or nodes.size < 3:
        raise ValueError("fit_pollux needs >= 3 rows of equal-length arrays")
    if np.any(step <= 0) or np.any(sync < 0) or np.any(reps < nodes) or np.any(nodes < 1):
        raise ValueError("fit_pollux needs step_time > 0, sync_time >= 0, 1 <= nodes <= replicas")
    grad = np.maximum(step - sync, TIME_FLOOR_S)
    a_c, b_c = _linear_nonneg(bsz, grad)
    multi, single = (reps > 1) & (nodes > 1), (reps > 1) & (nodes == 1)
    sync_pos = np.maximum(sync, TIME_FLOOR_S)
    a_n, b_n = _linear_nonneg(np.maximum(reps[multi] - 2, 0), sync_pos[multi])
    a_r, b_r = _linear_nonneg(np.maximum(reps[single] - 2, 0), sync_pos[single])
    x0 = np.array([a_c, b_c, a_n, b_n, a_r, b_r, 1.5])
    scale = np.maximum(np.abs(x0), TIME_FLOOR_S)
    has_sync = reps > 1

    def residuals(z: np.ndarray) -> np.ndarray:
        x = z * scale
        x[6] = z[6]
        pred_step, pred_grad, pred_sync = predict_step_time(x, nodes, reps, bsz)
        r_step = np.log(pred_step) - np.log(step)
        if component_weight <= 0:
            return r_step
        r_grad = component_weight * (np.log(pred_grad) - np.log(grad))
        pred_sync = np.maximum(pred_sync[has_sync], TIME_FLOOR_S)
        r_sync = component_weight * (np.log(pred_sync) - np.log(sync_pos[has_sync]))
        return np.concatenate([r_step, r_grad, r_sync])

    lower = np.full(7, TIME_FLOOR_S) / scale
    upper = np.full(7, np.inf)
    lower[6], upper[6] = GAMMA_BOUNDS
    z0 = np.clip(x0 / scale, lower * 1.001, None)
    z0[6] = x0[6]
    fit = least_squares(residuals, z0, bounds=(lower, upper))
    x = fit.x * scale
    x[6] = fit.x[6]
    alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = (float(v) for v in x)
    return PolluxThroughput(
        alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma,
        int(batch_size), int(max_local_bsz),
    )  # fmt: skip


__all__ = [
    "OptimusPSThroughput",
    "PolluxThroughput",
    "fit_optimus_ps",
    "fit_pollux",
    "predict_step_time",
]
