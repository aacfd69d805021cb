"""Simulator speed and memory benchmark.

Measures, in one run on one core:

* simulator events per second (arrivals + completions) replaying Philly jobs under FIFO,
  and its ratio to raw ``CartPole-v1`` steps per second (target: >= 0.2);
* the replay of the whole 82k-job Philly table under FIFO on the Philly-sized cluster:
  wall time and peak memory (target: < 30 s, < 2 GiB);
* wall time at 1k, 10k and 80k jobs (growth should be near-linear).

Each replay runs in a fresh subprocess pinned to one core, so its peak RSS is its own.
Usage::

    .venv/bin/python benchmarks/bench_sim.py [--data ../shared/data] [--quick]

Writes ``benchmarks/results/sim.json`` and ``benchmarks/results/sim.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ONE_CORE_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def replay(path: str, num_jobs: int | None) -> dict[str, float]:
    """Load + replay ``num_jobs`` Philly jobs under FIFO on the philly cluster (child)."""
    _pin_one_core()
    from cluster_envs.policies import make_policy
    from cluster_envs.runner import _run_events
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.sim.metrics import compute_metrics
    from cluster_envs.workload import load_workload

    t0 = time.perf_counter()
    options = {} if num_jobs is None else {"num_jobs": num_jobs}
    workload = load_workload(path, format="philly", **options)
    t1 = time.perf_counter()
    # The loop of run_episode, keeping the simulator to count its events.
    sim = Simulator(workload.jobs, "philly", {"record_timeline": True})
    _run_events(sim, make_policy("fifo"))
    t2 = time.perf_counter()
    metrics = compute_metrics(sim)
    t3 = time.perf_counter()
    return {
        "num_jobs": len(workload),
        "load_s": t1 - t0,
        "simulate_s": t2 - t1,
        "metrics_s": t3 - t2,
        "wall_s": t3 - t0,
        "num_events": sim.num_events,
        "events_per_s": sim.num_events / (t2 - t1),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "avg_jct_s": metrics["avg_jct_s"],
        "gpu_utilization": metrics["gpu_utilization"],
    }


def cartpole_steps_per_s(num_steps: int) -> float:
    """Raw CartPole-v1 steps per second with random actions (child)."""
    _pin_one_core()
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.perf_counter()
    for _ in range(num_steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return num_steps / (time.perf_counter() - start)


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ONE_CORE_ENV},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--quick", action="store_true", help="1k and 10k jobs only")
    parser.add_argument("--child-replay", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-cartpole", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_replay:
        path, n = args.child_replay
        print(json.dumps(replay(path, None if n == "all" else int(n))))
        return
    if args.child_cartpole:
        print(json.dumps({"steps_per_s": cartpole_steps_per_s(args.child_cartpole)}))
        return

    philly = Path(args.data) / "philly_pollux" / "philly.csv"
    if not philly.exists():
        sys.exit(f"Philly trace not found at {philly}; pass --data DIR")
    sizes = ["1000", "10000"] if args.quick else ["1000", "10000", "all"]
    cartpole = _child(["--child-cartpole", "200000"])["steps_per_s"]
    runs = {n: _child(["--child-replay", str(philly), n]) for n in sizes}
    largest = runs[sizes[-1]]
    result = {
        "machine": {"python": platform.python_version(), "cpu": platform.processor()},
        "cartpole_steps_per_s": cartpole,
        "sim_events_per_s": largest["events_per_s"],
        "ratio_sim_events_to_cartpole_steps": largest["events_per_s"] / cartpole,
        "replays": runs,
        "scaling_simulate_s_per_1k_jobs": {
            n: r["simulate_s"] / r["num_jobs"] * 1000 for n, r in runs.items()
        },
        "targets": {
            "ratio_sim_events_to_cartpole_steps": ">= 0.2",
            "full_philly_wall_s": "< 30",
            "full_philly_peak_rss_mib": "< 2048",
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sim.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Simulator benchmark (`.venv/bin/python benchmarks/bench_sim.py`)",
        "",
        f"- CartPole-v1 raw steps/s: {cartpole:,.0f}",
        f"- simulator events/s (largest replay): {largest['events_per_s']:,.0f}",
        f"- ratio events/s to CartPole steps/s: {result['ratio_sim_events_to_cartpole_steps']:.2f}"
        " (target >= 0.2)",
        "",
        "| jobs | events | load s | simulate s | simulate s per 1k jobs | wall s | peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs.values():
        lines.append(
            f"| {r['num_jobs']:,} | {r['num_events']:,} | {r['load_s']:.2f} | "
            f"{r['simulate_s']:.2f} | {r['simulate_s'] / r['num_jobs'] * 1000:.3f} | "
            f"{r['wall_s']:.2f} | {r['peak_rss_mib']:.0f} |"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / "sim.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
