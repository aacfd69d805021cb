"""How often a FIFO decision starts several jobs at once (the joint queue window's scope).

Plays FIFO + consolidated first-fit on JobPlacement-v0 over the given workloads and seeds
and counts, per workload, the decisions that start any job and those that start two or
more (the decisions where ``BOPlacement(joint_window=...)`` has a window to place jointly).
Usage::

    .venv/bin/python benchmarks/diag_placement_windows.py [--split train] [--seeds 0-4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main() -> int:
    from cluster_envs.harness.grid import Cell, run_cell
    from cluster_envs.policies.fifo import FifoScheduler
    from cluster_envs.workload.families import family_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="train")
    parser.add_argument("--seeds", default="0-4")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    counts = {"decisions": 0, "jobs": 0, "windows": 0, "window_jobs": 0}
    decide = FifoScheduler.decide

    def counting(self, view):  # type: ignore[no-untyped-def]
        decision = decide(self, view)
        if decision.actions:
            counts["decisions"] += 1
            counts["jobs"] += len(decision.actions)
            if len(decision.actions) > 1:
                counts["windows"] += 1
                counts["window_jobs"] += len(decision.actions)
        return decision

    FifoScheduler.decide = counting  # type: ignore[method-assign]
    workloads = {"default": {"preset": "default"}, "large": {"preset": "large"}}
    for name in family_names("placement"):
        workloads[f"{name}/{args.split}"] = {"family": name, "split": args.split}
    print(f"    .venv/bin/python benchmarks/diag_placement_windows.py --split {args.split} "
          f"--seeds {args.seeds}\n")  # fmt: skip
    print("| workload | decisions starting jobs | of them starting >= 2 jobs | jobs in those |")
    print("|---|---|---|---|")
    for workload, kwargs in workloads.items():
        for key in counts:
            counts[key] = 0
        for seed in seeds:
            cell = Cell("cluster_envs/JobPlacement-v0", workload, kwargs, "fifo", seed)
            run_cell(cell, keep_details=False)
        share = counts["windows"] / max(counts["decisions"], 1)
        print(f"| {workload} | {counts['decisions']} | {counts['windows']} ({share:.0%}) | "
              f"{counts['window_jobs']} of {counts['jobs']} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
