"""How well the fitted loss curve predicts a job's length, and what its errors cost placement.

Part 1 -- prediction: for every model-zoo model (its real learning curve,
``zoo.loss_curve_for``), ``TRIALS`` jobs (a random profiled batch size, a true length of
the model's full run times a log-uniform factor in [0.5, 2]) observe noisy losses
(3 % relative noise, the simulator's logging interval) over the first 10 %, 20 % or 50 %
of training; the Optimus curve is fitted (the simulator's fast fitter and scipy's least
squares) and inverted at the target. Reported: median and p90 relative error of the
predicted iterations-to-target, and the median signed error (bias).

Part 2 -- placement: on ``small`` instances (10 seeds) the exhaustive optimum under the
*estimated* lengths is scored with the true lengths and compared with the true optimum
(regret); on ``medium`` instances the same for ``greedy-optimus`` (its choice with
estimated vs with true lengths). Usage::

    .venv/bin/python benchmarks/bench_convergence.py [--quick]

Writes ``benchmarks/results/convergence.md`` and ``convergence.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from baselines.placement.convergence import estimate_iterations  # noqa: E402
from baselines.placement.cost import PlacementCost  # noqa: E402
from baselines.placement.encoding import enumerate_configurations  # noqa: E402
from baselines.placement.greedy import greedy_optimus  # noqa: E402
from baselines.placement.methods import MAX_EXHAUSTIVE  # noqa: E402
from baselines.placement.presets import LENGTH_FACTOR, make_instance  # noqa: E402
from cluster_envs.perf import zoo  # noqa: E402

FRACTIONS = (0.1, 0.2, 0.5)
NOISE = 0.03
RESULTS = ROOT / "benchmarks" / "results"


def prediction(trials: int) -> list[dict[str, Any]]:
    rows = []
    for model in zoo.ZOO_MODELS:
        batches = zoo.get_model(model).batch_sizes
        for fraction in FRACTIONS:
            for fitter in ("fast", "scipy"):
                errors = []
                for t in range(trials):
                    rng = np.random.default_rng([t, 11])
                    batch = int(rng.choice(batches))
                    lo, hi = LENGTH_FACTOR
                    true = zoo.iterations_to_complete(model, batch) * math.exp(
                        rng.uniform(math.log(lo), math.log(hi))
                    )
                    est = estimate_iterations(
                        model,
                        batch,
                        true,
                        fraction,
                        NOISE,
                        np.random.default_rng([t, 12]),
                        fitter=fitter,
                    )
                    errors.append((est - true) / true)
                err = np.asarray(errors)
                rows.append(
                    {
                        "model": model,
                        "fraction": fraction,
                        "fitter": fitter,
                        "median_rel_error": float(np.median(np.abs(err))),
                        "p90_rel_error": float(np.quantile(np.abs(err), 0.9)),
                        "median_signed_error": float(np.median(err)),
                    }
                )
    return rows


def _oracle(inst: Any) -> Any:
    batch = tuple(
        dataclasses.replace(j, estimated_iterations=j.total_iterations) for j in inst.batch
    )
    return dataclasses.replace(inst, batch=batch)


def placement(seeds: int) -> list[dict[str, Any]]:
    rows = []
    for seed in range(seeds):
        base = make_instance("small", seed)
        truth = PlacementCost(base, truth=True)
        configs = list(enumerate_configurations(base.num_gpus, base.free_gpus, MAX_EXHAUSTIVE))
        true_costs = np.asarray([truth(c) for c in configs])
        best_true = float(true_costs.min())
        for fraction in FRACTIONS:
            inst = make_instance("small", seed, observed_fraction=fraction)
            est = PlacementCost(inst)
            chosen = int(np.argmin([est(c) for c in configs]))
            rows.append(
                {
                    "size": "small",
                    "method": "exhaustive",
                    "seed": seed,
                    "fraction": fraction,
                    "regret": true_costs[chosen] / best_true - 1,
                }
            )
        medium = make_instance("medium", seed)
        true_m = PlacementCost(medium, truth=True)
        oracle = true_m(greedy_optimus(_oracle(medium)))
        for fraction in FRACTIONS:
            inst = make_instance("medium", seed, observed_fraction=fraction)
            rows.append(
                {
                    "size": "medium",
                    "method": "greedy-optimus",
                    "seed": seed,
                    "fraction": fraction,
                    "regret": true_m(greedy_optimus(inst)) / oracle - 1,
                }
            )
    return rows


def markdown(pred: list[dict], place: list[dict], wall: float, quick: bool) -> str:
    lines = [
        "# Convergence-curve learning",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_convergence.py"
        f"{' --quick' if quick else ''}` ({wall:.0f} s wall). Loss noise {NOISE:.0%}.",
        "",
        "## Relative error of predicted iterations-to-target (fast fitter | scipy)",
        "",
        "| model | observed | median | p90 | median signed | scipy median | scipy p90 |",
        "|---|---|---|---|---|---|---|",
    ]
    for model in zoo.ZOO_MODELS:
        for fraction in FRACTIONS:
            f = next(
                r
                for r in pred
                if r["model"] == model and r["fraction"] == fraction and r["fitter"] == "fast"
            )
            s = next(
                r
                for r in pred
                if r["model"] == model and r["fraction"] == fraction and r["fitter"] == "scipy"
            )
            lines.append(
                f"| {model} | {fraction:.0%} | {f['median_rel_error']:.3f} "
                f"| {f['p90_rel_error']:.3f} | {f['median_signed_error']:+.3f} "
                f"| {s['median_rel_error']:.3f} | {s['p90_rel_error']:.3f} |"
            )
    lines += [
        "",
        "## Placement regret from estimated lengths (true total JCT of the choice / "
        "true JCT of the choice made with true lengths - 1)",
        "",
        "| instances | method | observed | mean regret | max regret |",
        "|---|---|---|---|---|",
    ]
    for size, method in (("small", "exhaustive"), ("medium", "greedy-optimus")):
        for fraction in FRACTIONS:
            r = [x["regret"] for x in place if x["size"] == size and x["fraction"] == fraction]
            lines.append(
                f"| {size} ({len(r)} seeds) | {method} | {fraction:.0%} "
                f"| {np.mean(r):.3f} | {np.max(r):.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    pred = prediction(20 if args.quick else 200)
    place = placement(2 if args.quick else 10)
    wall = time.perf_counter() - start
    suffix = "_quick" if args.quick else ""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"convergence{suffix}.json").write_text(
        json.dumps({"prediction": pred, "placement": place, "wall_s": wall}, indent=1) + "\n"
    )
    text = markdown(pred, place, wall, args.quick)
    (RESULTS / f"convergence{suffix}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
