"""Fit the model zoo of cluster-envs from the real Pollux / ElasticFlow measurements.

Reads ``<data>/pollux_adaptdl/traces/<model>/`` and ``<data>/elasticflow_a100_throughputs``
and writes ``cluster_envs/data/model_zoo.json`` plus ``benchmarks/results/model_zoo_fit.md``.
Every fit reports its error on measurements held back from it:

* throughput: fitted on a seeded 80 % of ``placements.csv``; tested on the other 20 %
  and on all of ``scalability.csv`` (6-16 nodes, up to 64 GPUs: pure extrapolation);
* loss curves: fitted on the first 50 % of epochs, tested on the rest.

Usage: ``python scripts/fit_model_zoo.py [DATA_DIR]`` (default ``../shared/data``
relative to the repository root). Deterministic (fixed seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cluster_envs.perf.loss_curve import fit_loss_curve
from cluster_envs.perf.quality import QualityCurve
from cluster_envs.perf.throughput import PolluxThroughput, fit_pollux, predict_step_time

REPO = Path(__file__).resolve().parents[1]
OUT_JSON = REPO / "cluster_envs" / "data" / "model_zoo.json"
OUT_MD = REPO / "benchmarks" / "results" / "model_zoo_fit.md"
SEED = 20210714
HOLDOUT_FRACTION = 0.2
LOSS_FIT_FRACTION = 0.5
#: Held-out throughput rows shipped in the JSON so tests can check the model offline.
SHIPPED_HOLDOUT_ROWS = 48
QUALITY_GRID_POINTS = 26

# name: (epochs, metric, higher_is_better, metric value of an untrained model or None
#        for "worst observed", divisor turning the metric into a [0, 1] score, about)
MODELS: dict[str, tuple[int, str, bool, float | None, float, str]] = {
    "bert": (2, "squad_f1", True, 0.0, 100.0, "BERT fine-tuning on SQuAD"),
    "cifar10": (100, "top1_accuracy", True, 0.1, 1.0, "ResNet-18 on CIFAR-10"),
    "deepspeech2": (80, "wer_percent", False, 100.0, 100.0, "DeepSpeech2 on CMU-ARCTIC"),
    "imagenet": (90, "top1_accuracy", True, 0.001, 1.0, "ResNet-50 on ImageNet"),
    "ncf": (10, "hit_rate_at_10", True, 10.0 / 101.0, 1.0, "NeuMF on MovieLens"),
    "yolov3": (50, "val_loss", False, None, 1.0, "YOLOv3 on PASCAL VOC"),
}
#: Pollux overrides max_local_bsz only for yolov3 (applications.py); others use the
#: largest profiled local batch.
MAX_LOCAL_OVERRIDE = {"yolov3": 8}
#: ElasticFlow A100 file -> Pollux model measured on T4.
A100_FILES = {"bert": "bert", "cifar10": "resnet50_cifar10", "deepspeech2": "deepspeech2",
              "imagenet": "resnet50"}  # fmt: skip
#: Models left out of the A100/T4 summary: ElasticFlow's BERT is not the same workload as
#: Pollux's SQuAD fine-tuning (T4 fits 12 sequences per GPU, so ~30x looks implausible).
A100_EXCLUDED = ("bert",)


def rel_err_stats(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    err = np.abs(pred - true) / np.abs(true)
    return {"n": int(err.size), "median_rel_err": round(float(np.median(err)), 4),
            "p90_rel_err": round(float(np.percentile(err, 90)), 4)}  # fmt: skip


def load_throughput(trace: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    place = pd.read_csv(trace / "placements.csv")
    digits = place.placement.astype(str)
    place["num_nodes"] = digits.str.len()
    place["num_replicas"] = digits.map(lambda s: sum(int(c) for c in s))
    scal = pd.read_csv(trace / "scalability.csv")
    return place, scal


def predict(model: PolluxThroughput, df: pd.DataFrame) -> np.ndarray:
    params = [model.alpha_c, model.beta_c, model.alpha_n, model.beta_n, model.alpha_r,
              model.beta_r, model.gamma]  # fmt: skip
    step, _, _ = predict_step_time(params, df.num_nodes, df.num_replicas, df.local_bsz)
    return step


def fit_throughput(name: str, trace: Path, rng: np.random.Generator) -> dict[str, Any]:
    place, scal = load_throughput(trace)
    test_mask = rng.random(len(place)) < HOLDOUT_FRACTION
    train, test = place[~test_mask], place[test_mask]
    max_local = MAX_LOCAL_OVERRIDE.get(name, int(place.local_bsz.max()))
    model = fit_pollux(train.num_nodes, train.num_replicas, train.local_bsz, train.step_time,
                       train.sync_time, batch_size=1, max_local_bsz=max_local)  # fmt: skip
    held = pd.concat([test, scal], ignore_index=True)
    errors = {
        "train": rel_err_stats(predict(model, train), train.step_time.to_numpy()),
        "placements_holdout": rel_err_stats(predict(model, test), test.step_time.to_numpy()),
        "scalability_holdout": rel_err_stats(predict(model, scal), scal.step_time.to_numpy()),
        "all_holdout": rel_err_stats(predict(model, held), held.step_time.to_numpy()),
    }
    pick = np.sort(rng.choice(len(held), size=min(SHIPPED_HOLDOUT_ROWS, len(held)), replace=False))
    sample = held.iloc[pick][["num_nodes", "num_replicas", "local_bsz", "step_time"]]
    perf = {k: float(getattr(model, k)) for k in
            ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")}  # fmt: skip
    return {"perf": perf, "max_local_bsz": max_local,
            "min_local_bsz": int(place.local_bsz.min()), "errors": errors,
            "holdout_sample": [[int(a), int(b), int(c), round(float(d), 6)]
                               for a, b, c, d in sample.itertuples(index=False)]}  # fmt: skip


def load_validation(trace: Path, epochs: int) -> dict[int, pd.DataFrame]:
    runs = {int(p.stem.split("-")[1]): pd.read_csv(p) for p in trace.glob("validation-*.csv")}
    return {b: df.iloc[:epochs].reset_index(drop=True) for b, df in sorted(runs.items())}


def error_points(name: str, runs: dict[int, pd.DataFrame]) -> tuple[np.ndarray, np.ndarray, float]:
    """Pooled (fraction of training, error-like value) points plus the untrained error."""
    epochs, _, higher, floor, divisor, _ = MODELS[name]
    xs, ys = [], []
    for df in runs.values():
        score = df.metric.to_numpy() / divisor
        xs.append(np.arange(1, len(df) + 1) / epochs)
        ys.append(1.0 - score if higher else score)
    if floor is not None:
        untrained = 1.0 - floor / divisor if higher else floor / divisor
    else:
        untrained = float(max(y.max() for y in ys))
    return np.concatenate(xs), np.concatenate(ys), untrained


def fit_loss(name: str, runs: dict[int, pd.DataFrame]) -> tuple[dict[str, float], dict]:
    x, y, e0 = error_points(name, runs)
    x_all, y_all = np.concatenate([[0.0], x]), np.concatenate([[e0], y])
    full = fit_loss_curve(x_all, y_all)
    early = x_all <= LOSS_FIT_FRACTION
    part = fit_loss_curve(x_all[early], y_all[early])
    pred = np.array([part.loss(v) for v in x_all[~early]])
    fitted = np.array([full.loss(v) for v in x])
    errors = {"extrapolate_second_half": rel_err_stats(pred, y_all[~early]),
              "in_sample": rel_err_stats(fitted, y)}  # fmt: skip
    return {"c0": full.b0, "b1": full.b1, "b2": full.b2}, errors


def quality_table(name: str, runs: dict[int, pd.DataFrame]) -> QualityCurve:
    x, y, e0 = error_points(name, runs)
    grid = np.linspace(0.0, 1.0, QUALITY_GRID_POINTS)
    per_run, start = [], 0
    for df in runs.values():
        n = len(df)
        err = np.minimum.accumulate(y[start : start + n])
        q = np.clip((e0 - err) / (e0 - err[-1]), 0.0, 1.0)
        per_run.append(np.interp(grid, np.concatenate([[0.0], x[start : start + n]]),
                                 np.concatenate([[0.0], q])))  # fmt: skip
        start += n
    return QualityCurve.from_points(grid, np.mean(per_run, axis=0))


def a100_ratio(name: str, data: Path, perf: dict[str, float], max_local: int) -> dict:
    df = pd.read_csv(data / "elasticflow_a100_throughputs" / f"{A100_FILES[name]}.csv")
    out = {}
    for row in df.itertuples(index=False):
        bsz = int(row.global_batch_size)
        t4 = PolluxThroughput(**perf, batch_size=bsz, max_local_bsz=max_local).throughput((1,))
        out[str(bsz)] = round(float(row[1]) / t4, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(REPO.parent / "shared" / "data"))
    args = parser.parse_args(argv)
    data = Path(args.data)
    rng = np.random.default_rng(SEED)
    zoo: dict[str, Any] = {"version": 1, "seed": SEED, "models": {}, "fit_errors": {},
                           "a100_over_t4": {}}  # fmt: skip
    for name, (epochs, metric, higher, _, _, about) in MODELS.items():
        trace = data / "pollux_adaptdl" / "traces" / name
        thr = fit_throughput(name, trace, rng)
        runs = load_validation(trace, epochs)
        loss, loss_err = fit_loss(name, runs)
        zoo["models"][name] = {
            "description": about, "epochs": epochs, "metric_name": metric,
            "higher_is_better": higher, "batch_sizes": list(runs),
            "iterations": [float(df.iteration.iloc[-1]) for df in runs.values()],
            "max_local_bsz": thr["max_local_bsz"], "min_local_bsz": thr["min_local_bsz"],
            "perf": thr["perf"], "loss_curve_fraction": loss,
            "quality": quality_table(name, runs).to_dict(),
            "holdout_sample": thr["holdout_sample"],
        }  # fmt: skip
        zoo["fit_errors"][name] = {"step_time": thr["errors"], "loss_curve": loss_err}
        if name in A100_FILES:
            zoo["a100_over_t4"][name] = a100_ratio(name, data, thr["perf"], thr["max_local_bsz"])
    ratios = [r for name, per in zoo["a100_over_t4"].items() if name not in A100_EXCLUDED
              for r in per.values()]  # fmt: skip
    zoo["a100_over_t4"]["median_excluding_bert"] = round(float(np.median(ratios)), 3)
    OUT_JSON.write_text(json.dumps(zoo, indent=1) + "\n")
    report = render_report(zoo)
    OUT_MD.parent.mkdir(parents=True, exist_ok=True)
    OUT_MD.write_text(report)
    print(report)
    print(f"wrote {OUT_JSON.relative_to(REPO)} ({OUT_JSON.stat().st_size} bytes)")
    return 0


def render_report(zoo: dict[str, Any]) -> str:
    lines = ["# Model-zoo fit: errors on held-out measurements", "",
             f"Generated by `scripts/fit_model_zoo.py` (seed {SEED}). Relative error of the "
             "predicted step time (throughput) or loss-like metric (loss curve).", "",
             "| model | step time: 20% placements held out (median / p90) | "
             "scalability.csv, 6-16 nodes (median / p90) | train (median) | "
             "loss curve: 2nd half from 1st half (median / p90) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for name, err in zoo["fit_errors"].items():
        st, lc = err["step_time"], err["loss_curve"]["extrapolate_second_half"]
        ph, sc = st["placements_holdout"], st["scalability_holdout"]
        lines.append(
            f"| {name} | {ph['median_rel_err']:.3f} / {ph['p90_rel_err']:.3f} (n={ph['n']}) | "
            f"{sc['median_rel_err']:.3f} / {sc['p90_rel_err']:.3f} (n={sc['n']}) | "
            f"{st['train']['median_rel_err']:.3f} | "
            f"{lc['median_rel_err']:.3f} / {lc['p90_rel_err']:.3f} |"
        )
    lines += ["", "A100 / T4 single-GPU iterations/s (ElasticFlow A100 measurement over the "
              "fitted Pollux T4 model at the same global batch):", ""]  # fmt: skip
    for name, per in zoo["a100_over_t4"].items():
        lines.append(f"- {name}: {per}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
