"""MetisAllocation baselines and env speed.

Measures, on one core:

* every allocation baseline (``fair``, ``optimus``, ``slaq``, ``fifo-rigid``,
  ``tiresias``, ``random-alloc``) on the episodes of ``MetisAllocation-v0`` (default
  preset) with seeds 100-109, replayed by the no-gym runner (identical to playing them
  through the env: the parity tests check it): mean and 95 % confidence interval
  (Student t over seeds) of ``quality_auc``, ``time_to_quality_s``, ``time_to_best_s``
  and ``avg_jct_s``;
* env steps per second of both ids under a random (masked) agent and under ``slaq``
  played through the env.

Usage::

    .venv/bin/python benchmarks/bench_metis_baselines.py [--seeds 100-109] [--speed-s 10]

Writes ``benchmarks/results/metis_baselines.md`` and ``metis_baselines.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.harness.stats import mean_ci as harness_mean_ci
from cluster_envs.runner import run_episode

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_IDS = ("cluster_envs/MetisAllocation-v0", "cluster_envs/MetisAllocationDiscrete-v0")
BASELINES = ("slaq", "optimus", "tiresias", "fair", "random-alloc", "fifo-rigid")
METRICS = ("quality_auc", "time_to_quality_s", "time_to_best_s", "avg_jct_s")


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and 95 % Student-t half-width (the project's one CI function)."""
    ci = harness_mean_ci(values)
    return ci.mean, ci.half_width


def baselines(seeds: list[int]) -> dict[str, dict[str, list[float]]]:
    """Every baseline's metrics on each seed's default-preset episode."""
    env = gym.make(ENV_IDS[0])
    out: dict[str, dict[str, list[float]]] = {name: {m: [] for m in METRICS} for name in BASELINES}
    for seed in seeds:
        env.reset(seed=seed)
        base = env.unwrapped
        for name in BASELINES:
            metrics = run_episode(policy=base.policy(name), **base.runner_args()).metrics
            for m in METRICS:
                out[name][m].append(metrics[m])
    return out


def steps_per_second(env_id: str, agent: str, budget_s: float) -> float:
    """Env steps per second for ``budget_s`` seconds of play (episodes seeded 0, 1, ...)."""
    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    env.action_space.seed(0)
    base = env.unwrapped
    seed, steps = 0, 0
    _, info = env.reset(seed=seed)
    policy = base.policy("slaq")
    policy.reset(base.episode_seed)
    start = time.perf_counter()
    while time.perf_counter() - start < budget_s:
        if agent == "slaq":
            action = base.action_for(policy.decide(base.sim.view()))
        elif isinstance(env.action_space, gym.spaces.Discrete):
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        else:
            action = env.action_space.sample()
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            seed += 1
            _, info = env.reset(seed=seed)
            policy.reset(base.episode_seed)
    return steps / (time.perf_counter() - start)


def _seed_range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-109", help="seed range, e.g. 100-109")
    parser.add_argument("--speed-s", type=float, default=10.0, help="seconds per speed run")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    seeds = _seed_range(args.seeds)
    t0 = time.perf_counter()
    results = baselines(seeds)
    bench_s = time.perf_counter() - t0
    speed = {
        f"{env_id.split('/')[1]} ({agent})": steps_per_second(env_id, agent, args.speed_s)
        for env_id in ENV_IDS
        for agent in ("random", "slaq")
    }
    summary = {
        name: {m: mean_ci(values) for m, values in per.items()} for name, per in results.items()
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "metis_baselines.json").write_text(
        json.dumps({"seeds": seeds, "per_seed": results, "steps_per_s": speed}, indent=1)
    )
    lines = [
        "# MetisAllocation-v0 baselines (default preset)",
        "",
        f"Seeds {seeds[0]}-{seeds[-1]} (one episode each: 30 malleable jobs on 8 x 4 T4, "
        "10-minute slices); mean +- 95 % CI half-width (Student t). Replayed by the no-gym "
        "runner, which gives the same metrics as the env (parity tests). "
        f"Python {platform.python_version()}, one core, {bench_s:.1f} s for all runs.",
        "",
        "Command: `.venv/bin/python benchmarks/bench_metis_baselines.py`",
        "",
        "| policy | quality_auc (1 h window) | time_to_quality_s | time_to_best_s | avg_jct_s |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(summary, key=lambda n: -summary[n]["quality_auc"][0]):
        cells = []
        for m in METRICS:
            mean, half = summary[name][m]
            cells.append(
                f"{mean:.4f} +- {half:.4f}" if m == "quality_auc" else f"{mean:,.0f} +- {half:,.0f}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines += [
        "",
        "## Env speed (one core)",
        "",
        f"{args.speed_s:g} s of play each; one step is one 10-minute slice (Discrete: one GPU "
        "added, or the slice ended). `slaq` includes the policy's own decision time. "
        f"Machine load average during the run: {load:.1f} (on {os.cpu_count()} cores).",
        "",
        "| env (agent) | steps/s |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v:,.0f} |" for k, v in speed.items()]
    lines.append("")
    (RESULTS / "metis_baselines.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
