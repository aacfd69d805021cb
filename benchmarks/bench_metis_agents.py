"""Issue-4 result: MetisAllocation agents vs every allocation baseline, with ablations.

Run ``scripts/train_metis_agents.sh`` first (runs/metis/<features>/<algo>/). This script
evaluates, on held-out seeds (100-109) of the ``default`` and ``pollux`` presets:

* every baseline (fair, optimus, slaq, fifo-rigid, tiresias, random-alloc) through the
  runner (identical to the env by the parity tests);
* every trained agent found, each on the env variant it was trained on (job_features
  fitted / oracle / no_curve; the Discrete env for DQN) -- the ablations: oracle (true)
  vs fitted curves, and no loss-curve features.

Quality AUC and time-to-quality with 95% CIs go to
``benchmarks/results/metis_agents.md`` (+ .json).

Usage: ``.venv/bin/python benchmarks/bench_metis_agents.py [--seeds 100-109]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells, parse_seeds
from cluster_envs.harness.report import summary_table
from cluster_envs.harness.stats import summarize
from cluster_envs.harness.suites import METIS_BASELINES

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("default", "pollux")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-109")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "metis"))
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    rows = []
    for preset in PRESETS:
        cells = make_cells(["cluster_envs/MetisAllocation-v0"], {preset: {"preset": preset}},
                           list(METIS_BASELINES), seeds)  # fmt: skip
        for model in sorted(Path(args.runs).glob("*/*/best_model.zip")):
            config = yaml.safe_load((model.parent / "config.yml").read_text())
            kwargs = {**config.get("env_kwargs", {}), "preset": preset}
            cells += make_cells([config["env_id"]], {preset: kwargs}, [f"sb3:{model}"], seeds)
        rows += run_grid(cells, "local", 1, progress=True)
    for row in rows:  # one table per preset: agents on the Discrete env join the MultiDiscrete rows
        row["env"] = "cluster_envs/MetisAllocation-v0"
    summary = summarize(rows, METIS_BASELINES)
    for s in summary:
        if s["policy"].startswith("sb3:"):
            path = Path(s["policy"][4:])
            s["policy"] = f"{path.parent.name} ({path.parent.parent.name} features)"
    lines = [
        "# MetisAllocation-v0: agents vs allocation baselines, with ablations",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_metis_agents.py --seeds {args.seeds}` after "
        "`scripts/train_metis_agents.sh`. Held-out seeds; 'oracle' agents saw the true curves "
        "(an ablation, not a deployable scheduler).",
        "",
        summary_table(summary),
        "",
    ]
    out = ROOT / "benchmarks" / "results" / "metis_agents.md"
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(
        json.dumps([{k: v for k, v in r.items() if k != "details"} for r in rows], indent=1) + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
