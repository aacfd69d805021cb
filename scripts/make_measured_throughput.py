"""Ship the Pollux testbed's measured step times as ``cluster_envs/data/pollux_throughput.json``.

The Pollux artifact's simulator takes a job's *true* speed from these measurements,
interpolated per placement (``simulator/applications.py``); the model zoo's fitted
all-reduce model is within 0.99-1.07 of them on one node but 0.63-1.40 on some 2-4-node
placements. :mod:`cluster_envs.perf.measured` interpolates the shipped tables the same
way, for runs that want the artifact's truth (``load_workload(..., throughput="measured")``).

Reads ``<data>/pollux_adaptdl/traces/<model>/{placements,scalability}.csv`` and writes
every row unchanged (floats as the CSV has them). Usage:
``python scripts/make_measured_throughput.py [DATA_DIR]`` (default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
OUT_JSON = REPO / "cluster_envs" / "data" / "pollux_throughput.json"
MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
SOURCE = (
    "petuum/adaptdl branch osdi21-artifact (commit c793c7089bd307462686339d29707925c461f9a9), "
    "simulator/traces/<model>/placements.csv and scalability.csv; Apache-2.0"
)


def tables(trace: Path) -> dict[str, object]:
    """One model's placement table (``placement`` -> rows) and scalability rows."""
    place = pd.read_csv(trace / "placements.csv")
    scal = pd.read_csv(trace / "scalability.csv")
    by_placement: dict[str, list[list[float]]] = {}
    for placement, group in place.groupby("placement", sort=True):
        group = group.sort_values("local_bsz")
        rows = group[["local_bsz", "step_time", "sync_time"]].to_numpy().tolist()
        by_placement[str(placement)] = rows
    cols = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
    return {"placements": by_placement, "scalability": scal[cols].to_numpy().tolist()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args(argv)
    root = args.data / "pollux_adaptdl" / "traces"
    if not root.is_dir():
        print(f"error: {root} is not a folder (give the shared data folder)", file=sys.stderr)
        return 2
    out = {"source": SOURCE, "models": {m: tables(root / m) for m in MODELS}}
    OUT_JSON.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT_JSON} ({OUT_JSON.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
