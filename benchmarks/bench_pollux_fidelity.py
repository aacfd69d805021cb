"""Fidelity to Pollux's artifact simulator: Tiresias, Optimus+Oracle and Pollux.

Runs our ``tiresias-artifact``, ``optimus-oracle`` and ``pollux`` on the artifact's
eight 160-job workloads (``pollux-1`` .. ``pollux-8``, the artifact's
``simulator/workloads/``) on its testbed (16 x 4 T4), with the artifact's semantics
(:mod:`cluster_envs.workload.pollux_artifact`): 60 s rounds, 30 s on every allocation
(the first one too), no interference; Tiresias jobs rigid at their requested GPUs and
batch, Optimus+Oracle jobs malleable at their fixed batch (length = the model's full
epochs at that batch), Pollux jobs malleable with adaptive batch (length = total
statistical progress, rate = goodput); every job's true speed the testbed's measured
step times (``--throughput measured``, the default; ``fitted`` uses our all-reduce fit).

Reference numbers: the artifact's published per-job completion times,
``simulator/results-jobload/{tiresias,optimus,pollux}-{0.5,1.0,1.5,2.0}/summary.json``
on branch ``osdi21-artifact`` of github.com/petuum/adaptdl (commit c793c708),
averaged per workload here. Given ``--artifact-dir`` (a folder holding those files as
``<policy>-<load>.json``), the benchmark compares; ``--loads 0.5,1.5,2.0`` also runs
the artifact's other job loads (``--load-dir``: the artifact's ``workloads-<load>``
folders, e.g. ``../shared/data/pollux_adaptdl``), on the first ``--load-workloads``
workloads of each (default all 8). ``--workers N`` runs N simulations at a time;
``--report-only F.json`` re-renders a finished run's markdown.

Speed (``--artifact-sim DIR --artifact-python PY --speed-csv A.csv,B.csv``): runs the
artifact's own simulator (``DIR/simulator.py``, a copy of its ``simulator/`` folder,
run by interpreter ``PY`` with its dependencies -- nothing of it is imported here) and
ours on the same workload files, one after the other for each policy, and reports both
average JCTs and wall times and the speed ratio (``pollux_fidelity_speed.md``/``.json``).

Usage::

    python benchmarks/bench_pollux_fidelity.py --artifact-dir /tmp/pollux_art \\
        --load-dir ../shared/data/pollux_adaptdl --loads 1.0,0.5,1.5,2.0
    python benchmarks/bench_pollux_fidelity.py --artifact-sim ../pollux-artifact/simulator \\
        --artifact-python ../artifact-venv/bin/python --speed-csv w1.csv --speed-only
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import subprocess
import time
from pathlib import Path

import numpy as np

from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode
from cluster_envs.workload.pollux_artifact import ARTIFACT_SIM_CONFIG, artifact_workload

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "pollux_fidelity"
#: Ours -> the artifact's policy name.
POLICIES = {"tiresias-artifact": "tiresias", "optimus-oracle": "optimus", "pollux": "pollux"}
#: Artifact testbed settings (60 s rounds, 30 s on every allocation, no interference).
CONFIG = ARTIFACT_SIM_CONFIG
SLOTS = 100_000


def load(source: str, policy: str, throughput: str = "measured"):
    """The workload with the artifact's job semantics for ``policy``."""
    return artifact_workload(source, policy, throughput)


def run_one(
    source: str, policy: str, throughput: str = "measured", config: dict | None = None
) -> tuple[float, float]:
    """``(avg JCT s, wall s)`` of one run (``config``: simulator settings, default CONFIG)."""
    wl = load(source, policy, throughput)
    start = time.perf_counter()
    cfg = CONFIG if config is None else config
    result = run_episode(wl, make_policy(policy, num_slots=SLOTS), "pollux-testbed", cfg, 0)
    wall = time.perf_counter() - start
    if result.metrics["num_unfinished"]:
        raise RuntimeError(f"{policy} on {source}: {result.metrics['num_unfinished']} unfinished")
    return float(result.metrics["avg_jct_s"]), wall


def artifact_means(folder: Path | None, policy: str, load: str) -> dict[str, float]:
    """The artifact's average JCT per workload (``workload-N`` -> s), if available."""
    if folder is None:
        return {}
    path = folder / f"{policy}-{load}.json"
    if not path.is_file():
        return {}
    jcts = json.loads(path.read_text())["jcts"]
    return {w: float(np.mean(list(v.values()))) for w, v in jcts.items()}


def artifact_run(sim_dir: Path, python: str, csv: Path, policy: str) -> tuple[float, float]:
    """``(avg JCT s, wall s)`` of the artifact's simulator on ``csv`` (a subprocess)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [str(Path(python).absolute()) if "/" in python else python, "simulator.py",
         "--policy", policy, str(csv.resolve())],
        cwd=sim_dir, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    found = re.findall(r"Average JCT: ([0-9.eE+-]+)", proc.stdout)
    if not found:
        raise RuntimeError(f"artifact {policy} on {csv}: no 'Average JCT' in its output")
    return float(found[-1]), wall


def speed_rows(
    sim_dir: Path,
    python: str,
    csvs: list[Path],
    policies: list[str] | None = None,
    repeats: int = 1,
) -> list[dict]:
    """Ours and the artifact's simulator on the same files, each policy side by side.

    With ``repeats > 1`` the two alternate ``repeats`` times and each keeps its fastest
    wall time (the machine is shared: the minimum is the least disturbed run).
    """
    rows = []
    for csv in csvs:
        for ours, theirs in POLICIES.items():
            if policies is not None and ours not in policies:
                continue
            walls, ref_walls = [], []
            for _ in range(repeats):
                jct, wall = run_one(str(csv), ours)
                ref_jct, ref_wall = artifact_run(sim_dir, python, csv, theirs)
                walls.append(wall)
                ref_walls.append(ref_wall)
            first, wall, ref_wall = walls[0], min(walls), min(ref_walls)
            rows.append(
                {
                    "workload": csv.name,
                    "policy": ours,
                    "avg_jct_s": jct,
                    "artifact_avg_jct_s": ref_jct,
                    "wall_s": wall,
                    "wall_first_s": first,
                    "artifact_wall_s": ref_wall,
                    "speedup": ref_wall / wall,
                    "speedup_first": ref_wall / first,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def speed_report(rows: list[dict], argv: list[str] | None) -> str:
    """Markdown table of the side-by-side speed runs."""
    lines = [
        "# Speed: our simulator vs the artifact's, same workload files",
        "",
        "| workload | policy | avg JCT ours / artifact (s) | wall ours: first / best (s) "
        "| wall artifact (s) | speedup: first / best |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        first = r.get("wall_first_s", r["wall_s"])
        lines.append(
            f"| {r['workload']} | {r['policy']} | {r['avg_jct_s']:.0f} / "
            f"{r['artifact_avg_jct_s']:.0f} | {first:.2f} / {r['wall_s']:.2f} | "
            f"{r['artifact_wall_s']:.1f} | {r['artifact_wall_s'] / first:.0f}x / "
            f"{r['speedup']:.0f}x |"
        )
    cmd = " ".join(argv) if argv else "(see module docstring)"
    lines += ["", f"Command: `python benchmarks/bench_pollux_fidelity.py {cmd}`"]
    return "\n".join(lines) + "\n"


def _run_cell(cell: tuple[str, str, str, dict]) -> tuple[float, float]:
    source, policy, throughput, config = cell
    return run_one(source, policy, throughput, config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact-dir", type=Path, default=None)
    parser.add_argument("--load-dir", type=Path, default=None)
    parser.add_argument("--loads", default="1.0")
    parser.add_argument("--load-workloads", type=int, default=8)
    parser.add_argument("--workloads", default="1-8")
    parser.add_argument(
        "--throughput",
        choices=("measured", "fitted"),
        default="measured",
        help="true job speeds: the artifact's measured tables or our fit",
    )
    parser.add_argument(
        "--start-cost",
        type=float,
        default=CONFIG["start_cost_s"],
        help="seconds charged on a job's first allocation (artifact: 30)",
    )
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--artifact-sim", type=Path, default=None)
    parser.add_argument("--artifact-python", default="python3")
    parser.add_argument("--speed-csv", default="")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--speed-policies", default="", help="comma-separated (default all)")
    parser.add_argument("--speed-out", type=Path, default=None, help="speed files' stem")
    parser.add_argument("--speed-repeats", type=int, default=1, help="best of N, alternating")
    parser.add_argument(
        "--report-only",
        type=Path,
        default=None,
        help="re-render the markdown of a finished run's JSON",
    )
    args = parser.parse_args(argv)
    if args.report_only is not None:
        done = json.loads(args.report_only.read_text())
        args.report_only.with_suffix(".md").write_text(report(done["rows"], done.get("argv")))
        return 0
    config = {**CONFIG, "start_cost_s": args.start_cost}
    if args.artifact_sim is not None and args.speed_csv:
        csvs = [Path(c) for c in args.speed_csv.split(",")]
        chosen = args.speed_policies.split(",") if args.speed_policies else None
        srows = speed_rows(
            args.artifact_sim, args.artifact_python, csvs, chosen, args.speed_repeats
        )
        OUT.parent.mkdir(parents=True, exist_ok=True)
        speed_out = args.speed_out or OUT.with_name(OUT.name + "_speed")
        speed_out.with_suffix(".json").write_text(json.dumps({"rows": srows}, indent=1))
        speed_out.with_suffix(".md").write_text(speed_report(srows, argv))
    if args.speed_only:
        return 0
    lo, _, hi = args.workloads.partition("-")
    numbers = list(range(int(lo), int(hi or lo) + 1))
    cells = []
    for load_factor in args.loads.split(","):
        for n in numbers if load_factor == "1.0" else numbers[: args.load_workloads]:
            if load_factor == "1.0":
                source = f"pollux-{n}"
            elif args.load_dir is None:
                continue
            else:
                source = str(args.load_dir / f"workloads-{load_factor}" / f"workload-{n}.csv")
            for ours in POLICIES:
                cells.append((load_factor, n, ours, source))
    runs = [(source, ours, args.throughput, config) for _, _, ours, source in cells]
    if args.workers > 1:
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            results = pool.map(_run_cell, runs, chunksize=1)
    else:
        results = [_run_cell(run) for run in runs]
    rows = []
    for (load_factor, n, ours, _), (jct, wall) in zip(cells, results, strict=True):
        ref = artifact_means(args.artifact_dir, POLICIES[ours], load_factor).get(f"workload-{n}")
        rows.append(
            {
                "load": load_factor,
                "workload": n,
                "policy": ours,
                "avg_jct_s": jct,
                "artifact_avg_jct_s": ref,
                "ratio": None if ref is None else jct / ref,
                "wall_s": wall,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"config": config, "throughput": args.throughput, "argv": argv, "rows": rows}
    args.out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    args.out.with_suffix(".md").write_text(report(rows, argv))
    return 0


def _ranking(by: dict[str, dict], key: str) -> list[str]:
    return sorted(POLICIES, key=lambda p: by[p][key] or 0.0)


def summary(rows: list[dict]) -> list[str]:
    """Per job load: each policy's ratio of means and per-workload range; rankings that agree."""
    head = "| job load | workloads | " + " | ".join(POLICIES) + " | same ranking |"
    lines = [head, "|---|---|" + "---|" * (len(POLICIES) + 1)]
    for load_factor in dict.fromkeys(r["load"] for r in rows):
        sub = [r for r in rows if r["load"] == load_factor]
        numbers = list(dict.fromkeys(r["workload"] for r in sub))
        cells = []
        for p in POLICIES:
            mine = [r for r in sub if r["policy"] == p]
            if any(r["artifact_avg_jct_s"] is None for r in mine):
                cells.append("-")
                continue
            mean_ratio = np.mean([r["avg_jct_s"] for r in mine]) / np.mean(
                [r["artifact_avg_jct_s"] for r in mine]
            )
            low, high = min(r["ratio"] for r in mine), max(r["ratio"] for r in mine)
            cells.append(f"{mean_ratio:.3f} ({low:.2f}-{high:.2f})")
        same = 0
        for n in numbers:
            by = {r["policy"]: r for r in sub if r["workload"] == n}
            same += _ranking(by, "avg_jct_s") == _ranking(by, "artifact_avg_jct_s")
        lines.append(
            f"| {load_factor} | {len(numbers)} | "
            + " | ".join(cells)
            + f" | {same} of {len(numbers)} |"
        )
    lines += [
        "",
        "Cells: ratio of the means of average JCT (ours / artifact), and the range of the "
        "per-workload ratios.",
    ]
    return lines


def report(rows: list[dict], argv: list[str] | None) -> str:
    """Markdown tables: per-workload ratios, ratio of means, rankings, wall time."""
    lines = ["# Fidelity to Pollux's artifact simulator", "", *summary(rows), ""]
    for load_factor in dict.fromkeys(r["load"] for r in rows):
        sub = [r for r in rows if r["load"] == load_factor]
        lines += [
            f"## Job load {load_factor}",
            "",
            "| workload | "
            + " | ".join(f"{p} ours / artifact (ratio)" for p in POLICIES)
            + " | ranking ours | ranking artifact |",
            "|---|" + "---|" * (len(POLICIES) + 2),
        ]
        for n in dict.fromkeys(r["workload"] for r in sub):
            by = {r["policy"]: r for r in sub if r["workload"] == n}
            cells = [
                f"{by[p]['avg_jct_s']:.0f} / "
                + (
                    "-"
                    if by[p]["artifact_avg_jct_s"] is None
                    else f"{by[p]['artifact_avg_jct_s']:.0f} ({by[p]['ratio']:.2f})"
                )
                for p in POLICIES
            ]
            ours = " < ".join(sorted(POLICIES, key=lambda p: by[p]["avg_jct_s"]))
            ref = " < ".join(sorted(POLICIES, key=lambda p: by[p]["artifact_avg_jct_s"] or 0))
            lines.append(f"| {n} | " + " | ".join(cells) + f" | {ours} | {ref} |")
        lines.append("")
        for p in POLICIES:
            mine = [r for r in sub if r["policy"] == p]
            ours_mean = np.mean([r["avg_jct_s"] for r in mine])
            refs = [r["artifact_avg_jct_s"] for r in mine if r["artifact_avg_jct_s"]]
            wall = sum(r["wall_s"] for r in mine)
            ratio = f"{ours_mean / np.mean(refs):.3f}" if len(refs) == len(mine) else "-"
            lines.append(
                f"- {p}: mean avg JCT {ours_mean:.0f} s, ratio of means {ratio}, "
                f"wall {wall:.1f} s for {len(mine)} runs"
            )
        lines.append("")
    cmd = " ".join(argv) if argv else "(see module docstring)"
    lines.append(f"Command: `python benchmarks/bench_pollux_fidelity.py {cmd}`")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
