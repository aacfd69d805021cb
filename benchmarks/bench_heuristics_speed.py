"""Heuristics at simulator speed: replay time of every runner heuristic, relative to FIFO.

For each workload and each heuristic of the registry that runs through the no-gym runner
(``cluster_envs.runner``: the same loop as ``cluster_envs.simulate``), replays the
workload on the ``pollux-testbed`` cluster and reports the best-of-``--repeats`` CPU time
(``time.process_time``) of the event loop, the CPU time per simulator event, and the
ratio to FIFO measured in the same run. The episode's metrics are recorded too, so that a
later run can check that a speed-up changed no decision (``--compare``).

Left out: the ``bo-*`` placement searches (tens of seconds per episode, placement env
heuristics benchmarked in ``bench_placement_decision_ms.py``).

Usage::

    .venv/bin/python benchmarks/bench_heuristics_speed.py [--repeats 3] [--quick]
        [--label after] [--before benchmarks/results/heuristics_speed_before.json]

Writes ``benchmarks/results/heuristics_speed[_<label>].json`` and
``benchmarks/results/heuristics_speed.md`` (with a ``before`` column from ``--before``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:  # time this checkout's code, not an installed copy
    sys.path.insert(0, str(ROOT))

#: (label, workload preset, SimConfig overrides, policies).
EVENT_POLICIES = (
    "fifo", "fifo-skip", "sjf", "min-parallelism", "max-parallelism", "random",
    "threshold-eta", "threshold-queue", "best-threshold", "tetris", "easy-backfill",
    "tiresias", "tiresias-artifact", "fair", "fifo-rigid", "optimus", "optimus-oracle",
    "slaq",
)  # fmt: skip
ROUND_POLICIES = (*EVENT_POLICIES, "pollux", "random-alloc")  # may stall: reported
CASES: tuple[tuple[str, str, dict[str, Any], tuple[str, ...]], ...] = (
    ("philly-sample", "philly-sample", {}, EVENT_POLICIES),
    ("synthetic", "synthetic", {}, EVENT_POLICIES),
    ("pollux-1 rounds", "pollux-1", {"time_slice_s": 600.0}, ROUND_POLICIES),
)
METRIC_KEYS = ("avg_jct_s", "p95_jct_s", "makespan_s", "gpu_utilization")


def replay(workload: Any, policy: str, config: dict[str, Any]) -> tuple[float, int, dict]:
    """CPU seconds of one episode's loop, its simulator events, and its metrics."""
    from cluster_envs.config import sim_config
    from cluster_envs.policies.registry import make_policy
    from cluster_envs.runner import _run_events, _run_rounds
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.sim.metrics import compute_metrics

    cfg = sim_config(config)
    pol = make_policy(policy)
    pol.reset(0)
    sim = Simulator(workload.jobs, "pollux-testbed", cfg, seed=0)
    t0 = time.process_time()
    if cfg.time_slice_s is None:
        _run_events(sim, pol)
    else:
        _run_rounds(sim, pol)
    seconds = time.process_time() - t0
    sim.record.sample(sim)
    metrics = compute_metrics(sim)
    return seconds, sim.num_events, {k: float(metrics[k]) for k in METRIC_KEYS}


def run(repeats: int, quick: bool) -> dict[str, Any]:
    from cluster_envs.driver import SimulationStalledError
    from cluster_envs.workload import load_workload

    out: dict[str, Any] = {}
    for label, preset, config, policies in CASES[:1] if quick else CASES:
        workload = load_workload(preset, seed=0)
        rows: dict[str, Any] = {}
        for policy in policies:
            best, events = float("inf"), 0
            metrics: dict[str, float] = {}
            try:
                for _ in range(repeats):
                    seconds, events, metrics = replay(workload, policy, config)
                    best = min(best, seconds)
            except SimulationStalledError as error:
                rows[policy] = {"error": str(error)}
                print(f"{label:16s} {policy:18s} stalled", flush=True)
                continue
            rows[policy] = {"cpu_s": best, "num_events": events, "metrics": metrics}
            print(f"{label:16s} {policy:18s} {best:8.3f} s  {events} events", flush=True)
        fifo = rows["fifo"]["cpu_s"]
        for row in rows.values():
            if "error" in row:
                continue
            row["us_per_event"] = 1e6 * row["cpu_s"] / max(row["num_events"], 1)
            row["x_fifo"] = row["cpu_s"] / fifo
        out[label] = {"workload": preset, "num_jobs": len(workload), "config": config,
                      "policies": rows}  # fmt: skip
    return out


def mismatches(now: dict[str, Any], before: dict[str, Any]) -> list[str]:
    """Cases whose metrics differ from ``before`` (a speed-up must change nothing)."""
    bad = []
    for label, case in now.items():
        for policy, row in case["policies"].items():
            old = before.get(label, {}).get("policies", {}).get(policy)
            if old is not None and old.get("metrics") != row.get("metrics"):
                bad.append(f"{label}/{policy}: {old['metrics']} -> {row['metrics']}")
    return bad


def markdown(now: dict[str, Any], before: dict[str, Any] | None, command: str) -> str:
    lines = [
        "# Heuristics at simulator speed",
        "",
        f"Command: `{command}`",
        "",
        "Best-of-N CPU time (`time.process_time`) of the runner's event loop on the "
        "`pollux-testbed` cluster; `x FIFO` is the ratio to FIFO measured in the same run. "
        "`before` columns come from the run on the code before the speed-ups "
        "(`heuristics_speed_before.json`, same command with `--label before`).",
        "",
        "The machine is shared (load ~15 on 2 cores while these ran): single figures move by "
        "+-50% between runs (compare `tiresias` and `tiresias-artifact`, the same code with "
        "other thresholds); `same metrics` checks avg/p95 JCT, makespan and utilisation "
        "against the before run exactly.",
        "",
    ]
    for label, case in now.items():
        old = (before or {}).get(label, {}).get("policies", {})
        lines += [
            f"## {label} ({case['num_jobs']} jobs, config {case['config'] or 'default'})",
            "",
            "| policy | events | before s | before x FIFO | s | us/event | x FIFO | same metrics |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for policy, row in case["policies"].items():
            prev = old.get(policy)
            if "error" in row:
                lines.append(f"| {policy} | stalled: {row['error']} | | | | | | |")
                continue
            if prev is not None and "error" in prev:
                prev = None
            b_s = f"{prev['cpu_s']:.3f}" if prev else "-"
            b_x = f"{prev['x_fifo']:.1f}" if prev else "-"
            same = "-" if not prev else ("yes" if prev["metrics"] == row["metrics"] else "NO")
            lines.append(
                f"| {policy} | {row['num_events']} | {b_s} | {b_x} | {row['cpu_s']:.3f} | "
                f"{row['us_per_event']:.0f} | {row['x_fifo']:.1f} | {same} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="philly-sample only")
    parser.add_argument("--label", default="", help="suffix of the json written")
    parser.add_argument("--before", type=Path, default=None, help="json of the before run")
    args = parser.parse_args()
    command = "python benchmarks/bench_heuristics_speed.py " + " ".join(sys.argv[1:])
    now = run(args.repeats, args.quick)
    meta = {"command": command.strip(), "python": platform.python_version(),
            "machine": platform.machine(), "repeats": args.repeats}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"heuristics_speed_{args.label}.json" if args.label else "heuristics_speed.json"
    (RESULTS / name).write_text(json.dumps({"meta": meta, "cases": now}, indent=2) + "\n")
    before = None
    if args.before is not None:
        before = json.loads(args.before.read_text())["cases"]
        bad = mismatches(now, before)
        for line in bad:
            print("METRICS CHANGED:", line)
        if bad:
            return 1
    (RESULTS / "heuristics_speed.md").write_text(markdown(now, before, meta["command"]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
