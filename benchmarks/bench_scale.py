"""Traces at scale (issue 11): load and FIFO-replay generated canonical traces.

Generates a canonical trace (``job_id,submit_time_s,num_gpus,duration_s``) of N jobs by
resampling the (duration, GPUs) pairs of the shipped ``philly_sample.csv`` with a fixed
seed, Poisson arrivals at ``--load`` of the ``philly`` cluster's GPUs, into a temporary
directory (never committed). Then, each in a fresh child process pinned to one core:

* ``load``: ``load_workload(path)`` -- wall time and peak RSS (targets at 1M jobs:
  <= 15 s, <= 500 MiB);
* ``replay``: load + ``run_episode(workload, "fifo", "philly")`` (or ``--policy NAME``)
  -- simulate time per 1k jobs (target: flat from 10k to 1M) and peak RSS (target at
  1M: <= 90 s, <= 1.5 GiB).

``--code DIR`` runs the children against another checkout's ``cluster_envs`` (the
"before" figures: ``git archive <commit> | tar -x -C DIR``); without it they import
whatever ``PYTHONPATH`` or the installed package gives (from a worktree: ``--code .``
or ``PYTHONPATH=$PWD``). Usage::

    .venv/bin/python benchmarks/bench_scale.py --sizes 10000,100000,1000000 \
        --label after [--code /tmp/before --label before]

Merges its rows into ``benchmarks/results/scale.json`` (keyed by label) and rewrites
``benchmarks/results/scale.md``. ``--profile N`` writes a cProfile of loading and
replaying N jobs to ``benchmarks/results/scale_profile_<N/1000>k.txt`` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ONE_CORE_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: GPUs of the ``philly`` cluster preset (130x2 + 95x4 + 232x8).
PHILLY_GPUS = 2496


def generate_canonical(path: Path, num_jobs: int, seed: int = 0, load: float = 0.7) -> None:
    """Write a ``num_jobs``-job canonical CSV resampled from ``philly_sample.csv``."""
    import pandas as pd

    sample = pd.read_csv(ROOT / "cluster_envs" / "data" / "philly_sample.csv")
    rng = np.random.default_rng(seed)
    rows = rng.integers(len(sample), size=num_jobs)
    gpus = sample["num_gpus"].to_numpy()[rows]
    durations = sample["duration"].to_numpy(dtype=float)[rows]
    gpus = np.minimum(gpus, 64)  # every job fits the cluster
    mean_gpu_s = float((gpus * durations).mean())
    gap = mean_gpu_s / (load * PHILLY_GPUS)
    submit = np.round(np.cumsum(rng.exponential(gap, size=num_jobs)), 1)
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(num_jobs)],
            "submit_time_s": submit,
            "num_gpus": gpus,
            "duration_s": durations,
        }
    )
    frame.to_csv(path, index=False)


def _pin_one_core() -> None:
    """Pin to core ``$BENCH_CORE`` (default: the lowest allowed)."""
    if hasattr(os, "sched_setaffinity"):
        allowed = os.sched_getaffinity(0)
        core = int(os.environ.get("BENCH_CORE", min(allowed)))
        os.sched_setaffinity(0, {core if core in allowed else min(allowed)})


def child(mode: str, path: str, policy: str = "fifo") -> dict[str, float]:
    """``load`` or ``replay`` (under ``policy``) the trace at ``path`` (in a child process)."""
    _pin_one_core()
    from cluster_envs.runner import run_episode
    from cluster_envs.workload import load_workload

    t0, c0 = time.perf_counter(), time.process_time()
    workload = load_workload(path, format="canonical")
    t1, c1 = time.perf_counter(), time.process_time()
    out = {"num_jobs": len(workload), "load_s": t1 - t0, "load_cpu_s": c1 - c0}
    if mode == "replay":
        result = run_episode(workload, policy, "philly")
        t2, c2 = time.perf_counter(), time.process_time()
        out.update(
            simulate_s=t2 - t1,
            simulate_cpu_s=c2 - c1,
            simulate_cpu_s_per_1k_jobs=(c2 - c1) / len(workload) * 1000,
            avg_queue_length=result.metrics["avg_queue_length"],
            simulate_s_per_1k_jobs=(t2 - t1) / len(workload) * 1000,
            wall_s=t2 - t0,
            avg_jct_s=result.metrics["avg_jct_s"],
            gpu_utilization=result.metrics["gpu_utilization"],
        )
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _run_child(mode: str, path: Path, code: str | None, policy: str = "fifo") -> dict:
    env = {**os.environ, **ONE_CORE_ENV}
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path), policy],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=code or ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _markdown(results: dict) -> str:
    lines = [
        "# Traces at scale (issue 11)",
        "",
        "Generated canonical traces (philly_sample resampled, seed 0, load 0.7 of the",
        "`philly` cluster); FIFO replay with `run_episode(workload, 'fifo', 'philly')`",
        "(another policy where a section names one).",
        "Each figure from a fresh child process pinned to one core (peak RSS = ru_maxrss).",
        "The machine is shared (load average ~10 on 2 cores while these ran): wall",
        "seconds are inflated several-fold; CPU seconds (process_time) are the steadier",
        "figure.",
        "Targets at 1M jobs: load <= 15 s and <= 500 MiB; FIFO replay <= 90 s and",
        "<= 1.5 GiB; simulate s per 1k jobs flat from 10k to 1M.",
        "",
    ]
    for label, entry in results.items():
        if label.startswith("_"):
            continue
        lines += [f"## {label}", "", f"Command: `{entry['command']}`", ""]
        if entry.get("note"):
            lines += [entry["note"], ""]
        if entry.get("policy", "fifo") != "fifo":
            lines += [f"Policy: `{entry['policy']}`.", ""]
        lines += [
            "| jobs | load s (CPU s) | load peak RSS MiB | simulate s (CPU s) | "
            "simulate CPU s / 1k jobs | replay wall s | replay peak RSS MiB | mean queue |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for n, row in entry["rows"].items():
            load, rep = row.get("load", {}), row.get("replay", {})

            def cell(d: dict, key: str, fmt: str = ".2f") -> str:
                return format(d[key], fmt) if key in d else "-"

            lines.append(
                f"| {int(n):,} | {cell(load, 'load_s')} ({cell(load, 'load_cpu_s')}) | "
                f"{cell(load, 'peak_rss_mib', '.0f')} | "
                f"{cell(rep, 'simulate_s')} ({cell(rep, 'simulate_cpu_s')}) | "
                f"{cell(rep, 'simulate_cpu_s_per_1k_jobs', '.3f')} | {cell(rep, 'wall_s')} | "
                f"{cell(rep, 'peak_rss_mib', '.0f')} | {cell(rep, 'avg_queue_length', '.1f')} |"
            )
        lines.append("")
    if "_findings" in results:  # hand-written reading of the figures, kept in the json
        lines += ["## Findings", "", *results["_findings"], ""]
    return "\n".join(lines)


def profile(num_jobs: int) -> None:
    """cProfile of load and FIFO replay of ``num_jobs`` (top entries by own time)."""
    import cProfile
    import io
    import pstats

    from cluster_envs.runner import run_episode
    from cluster_envs.workload import load_workload

    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "canonical.csv"
        generate_canonical(path, num_jobs)
        for label, call in (
            ("load_workload", lambda: load_workload(path, format="canonical")),
            ("run_episode fifo philly", None),
        ):
            prof = cProfile.Profile()
            if call is not None:
                workload = prof.runcall(call)
            else:
                prof.runcall(run_episode, workload, "fifo", "philly")
            out.write(f"## {label}\n")
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(20)
    text = out.getvalue().replace(str(ROOT) + "/", "")
    (RESULTS / f"scale_profile_{num_jobs // 1000}k.txt").write_text(
        f"# python benchmarks/bench_scale.py --profile {num_jobs}\n{text}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--replay-sizes", default=None, help="default: --sizes")
    parser.add_argument("--label", default="after")
    parser.add_argument("--code", default=None, help="checkout whose cluster_envs to run")
    parser.add_argument("--note", default="")
    parser.add_argument("--load", type=float, default=0.7, help="offered load of the trace")
    parser.add_argument("--policy", default="fifo", help="the replay's policy (a registered name)")
    parser.add_argument("--profile", type=int, help="cProfile N jobs instead")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.profile:
        _pin_one_core()
        profile(args.profile)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    wanted = args.sizes if args.replay_sizes is None else args.replay_sizes
    replay_sizes = {int(s) for s in wanted.split(",") if s}
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"canonical_{n}.csv"
            generate_canonical(path, n, load=args.load)
            rows[str(n)] = {"load": _run_child("load", path, args.code)}
            if n in replay_sizes:
                rows[str(n)]["replay"] = _run_child("replay", path, args.code, args.policy)
            print(n, json.dumps(rows[str(n)]), flush=True)
    file = RESULTS / "scale.json"
    results = json.loads(file.read_text()) if file.exists() else {}
    results[args.label] = {
        "command": "python " + shlex.join(["benchmarks/bench_scale.py", *sys.argv[1:]]),
        "note": args.note,
        "policy": args.policy,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "scale.md").write_text(_markdown(results))
    print(_markdown(results))


if __name__ == "__main__":
    main()
