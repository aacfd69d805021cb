"""Average JCT of every moldable baseline on held-out seeds of MoldableScheduling-v0.

Each baseline runs (through the no-gym runner, which the parity tests show gives the
env's metrics) on the episodes of evaluation seeds 100-109 of each env setting. The
table shows the mean average JCT over seeds with its Student-t 95% confidence interval,
the ratio to FIFO's mean, and the mean ratio to the per-episode lower bound (every job
alone at its best parallelism).

Usage::

    .venv/bin/python benchmarks/bench_moldable_baselines.py
    .venv/bin/python benchmarks/bench_moldable_baselines.py --settings default toy \
        "default,load=3" --seeds 100-109

A setting is an env preset optionally followed by ``,key=value`` env kwargs (numbers
parsed as JSON). Writes ``benchmarks/results/moldable_baselines.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from baselines.moldable_eval import EVAL_SEED_START, env_episodes, evaluate
from baselines.threshold import load_best_threshold
from cluster_envs.harness.stats import mean_ci
from cluster_envs.policies.registry import make_policy
from cluster_envs.seeds import parse_seeds

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
POLICIES = (
    "fifo",
    "sjf",
    "min-parallelism",
    "max-parallelism",
    "tetris",
    "easy-backfill",
    "random",
    "threshold-eta",
    "threshold-queue",
    "best-threshold",
)
DEFAULT_SETTINGS = ("default", "toy", "pollux", "default,load=4", "default,num_jobs=160")
DEFAULT_SEEDS = f"{EVAL_SEED_START}-{EVAL_SEED_START + 9}"


def parse_setting(text: str) -> dict[str, Any]:
    """``"default,load=3"`` -> ``{"preset": "default", "load": 3}``."""
    preset, *pairs = text.split(",")
    kwargs: dict[str, Any] = {"preset": preset}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def bench_setting(setting: str, seeds: list[int], policies: tuple[str, ...]) -> dict[str, Any]:
    """Per-policy per-seed metrics and summaries for one env setting."""
    kwargs = parse_setting(setting)
    episodes = env_episodes(seeds, **kwargs)
    tuned = load_best_threshold()["presets"]
    rows: dict[str, Any] = {}
    for name in policies:
        started = time.perf_counter()
        # best-threshold uses the choice tuned on this preset's training seeds, if any.
        extra = {"preset": kwargs["preset"]} if name == "best-threshold" else {}
        if extra and extra["preset"] not in tuned:
            extra = {}
        metrics = evaluate(lambda name=name, extra=extra: make_policy(name, **extra), episodes)
        jct = [m["avg_jct_s"] for m in metrics]
        ratio = [m["jct_ratio_to_lower_bound"] for m in metrics]
        ci = mean_ci(jct)
        rows[name] = {
            "mean_avg_jct_s": ci.mean,
            "ci95_avg_jct_s": ci.half_width,
            "mean_ratio_to_lower_bound": mean_ci(ratio).mean,
            "mean_gpu_utilization": mean_ci([m["gpu_utilization"] for m in metrics]).mean,
            "per_seed_avg_jct_s": jct,
            "wall_s": time.perf_counter() - started,
        }
    return rows


def markdown(results: dict[str, Any], seeds: list[int], command: str) -> str:
    """The results as a Markdown table per setting."""
    lines = [
        "# Moldable baselines on MoldableScheduling-v0",
        "",
        f"Mean average JCT over evaluation seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} "
        "episodes per setting; +- is the Student-t 95% CI of the mean), through the no-gym "
        "runner (identical to the env by the parity tests). `vs fifo` = mean / FIFO's mean; "
        "`LB ratio` = mean per-episode ratio to the lower bound (each job alone at its "
        "best parallelism); `util` = mean GPU utilisation. `best-threshold` uses the rule "
        "tuned on training seeds 0-19 of the same preset where one was tuned (default, "
        "pollux), else the default preset's.",
        "",
        f"Command: `{command}`",
        "",
    ]
    for setting, rows in results.items():
        fifo = rows.get("fifo", {}).get("mean_avg_jct_s")
        lines += [
            f"## {setting}",
            "",
            "| policy | avg JCT (s) | 95% CI | vs fifo | LB ratio | util |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, r in sorted(rows.items(), key=lambda kv: kv[1]["mean_avg_jct_s"]):
            vs = f"{r['mean_avg_jct_s'] / fifo:.2f}" if fifo else "-"
            lines.append(
                f"| {name} | {r['mean_avg_jct_s']:,.0f} | +-{r['ci95_avg_jct_s']:,.0f} | {vs} | "
                f"{r['mean_ratio_to_lower_bound']:.2f} | {r['mean_gpu_utilization']:.2f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS))
    parser.add_argument("--seeds", default=DEFAULT_SEEDS)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--out", type=Path, default=RESULTS / "moldable_baselines")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    command = "python benchmarks/bench_moldable_baselines.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    results = {}
    for setting in args.settings:
        started = time.perf_counter()
        results[setting] = bench_setting(setting, seeds, tuple(args.policies))
        print(f"{setting}: {time.perf_counter() - started:.1f} s", flush=True)
    text = markdown(results, seeds, command.strip())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
