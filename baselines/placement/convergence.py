"""Learning a job's length from the start of its loss curve (what the placer may know).

A batch job's true loss curve is the model-zoo curve of its model, stretched to its true
length (:func:`cluster_envs.perf.zoo.loss_curve_for`); its convergence target is the
curve's value there (the user's target). The placer sees noisy observations of that curve
at the simulator's own logging interval (1/50 of the model's full-run prior,
:data:`cluster_envs.sim.estimate.OBSERVATIONS_PER_PRIOR_RUN`) over the first
``observed_fraction`` of training, fits the Optimus curve ``1/(b0 k + b1) + b2`` with the
simulator's fitter, and inverts it at the target -- the same rule and the same clipping as
:class:`cluster_envs.sim.estimate.WorkEstimator`, so offline instances and online episodes
estimate lengths alike. With fewer than ``MIN_OBSERVATIONS`` points the estimate is the
prior (the model's full run at that batch size).
"""

from __future__ import annotations

import math

import numpy as np

from cluster_envs.perf import zoo
from cluster_envs.perf.loss_curve import fit_loss_curve, iterations_to_target, observe_loss
from cluster_envs.perf.loss_fast import fit_loss_curve_fast
from cluster_envs.sim.estimate import (
    MAX_PRIOR_MULTIPLE,
    MIN_OBSERVATIONS,
    OBSERVATIONS_PER_PRIOR_RUN,
)

#: Fitters by name: the simulator's fast profiled fit, or scipy's bounded least squares.
FITTERS = {"fast": fit_loss_curve_fast, "scipy": fit_loss_curve}


def observe_prefix(
    model: str,
    batch_size: int,
    total_iterations: float,
    observed_fraction: float,
    noise_std: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Noisy loss observations over the first ``observed_fraction`` of a job's training.

    Returns:
        ``(iterations, losses, target_loss)``; the arrays may be shorter than
        MIN_OBSERVATIONS when the observed prefix is short.
    """
    curve, target = zoo.loss_curve_for(model, total_iterations)
    interval = zoo.iterations_to_complete(model, batch_size) / OBSERVATIONS_PER_PRIOR_RUN
    count = int(observed_fraction * total_iterations // interval)
    ks = interval * np.arange(1, count + 1, dtype=float)
    losses = np.asarray([observe_loss(curve, float(k), rng, noise_std) for k in ks])
    return ks, losses, target


def estimate_iterations(
    model: str,
    batch_size: int,
    total_iterations: float,
    observed_fraction: float,
    noise_std: float,
    rng: np.random.Generator,
    fitter: str = "fast",
) -> float:
    """A scheduler's estimate of a job's iterations to convergence (module docstring).

    Args:
        model: Zoo model.
        batch_size: Global batch size (sets the prior and the logging interval).
        total_iterations: True length (hidden; generates the observations).
        observed_fraction: Fraction of training observed, in ``(0, 1]``.
        noise_std: Relative noise of each loss observation.
        rng: The caller's generator (one per job, for reproducible noise).
        fitter: ``"fast"`` (the simulator's) or ``"scipy"``.

    Returns:
        Estimated total iterations, within ``[observed iterations, 20 x prior]``.
    """
    prior = zoo.iterations_to_complete(model, batch_size)
    ks, losses, target = observe_prefix(
        model, batch_size, total_iterations, observed_fraction, noise_std, rng
    )
    if ks.size < MIN_OBSERVATIONS:
        return float(prior)
    done = float(ks[-1])
    fit = FITTERS[fitter](ks, losses)
    total = iterations_to_target(fit, target)
    if not math.isfinite(total):
        total = max(prior, 2.0 * done)
    return float(max(min(total, MAX_PRIOR_MULTIPLE * prior), done))
