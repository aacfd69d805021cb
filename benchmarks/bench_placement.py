"""Batch placement benchmark: BO (GP EI/PI/LCB/hedge, RF, ET) vs random, exhaustive, greedy.

For each instance family (``small``: exhaustive optimum known; ``medium``; ``large``: 112
nodes) and each seed, every method searches a placement and its best-so-far estimated
total JCT after every evaluation is recorded, with the optimiser's wall time per
suggestion. Reported (``benchmarks/results/placement.md/json`` and
``placement_<size>.png``):

* search-cost curves: best-so-far / reference vs evaluations, mean with a 95 % CI band
  (reference: the exhaustive optimum on ``small``, the best any method found elsewhere);
* evaluations to get within 5 % of the reference (median over seeds; runs that never get
  there count as "more than the budget");
* optimiser wall time per suggestion (all suggestions after the initial random points,
  and the last 10 of the budget: "at ~100 evaluations" on ``large``);
* the greedy heuristics on the same instances, and true-length JCT of every choice.

All skopt methods run with ``n_points = N_POINTS`` (candidate points scored per
suggestion; skopt's default 10,000 makes one GP suggestion on ``large`` cost several
seconds here), otherwise skopt's defaults. Usage::

    .venv/bin/python benchmarks/bench_placement.py [--quick] [--workers 2]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
N_POINTS = 1000
WITHIN = 0.05
BO = ("gp-ei", "gp-pi", "gp-lcb", "gp-hedge", "rf", "et", "gp-ei-tr", "rf-tr", "et-tr")
GREEDY = ("greedy-consolidate", "greedy-spread", "greedy-tetris", "greedy-optimus")
#: size -> (seeds, {method: calls}); random gets a larger budget: it costs nothing to ask.
#: ``large-100`` (same instances as ``large``) measures suggestion cost at 100+ evaluations.
FULL = {
    "small": (10, {**dict.fromkeys(BO, 25), "random": 300, "exhaustive": 0}),
    "medium": (10, {"gp-ei": 40, "rf": 40, "et": 40, "random": 300}),
    "large": (10, {"gp-ei": 40, "rf": 40, "et": 40, "random": 300}),
    "large-100": (2, {"gp-ei": 110, "rf": 110, "et": 110}),
}
#: A smaller grid for a loaded machine (the numbers committed on 2026-12-02): fewer seeds,
#: the trust-region searches next to the plain ones, 100+ evaluations on one seed.
MODEST = {
    "small": (5, {"gp-ei": 25, "rf": 25, "et": 25, "random": 300, "exhaustive": 0}),
    "medium": (5, {"gp-ei": 40, "gp-ei-tr": 40, "rf": 40, "rf-tr": 40, "random": 300}),
    "large": (3, {"gp-ei": 40, "gp-ei-tr": 40, "rf": 40, "rf-tr": 40, "random": 300}),
    "large-100": (1, {"gp-ei": 110, "rf": 110, "et": 110}),
}
QUICK = {
    "small": (2, {"gp-ei": 20, "rf": 20, "et": 20, "random": 100, "exhaustive": 0}),
    "medium": (2, {"gp-ei": 20, "rf": 20, "random": 100}),
    "large": (2, {"gp-ei": 15, "rf": 15, "random": 50}),
}


def _run(task: tuple[str, int, str, int]) -> dict[str, Any]:
    from baselines.placement.methods import run_method
    from baselines.placement.presets import make_instance

    size, seed, method, calls = task
    inst = make_instance(size.split("-")[0], seed)
    result = run_method(method, inst, max(calls, 1), seed, skopt_options={"n_points": N_POINTS})
    return {
        "size": size,
        "seed": seed,
        "method": method,
        "calls": calls,
        "costs_s": result.costs_s,
        "best_so_far_s": result.best_so_far_s,
        "suggest_s": result.suggest_s,
        "cost_estimated_s": result.cost_estimated_s,
        "cost_true_s": result.cost_true_s,
        "wall_s": result.wall_s,
        "placement": [[list(map(int, p)) for p in pl] for pl in result.configuration],
    }


def _ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % CI half-width (normal approximation) over axis 0."""
    mean = values.mean(axis=0)
    half = 1.96 * values.std(axis=0, ddof=1) / math.sqrt(len(values)) if len(values) > 1 else 0
    return mean, half


def _evals_to(best: list[float], ref: float) -> int | None:
    for i, b in enumerate(best):
        if b <= (1 + WITHIN) * ref:
            return i + 1
    return None


def _median_evals(hits: list[int | None], budget: int) -> str:
    values = sorted(math.inf if h is None else h for h in hits)
    med = float(np.median(values))
    return f">{budget}" if math.isinf(med) else f"{med:g}"


def summarise(rows: list[dict[str, Any]], plan: dict) -> dict[str, Any]:
    """Per size and method: curves, evaluations to 5 %, suggestion times, greedy quality."""
    out: dict[str, Any] = {}
    for size, (seeds, methods) in plan.items():
        mine = [r for r in rows if r["size"] == size]
        ref = {}
        for seed in range(seeds):
            runs = [r for r in mine if r["seed"] == seed]
            exact = [r for r in runs if r["method"] == "exhaustive"]
            pool = exact or runs
            ref[seed] = min(r["cost_estimated_s"] for r in pool)
            ref_true = min(pool, key=lambda r: r["cost_estimated_s"])["cost_true_s"]
            for r in runs:
                r["ratio"] = r["cost_estimated_s"] / ref[seed]
                r["true_ratio"] = r["cost_true_s"] / ref_true
        stats: dict[str, Any] = {}
        for method in (*methods, *GREEDY):
            runs = sorted((r for r in mine if r["method"] == method), key=lambda r: r["seed"])
            if not runs:
                continue
            budget = methods.get(method, 1) or len(runs[0]["costs_s"])
            hits = [_evals_to(r["best_so_far_s"], ref[r["seed"]]) for r in runs]
            entry: dict[str, Any] = {
                "seeds": len(runs),
                "mean_ratio": float(np.mean([r["ratio"] for r in runs])),
                "mean_true_ratio": float(np.mean([r["true_ratio"] for r in runs])),
                "evals_to_5pct_median": _median_evals(hits, budget),
                "reached_5pct": sum(h is not None for h in hits),
                "reached_5pct_within_20": sum(h is not None and h <= 20 for h in hits),
                "evals_to_5pct": hits,
            }
            optimus = {
                r["seed"]: r["cost_estimated_s"] for r in mine if r["method"] == "greedy-optimus"
            }
            vs = [r["cost_estimated_s"] / optimus[r["seed"]] for r in runs if r["seed"] in optimus]
            entry["matches_optimus"] = sum(v <= 1 + 1e-9 for v in vs)
            entry["beats_optimus"] = sum(v < 1 - 1e-6 for v in vs)
            if method in BO:
                after = [s for r in runs for s in r["suggest_s"][5:]]
                last = [s for r in runs for s in r["suggest_s"][-10:]]
                entry["suggest_s_mean"] = float(np.mean(after)) if after else 0.0
                entry["suggest_s_last10"] = float(np.mean(last))
            if method in methods and method != "exhaustive":
                length = min(len(r["best_so_far_s"]) for r in runs)
                curves = np.asarray(
                    [np.asarray(r["best_so_far_s"][:length]) / ref[r["seed"]] for r in runs]
                )
                mean, half = _ci(curves)
                entry["curve_mean"] = np.asarray(mean).tolist()
                entry["curve_ci95"] = np.broadcast_to(half, mean.shape).tolist()
            stats[method] = entry
        out[size] = stats
    return out


def plot(summary: dict[str, Any], path_for: Any) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for size, stats in summary.items():
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for method, entry in stats.items():
            if "curve_mean" not in entry:
                if method.startswith("greedy"):
                    ax.axhline(entry["mean_ratio"], ls=":", lw=1, color="grey")
                    ax.text(1, entry["mean_ratio"], method, fontsize=7, color="grey")
                continue
            mean = np.asarray(entry["curve_mean"])
            half = np.asarray(entry["curve_ci95"])
            x = np.arange(1, len(mean) + 1)
            ax.plot(x, mean, label=method)
            ax.fill_between(x, mean - half, mean + half, alpha=0.2)
        ax.axhline(1 + WITHIN, ls="--", lw=1, color="black", label="+5 %")
        ax.set_xscale("log")
        ax.set_xlabel("evaluations")
        ax.set_ylabel("best total JCT / reference")
        ax.set_title(f"placement search cost, {size} instances (mean, 95 % CI)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = path_for(size)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def markdown(summary: dict[str, Any], plan: dict, wall_s: float, flag: str) -> str:
    lines = [
        "# Batch placement benchmark",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_placement.py{flag}`"
        f" ({wall_s / 60:.1f} min wall, {platform.python_version()}, "
        f"skopt n_points={N_POINTS}).",
        "",
        "Ratios are best estimated-length total JCT / reference (small: exhaustive optimum; "
        "medium/large: best found by any method); `true` is the same for the chosen "
        "placement scored with true lengths, relative to the reference placement's. "
        "`evals to 5%`: median evaluations to get within 5 % of the reference. BO methods "
        "evaluate the 4 greedy placements first (warm start; counted as evaluations); "
        "`-tr`: the search is confined to anchors within 4 node ranks of the best greedy. "
        "`<= optimus` / `< optimus`: instances where the chosen placement's estimated cost "
        "matches / beats greedy Optimus.",
    ]
    for size, stats in summary.items():
        seeds, methods = plan[size]
        lines += [
            "",
            f"## {size} ({seeds} seeds; budgets: "
            + ", ".join(f"{m} {c}" for m, c in methods.items() if c)
            + ")",
            "",
            "| method | ratio | true | evals to 5% | reached 5% | within 20 evals "
            "| s/suggestion | s/suggestion (last 10) | <= optimus | < optimus |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for method, e in stats.items():
            lines.append(
                f"| {method} | {e['mean_ratio']:.3f} | {e['mean_true_ratio']:.3f} "
                f"| {e['evals_to_5pct_median']} | {e['reached_5pct']}/{e['seeds']} "
                f"| {e['reached_5pct_within_20']}/{e['seeds']} "
                f"| {e.get('suggest_s_mean', float('nan')):.3f} "
                f"| {e.get('suggest_s_last10', float('nan')):.3f} "
                f"| {e['matches_optimus']}/{e['seeds']} | {e['beats_optimus']}/{e['seeds']} |"
            )
        gp = stats.get("gp-ei", {}).get("suggest_s_last10")
        cheap = {m: stats[m]["suggest_s_last10"] for m in ("rf", "et") if m in stats}
        if gp and cheap:
            lines += [
                "",
                "GP-EI / forest cost per suggestion (last 10): "
                + ", ".join(f"{m} {gp / c:.1f}x cheaper" for m, c in cheap.items()),
            ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, small budgets")
    parser.add_argument("--modest", action="store_true", help="the MODEST grid (loaded machine)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    plan = QUICK if args.quick else MODEST if args.modest else FULL
    tasks = [
        (size, seed, method, calls)
        for size, (seeds, methods) in plan.items()
        for seed in range(seeds)
        for method, calls in [*methods.items(), *((g, 1) for g in GREEDY)]
        if not (size == "large-100" and method in GREEDY)
    ]
    tasks.sort(key=lambda t: -(t[3] * (3 if t[0].startswith("large") else 1)))  # long tasks first
    start = time.perf_counter()
    with get_context("fork").Pool(args.workers) as pool:
        rows = []
        for i, row in enumerate(pool.imap_unordered(_run, tasks)):
            rows.append(row)
            print(
                f"[{i + 1}/{len(tasks)}] {row['size']} seed {row['seed']} {row['method']}: "
                f"{row['wall_s']:.1f} s",
                flush=True,
            )
    wall = time.perf_counter() - start
    summary = summarise(rows, plan)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    plot(summary, lambda size: out / f"placement_{size}{suffix}.png")
    record = {
        "quick": args.quick,
        "modest": args.modest,
        "wall_s": wall,
        "n_points": N_POINTS,
        "plan": {k: [v[0], v[1]] for k, v in plan.items()},
        "summary": summary,
        "runs": rows,
    }
    (out / f"placement{suffix}.json").write_text(json.dumps(record, indent=1) + "\n")
    flag = " --quick" if args.quick else " --modest" if args.modest else ""
    text = markdown(summary, plan, wall, flag)
    (out / f"placement{suffix}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
