"""The aggregate statistics RL papers report (Agarwal et al., NeurIPS'21, "Deep RL at the
Edge of the Statistical Precipice"): interquartile mean, stratified bootstrap intervals,
probability of improvement and performance profiles.

Implemented here with numpy (a few lines each) rather than through the ``rliable``
package, which would add ``arch``, ``statsmodels`` and ``seaborn`` to the dependencies
for these four functions. Scores here are *ratios to a reference, lower is better*
(1.0 = the best heuristic), given as a ``(runs, tasks)`` matrix: one column per task
(env x family), one row per seed; ``nan`` marks a missing run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Bootstrap resamples of the intervals, and their seed (same data -> same interval).
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 0


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values (nan ignored).

    The values are sorted and the lowest and highest quarter (``floor(n / 4)`` each)
    dropped, as the 25%-trimmed mean of scipy does.
    """
    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    cut = x.size // 4
    return float(x[cut : x.size - cut].mean())


def stratified_bootstrap_ci(
    scores: np.ndarray,
    statistic: Callable[[np.ndarray], float],
    confidence: float = 0.95,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float, float]:
    """``(point, low, high)`` of ``statistic`` over a ``(runs, tasks)`` score matrix.

    Each resample draws, within every task (column) separately, as many runs as it has
    with replacement (the stratified bootstrap: tasks are fixed, seeds are random);
    the interval is the percentile interval of the resampled statistic.
    """
    scores = np.asarray(scores, dtype=float)
    point = statistic(scores)
    rng = np.random.default_rng(seed)
    columns = [scores[~np.isnan(scores[:, t]), t] for t in range(scores.shape[1])]
    columns = [c for c in columns if c.size]
    if not columns:
        return point, float("nan"), float("nan")
    width = max(c.size for c in columns)
    samples = np.empty(reps)
    for r in range(reps):
        sample = np.full((width, len(columns)), np.nan)
        for t, col in enumerate(columns):
            sample[: col.size, t] = col[rng.integers(col.size, size=col.size)]
        samples[r] = statistic(sample)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.nanquantile(samples, [alpha, 1.0 - alpha])
    return point, float(low), float(high)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(a run of X beats a run of Y), averaged over tasks; lower scores are better.

    Per task, the Mann-Whitney statistic: the fraction of (x, y) run pairs with
    ``x < y``, ties counted half. ``x`` and ``y`` are ``(runs, tasks)`` matrices.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    per_task = []
    for t in range(x.shape[1]):
        a, b = x[:, t][~np.isnan(x[:, t])], y[:, t][~np.isnan(y[:, t])]
        if a.size and b.size:
            less = (a[:, None] < b[None, :]).mean()
            ties = (a[:, None] == b[None, :]).mean()
            per_task.append(less + 0.5 * ties)
    return float(np.mean(per_task)) if per_task else float("nan")


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Fraction of all runs with ratio ``<= tau``, for every ``tau`` (lower is better)."""
    x = np.asarray(scores, dtype=float).ravel()
    x = x[~np.isnan(x)]
    if x.size == 0:
        return np.full(len(taus), np.nan)
    return np.array([(x <= tau).mean() for tau in taus])
