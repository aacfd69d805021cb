"""Statistics for benchmark tables: means with Student-t confidence intervals.

With ``n`` seeds, the 95% interval of a mean is ``mean +- t_{0.975, n-1} * s / sqrt(n)``
with ``s`` the sample standard deviation (ddof=1). One seed has no interval: its
half-width is NaN and it prints as ``mean (n=1)``, never as ``± 0`` or ``± inf``.

This is the one confidence-interval function of the project (the CLI, the agents'
``evaluate``, the model cards and the benchmark scripts all call :func:`mean_ci`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Metrics where larger is better (every other metric is minimised).
HIGHER_IS_BETTER = frozenset({"gpu_utilization", "quality_auc", "episode_return"})
#: Metrics shown in summaries, in this order, when present.
SUMMARY_METRICS = (
    "avg_jct_s",
    "p95_jct_s",
    "avg_queue_s",
    "bounded_slowdown",
    "makespan_s",
    "gpu_utilization",
    "jct_ratio_to_lower_bound",
    "quality_auc",
    "time_to_quality_s",
)


@dataclass(frozen=True)
class MeanCI:
    """A mean, its confidence half-width and the number of samples."""

    mean: float
    half_width: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def format(self, digits: int = 3) -> str:
        """``mean ± half`` with a sensible number of significant digits.

        One sample prints as ``mean (n=1)``: there is no interval to show.
        """
        if math.isnan(self.mean):
            return "nan"
        if not math.isfinite(self.half_width):
            return f"{_fmt(self.mean, digits)} (n={self.n})"
        return f"{_fmt(self.mean, digits)} ± {_fmt(self.half_width, digits)}"


def _fmt(x: float, digits: int) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> MeanCI:
    """Mean and Student-t confidence half-width of ``values`` (NaNs and ``None`` dropped).

    Args:
        values: Samples (one per seed).
        confidence: Coverage of the interval, in (0, 1).

    Returns:
        ``MeanCI``; ``half_width`` is NaN when fewer than two samples remain (and the
        mean too when none does).
    """
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    n = len(arr)
    if n == 0:
        return MeanCI(float("nan"), float("nan"), 0)
    mean = float(arr.mean())
    if n == 1:
        return MeanCI(mean, float("nan"), 1)
    from scipy import stats  # imported here: the CLI must start without scipy

    sem = float(arr.std(ddof=1)) / math.sqrt(n)
    t = float(stats.t.ppf(0.5 + confidence / 2.0, df=n - 1))
    return MeanCI(mean, t * sem, n)


def group_rows(
    rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Rows grouped by the values of ``keys``, in first-seen order."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups


def summarize(
    rows: Sequence[dict[str, Any]], baselines: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """One summary row per (env, workload, policy): mean ± CI of every metric present.

    ``improvement_vs_best_baseline_pct`` compares the policy's mean ``quality_auc`` (on
    quality workloads) or ``avg_jct_s`` (elsewhere) with the best mean among
    ``baselines`` in the same (env, workload): positive is better.
    """
    baselines = set(baselines)
    out: list[dict[str, Any]] = []
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    for (env, workload), cell_rows in group_rows(ok, ("env", "workload")).items():
        per_policy = group_rows(cell_rows, ("policy",))
        summaries = {}
        for (policy,), prow in per_policy.items():
            metrics = {
                m: mean_ci(r["metrics"].get(m, float("nan")) for r in prow)
                for m in SUMMARY_METRICS
                if any(m in r["metrics"] for r in prow)
            }
            summaries[policy] = metrics
        key_metric = (
            "quality_auc" if any("quality_auc" in s for s in summaries.values()) else "avg_jct_s"
        )
        best = _best_baseline(summaries, baselines, key_metric)
        for policy, metrics in summaries.items():
            row: dict[str, Any] = {
                "env": env,
                "workload": workload,
                "policy": policy,
                "num_seeds": max((c.n for c in metrics.values()), default=0),
                "metrics": metrics,
            }
            if best is not None and key_metric in metrics:
                mine = metrics[key_metric].mean
                sign = -1.0 if key_metric not in HIGHER_IS_BETTER else 1.0
                row["best_baseline"] = best[0]
                row["improvement_vs_best_baseline_pct"] = (
                    sign * 100.0 * (mine - best[1]) / abs(best[1])
                )
            out.append(row)
    return out


def paired_difference(
    rows: Sequence[dict[str, Any]], policy: str, reference: str, metric: str
) -> MeanCI:
    """Mean ± CI over seeds of ``metric(policy) - metric(reference)`` on the same episodes.

    Pairs are matched by (env, workload, seed); a pair where either value is NaN (e.g. a
    job never reached its quality) is left out, so ``n`` may be below the seed count.
    Differences cancel the workload-to-workload spread that dominates the CI of each mean.

    Raises:
        ValueError: No pair of the two policies is in ``rows``.
    """
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    values = {
        (r["policy"], r["env"], r["workload"], r["seed"]): r["metrics"].get(metric, math.nan)
        for r in ok
    }
    diffs = []
    for (name, env, workload, seed), value in values.items():
        if name != policy or (reference, env, workload, seed) not in values:
            continue
        diffs.append(value - values[(reference, env, workload, seed)])
    if not diffs:
        raise ValueError(f"no episodes shared by {policy!r} and {reference!r}")
    return mean_ci(diffs)


def _best_baseline(
    summaries: dict[str, dict[str, MeanCI]], baselines: set[str], metric: str
) -> tuple[str, float] | None:
    candidates = [
        (name, s[metric].mean)
        for name, s in summaries.items()
        if name in baselines and metric in s and not math.isnan(s[metric].mean)
    ]
    if not candidates:
        return None
    pick = max if metric in HIGHER_IS_BETTER else min
    return pick(candidates, key=lambda c: c[1])
