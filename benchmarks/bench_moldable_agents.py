"""Issue-3 result: trained MaskablePPO, PPO, A2C and DQN against every moldable baseline.

Trains nothing itself: first run ``scripts/train_moldable_agents.sh`` (``PRESET=default``
and ``PRESET=pollux-train``), which writes ``runs/moldable-<preset>/<algo>/``. Then this
script benchmarks, on seeds never used in training or threshold tuning (100-109):

* the ``default`` preset with the agents trained on ``default``;
* the ``pollux-test`` preset (Pollux workloads 7-8, never trained on) with the agents
  trained on ``pollux-train`` (workloads 1-6).

It writes ``benchmarks/results/moldable_agents.md`` (mean ± 95% CI of average JCT and its
ratio to the lower bound, improvement over the best baseline) and the harness outputs
into ``runs/bench-moldable-agents/``.

Usage: ``.venv/bin/python benchmarks/bench_moldable_agents.py [--seeds 100-109]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells
from cluster_envs.harness.report import summary_table
from cluster_envs.harness.stats import summarize
from cluster_envs.harness.suites import MOLDABLE_BASELINES
from cluster_envs.seeds import parse_seeds

ROOT = Path(__file__).resolve().parents[1]
ENV = "cluster_envs/MoldableScheduling-v0"
ALGOS = ("maskable_ppo", "ppo", "a2c", "dqn")
#: eval preset -> the run folders (runs/<name>/<algo>) whose agents it evaluates.
CASES = {
    "default": ("moldable-default", "moldable-default-long"),
    "pollux-test": ("moldable-pollux-train",),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-109")
    parser.add_argument("--runs", default=str(ROOT / "runs"))
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    rows, trained = [], {}
    for preset, run_names in CASES.items():
        agents = []
        for run_name in run_names:
            for algo in ALGOS:
                model = Path(args.runs) / run_name / algo / "best_model.zip"
                if model.is_file():
                    agents.append(f"sb3:{model}")
                    trained[f"{preset}/{run_name}/{algo}"] = str(model)
        cells = make_cells(
            [ENV], {preset: {"preset": preset}}, [*MOLDABLE_BASELINES, *agents], seeds
        )
        rows += run_grid(cells, "local", 1, progress=True)
    summary = summarize(rows, MOLDABLE_BASELINES)
    for s in summary:
        if s["policy"].startswith("sb3:"):
            path = Path(s["policy"][4:])
            s["policy"] = f"{path.parent.name} ({path.parent.parent.name})"
    walls = {}
    for run_name in sorted({r for names in CASES.values() for r in names}):
        wall = Path(args.runs) / run_name / "train_wall.txt"
        if wall.is_file():
            walls[run_name] = wall.read_text().strip().splitlines()
    lines = [
        "# MoldableScheduling-v0: trained agents vs every baseline",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_moldable_agents.py --seeds {args.seeds}` "
        "after `scripts/train_moldable_agents.sh` (PRESET=default, PRESET=pollux-train).",
        f"Held-out seeds {args.seeds} (training used seeds 0.. and 10000..; thresholds were "
        "tuned on 0-19). pollux-test = Pollux workloads 7-8, agents trained on 1-6.",
        "",
        summary_table(summary),
        "",
        "Training wall time on this machine (2 cores): " + json.dumps(walls),
        "",
    ]
    errors = [r for r in rows if r["status"] != "ok"]
    if errors:
        lines += ["Errors:", *[f"- {r['policy']} seed {r['seed']}: {r['error']}" for r in errors]]
    out = ROOT / "benchmarks" / "results" / "moldable_agents.md"
    out.write_text("\n".join(lines) + "\n")
    (out.with_suffix(".json")).write_text(
        json.dumps([{k: v for k, v in r.items() if k != "details"} for r in rows], indent=1) + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
