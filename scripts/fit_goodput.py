"""Fit the statistical-efficiency (gradient-noise-scale) model from the Pollux learning runs.

Reads ``<data>/pollux_adaptdl/traces/<model>/validation-<B>.csv`` (one row per epoch of
a real run at total batch size ``B``: cumulative statistical progress, iterations and
the gradient statistics ``grad_sqr``, ``grad_var``) and writes
``cluster_envs/data/goodput.json``, read by :mod:`cluster_envs.perf.goodput`.

Per model it fits the pre-conditioned gradient noise scale ``phi = m0 * grad_var /
grad_sqr`` (``m0`` = the smallest profiled batch size) as a function of the fraction of
training done and of the batch size it was measured at, ``log phi(x, m) = f(x) + c *
log(m / m0)`` with ``f`` piecewise linear on ``KNOTS`` equally spaced knots, by
ridge-regularised least squares over *every* (batch size, epoch) row (the noise scale
measured in larger-batch runs is larger: ``c`` > 0). Pollux's
efficiency of a batch ``m`` is then ``E(m) = (phi + m0) / (phi + m)`` and the progress
per iteration ``gain = (m / m0) * E(m)``. It also stores the progress that ends each
epoch (the smallest over the runs, as Pollux's simulator does) and the error of the
model on *held-out batch sizes*: the model is refitted without run ``B`` and predicts
that run's iterations to finish the model's epochs.

Usage: ``python scripts/fit_goodput.py [DATA_DIR]`` (default ``../shared/data``).
Deterministic (no randomness).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT_JSON = REPO / "cluster_envs" / "data" / "goodput.json"
#: Knots of the piecewise-linear log(phi) curve on the fraction of training [0, 1].
KNOTS = 11
#: Ridge weight on second differences of log(phi) (smoothness between knots).
RIDGE = 0.3
#: Smallest noise scale kept (the statistics of a few early rows are degenerate).
PHI_FLOOR = 1.0
#: Epochs of a full run in Pollux's artifact (``applications.py``'s ``max_epochs``).
EPOCHS = {"bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10, "yolov3": 50}


def read_runs(folder: Path) -> dict[int, np.ndarray]:
    """``{batch: rows}`` with columns progress, iteration, grad_sqr, grad_var."""
    runs = {}
    for path in folder.glob("validation-*.csv"):
        batch = int(path.stem.split("-")[-1])
        table = np.genfromtxt(path, delimiter=",", names=True)
        runs[batch] = np.column_stack(
            [table["progress"], table["iteration"], table["grad_sqr"], table["grad_var"]]
        )
    return dict(sorted(runs.items()))


def epoch_progress(runs: dict[int, np.ndarray], epochs: int) -> np.ndarray:
    """Progress at the end of each epoch: the smallest over the runs (Pollux's rule)."""
    return np.min([r[:epochs, 0] for r in runs.values()], axis=0)


def basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Hat-function design matrix of piecewise-linear interpolation on ``knots``."""
    eye = np.eye(knots.size)
    return np.stack([np.interp(x, knots, eye[k]) for k in range(knots.size)], axis=1)


def fit_log_phi(runs: dict[int, np.ndarray], m0: int, ends: np.ndarray) -> np.ndarray:
    """Least-squares ``[f(knots)..., c]`` from every (batch, epoch) row of ``runs``."""
    knots = np.linspace(0.0, 1.0, KNOTS)
    total = ends[-1]
    starts = np.concatenate([[0.0], ends[:-1]])
    mids = (starts + ends) / 2.0 / total
    xs, ys, ms = [], [], []
    for batch, rows in runs.items():
        n = min(len(rows), ends.size)
        sqr, var = rows[:n, 2], rows[:n, 3]
        ok = (sqr > 0) & (var > 0)
        phi = np.maximum(m0 * var[ok] / sqr[ok], PHI_FLOOR)
        xs.append(mids[:n][ok])
        ys.append(np.log(phi))
        ms.append(np.full(phi.size, np.log(batch / m0)))
    a = np.column_stack([basis(np.concatenate(xs), knots), np.concatenate(ms)])
    y = np.concatenate(ys)
    d2 = np.diff(np.eye(KNOTS), n=2, axis=0) * np.sqrt(RIDGE * len(y) / KNOTS)
    d2 = np.column_stack([d2, np.zeros(len(d2))])
    coef, *_ = np.linalg.lstsq(np.vstack([a, d2]), np.concatenate([y, np.zeros(len(d2))]))
    return coef


def predicted_iterations(coef: np.ndarray, m0: int, batch: int, ends: np.ndarray) -> float:
    """Iterations to finish all epochs at ``batch`` under the fitted model."""
    knots = np.linspace(0.0, 1.0, coef.size - 1)
    starts = np.concatenate([[0.0], ends[:-1]])
    x = (starts + ends) / 2.0 / ends[-1]
    phi = np.exp(np.interp(x, knots, coef[:-1]) + coef[-1] * np.log(batch / m0))
    gain = (batch / m0) * (phi + m0) / (phi + batch)
    return float(np.sum((ends - starts) / gain))


def fit_model(name: str, folder: Path) -> dict:
    runs = read_runs(folder)
    epochs = EPOCHS[name]
    m0 = min(runs)
    ends = epoch_progress(runs, epochs)
    log_phi = fit_log_phi(runs, m0, ends)
    errors = {}
    for batch in runs:
        if batch == m0:
            continue  # gain is 1 at m0 whatever phi is: nothing to test
        rest = {b: r for b, r in runs.items() if b != batch}
        held = fit_log_phi(rest, m0, ends)
        truth = float(runs[batch][epochs - 1, 1])
        errors[str(batch)] = predicted_iterations(held, m0, batch, ends) / truth - 1.0
    return {
        "init_batch_size": int(m0),
        "max_batch_size": int(max(runs)),
        "batch_sizes": [int(b) for b in runs],
        "epochs": epochs,
        "epoch_progress": [float(v) for v in ends],
        "iterations": {str(b): float(r[epochs - 1, 1]) for b, r in runs.items()},
        "log_phi_knots": [float(v) for v in log_phi[:-1]],
        "phi_batch_exponent": float(log_phi[-1]),
        "heldout_iteration_error": errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(REPO.parent / "shared" / "data"))
    args = parser.parse_args(argv)
    traces = Path(args.data) / "pollux_adaptdl" / "traces"
    if not traces.is_dir():
        print(f"no Pollux traces under {traces}", file=sys.stderr)
        return 2
    models = {name: fit_model(name, traces / name) for name in sorted(EPOCHS)}
    out = {"version": 1, "knots": KNOTS, "ridge": RIDGE, "models": models}
    OUT_JSON.write_text(json.dumps(out, indent=1) + "\n")
    for name, m in models.items():
        errs = ", ".join(f"{b}: {e:+.1%}" for b, e in m["heldout_iteration_error"].items())
        print(f"{name:12s} held-out iterations error {errs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
