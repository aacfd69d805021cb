"""Issue-4 result: MetisAllocation agents vs every allocation baseline, with ablations.

Run ``scripts/train_metis_agents.sh`` first (runs/metis/<features>/<algo>/). This script
evaluates, on held-out seeds (100-139 of the ``default`` preset, 100-109 of ``pollux``):

* every baseline (fair, optimus, slaq, fifo-rigid, tiresias, random-alloc) through the
  runner (identical to the env by the parity tests);
* every trained agent found, each on the env variant it was trained on (job_features
  fitted / oracle / no_curve; the Discrete env for DQN) -- the ablations: oracle (true)
  vs fitted curves, and no loss-curve features. A warm-started run also contributes its
  ``pretrained_model.zip`` (cloned from the heuristic, before any RL): the "no RL"
  ablation. Agents trained on the default preset play the Pollux workloads unchanged
  (a transfer test: twice the GPUs, 60 s slices, other arrivals).

Episodes are capped at ``--horizon-h`` simulated hours (an agent that starves jobs would
otherwise run for thousands of slices); no baseline comes near the cap.

Besides mean ± 95% CI per policy, it reports the paired difference to SLAQ (the best
baseline) per seed, which removes the workload-to-workload spread. Results go to
``benchmarks/results/metis_agents.md`` (+ .json).

Usage: ``.venv/bin/python benchmarks/bench_metis_agents.py [--seeds 100-139] [--workers 2]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import yaml

from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells
from cluster_envs.harness.report import summary_table
from cluster_envs.harness.stats import paired_difference, summarize
from cluster_envs.harness.suites import METIS_BASELINES
from cluster_envs.seeds import parse_seeds

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("default", "pollux")
#: Models evaluated per run folder, and how they are labelled.
PAIRED_METRICS = ("quality_auc", "time_to_quality_s", "time_to_best_s", "avg_jct_s")
MODELS = {"best_model.zip": "", "pretrained_model.zip": " warm start only"}


def label_of(policy: str) -> str:
    """``sb3:.../<features>/<algo>/<file>`` -> ``<algo> (<features>)[ warm start only]``."""
    if not policy.startswith("sb3:"):
        return policy
    model = Path(policy[4:])
    run = model.parent
    return f"{run.name} ({run.parent.name}){MODELS.get(model.name, ' ' + model.name)}"


def agent_cells(
    runs: Path, preset: str, horizon_s: float, seeds: list[int], exclude: set[str]
) -> list:
    """Cells of every agent under ``runs`` (but the ``exclude`` run names, such as
    ``fitted/dqn``)."""
    cells = []
    for config_path in sorted(runs.glob("*/*/config.yml")):
        if config_path.parent.relative_to(runs).as_posix() in exclude:
            continue
        config = yaml.safe_load(config_path.read_text())
        kwargs = {**config.get("env_kwargs", {}), "preset": preset, "sim": {"horizon_s": horizon_s}}
        for file in MODELS:
            model = config_path.parent / file
            if model.is_file():
                cells += make_cells([config["env_id"]], {preset: kwargs}, [f"sb3:{model}"], seeds)
    return cells


def best_baseline(rows: list[dict]) -> str:
    """The baseline with the highest mean quality AUC in ``rows`` (one workload)."""
    means = {
        b: np.mean([r["metrics"]["quality_auc"] for r in rows if r["policy"] == b])
        for b in METIS_BASELINES
        if any(r["policy"] == b for r in rows)
    }
    return max(means, key=means.get)


def paired_table(rows: list[dict], presets: list[str], policies: list[str]) -> str:
    """Per workload: every other policy minus the best baseline, seed by seed."""
    lines = [
        "| workload | policy | reference | " + " | ".join(f"Δ {m}" for m in PAIRED_METRICS) + " |",
        "|---|---|---|" + "---|" * len(PAIRED_METRICS),
    ]
    for workload in presets:
        wrows = [r for r in rows if r["workload"] == workload and r.get("status") == "ok"]
        reference = best_baseline(wrows)
        present = {r["policy"] for r in wrows}
        for policy in policies:
            if policy == reference or policy not in present:
                continue
            cells = []
            for metric in PAIRED_METRICS:
                try:
                    d = paired_difference(wrows, policy, reference, metric)
                except ValueError:
                    cells.append("")
                    continue
                cells.append(f"{d.format()} (n={d.n})")
            lines.append(f"| {workload} | {label_of(policy)} | {reference} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-139", help="held-out seeds, default preset")
    parser.add_argument("--pollux-seeds", default="100-109", help="seeds of the pollux preset")
    parser.add_argument(
        "--pollux-exclude", default="",
        help="runs not played on pollux (comma list, e.g. fitted/dqn: agents that starve "
        "jobs run every episode to the cap, thousands of 60 s slices)",
    )  # fmt: skip
    parser.add_argument("--runs", default=str(ROOT / "runs" / "metis"))
    parser.add_argument("--horizon-h", type=float, default=96.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument(
        "--from-json", action="store_true",
        help="re-render the tables from benchmarks/results/metis_agents.json (no episodes)",
    )  # fmt: skip
    args = parser.parse_args()
    out = ROOT / "benchmarks" / "results" / "metis_agents.md"
    seeds_of = {"default": parse_seeds(args.seeds), "pollux": parse_seeds(args.pollux_seeds)}
    horizon_s = args.horizon_h * 3600.0
    rows: list[dict] = []
    presets = args.presets.split(",")
    if args.from_json:
        rows = json.loads(out.with_suffix(".json").read_text())
        presets = list(dict.fromkeys(r["workload"] for r in rows))
    for preset in presets if not args.from_json else ():
        seeds = seeds_of.get(preset, seeds_of["default"])
        workload = {preset: {"preset": preset, "sim": {"horizon_s": horizon_s}}}
        cells = make_cells(
            ["cluster_envs/MetisAllocation-v0"], workload, list(METIS_BASELINES), seeds
        )
        exclude = set(filter(None, args.pollux_exclude.split(","))) if preset == "pollux" else set()
        more = agent_cells(Path(args.runs), preset, horizon_s, seeds, exclude)
        rows += run_grid(cells + more, "local", args.workers, progress=True)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    errors = [r for r in rows if r.get("status") != "ok"]
    for row in rows:  # one table per preset: agents on the Discrete env join the MultiDiscrete rows
        row["env"] = "cluster_envs/MetisAllocation-v0"
    summary = summarize(rows, METIS_BASELINES)
    for s in summary:
        s["policy"] = label_of(s["policy"])
    lines = [
        "# MetisAllocation-v0: agents vs allocation baselines, with ablations",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_metis_agents.py --seeds {args.seeds} "
        f"--pollux-seeds {args.pollux_seeds} "
        + (f"--pollux-exclude {args.pollux_exclude} " if args.pollux_exclude else "")
        + f"--horizon-h {args.horizon_h:g} "
        f"--runs {Path(args.runs).relative_to(ROOT) if Path(args.runs).is_relative_to(ROOT) else args.runs}` "
        "after `scripts/train_metis_agents.sh`. Held-out seeds; episodes capped at "
        f"{args.horizon_h:g} h. 'oracle' agents saw the true curves (an ablation, not a "
        "deployable scheduler); 'warm start only' is the agent cloned from SLAQ before RL.",
        "",
        "## Mean ± 95% CI per policy",
        "",
        summary_table(summary),
        "",
        "## Paired difference to the best baseline on the same episodes (mean ± 95% CI)",
        "",
        "The reference is the baseline with the best mean quality AUC on the workload. "
        "Positive Δ quality_auc and negative Δ times are better; time-to-quality pairs where "
        "a job never reached its quality are left out (n). time_to_best_s: until the first "
        "of the best final-quality jobs is within 5% of it.",
        "",
        paired_table(rows, presets, policies),
        "",
    ]
    if errors:
        lines += [f"{len(errors)} episodes failed: " + "; ".join(
            f"{r['policy']} seed {r['seed']}: {r.get('error', '?')}" for r in errors[:5])]  # fmt: skip
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(
        json.dumps(
            [{k: v for k, v in r.items() if k != "details"} for r in rows], separators=(",", ":")
        )
        + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
