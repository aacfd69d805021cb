"""Env step throughput: steps per second with masked random actions, one core.

For every registered env (each preset given), plays masked-random episodes for a fixed
wall-time budget in a fresh process pinned to one core, and reports steps/s with and
without the resets, next to raw CartPole-v1 measured in the same run. Target for
MoldableScheduling-v0: at least 10k steps/s with masks on one core.

Usage: ``.venv/bin/python benchmarks/bench_envs.py [--seconds 10]``. Writes
``benchmarks/results/envs.json`` and ``benchmarks/results/envs.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CASES = [
    ("cluster_envs/MoldableScheduling-v0", "default"),
    ("cluster_envs/MoldableScheduling-v0", "pollux"),
    ("cluster_envs/MetisAllocation-v0", "default"),
    ("cluster_envs/MetisAllocationDiscrete-v0", "default"),
    ("cluster_envs/JobPlacement-v0", "default"),
]


def measure(env_id: str, preset: str, seconds: float) -> dict[str, float]:
    """Masked-random steps for ``seconds`` of CPU time (child process)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym
    import numpy as np

    import cluster_envs  # noqa: F401

    env = gym.make(env_id, preset=preset)
    rng = np.random.default_rng(0)
    steps = episodes = 0
    reset_s = 0.0
    start = time.process_time()
    while time.process_time() - start < seconds:
        t = time.process_time()
        _, info = env.reset(seed=episodes)
        reset_s += time.process_time() - t
        done = False
        while not done:
            mask = info.get("action_mask")
            if mask is not None and isinstance(env.action_space, gym.spaces.Discrete):
                action = int(rng.choice(np.flatnonzero(mask)))
            else:
                action = env.action_space.sample()
            _, _, terminated, truncated, info = env.step(action)
            steps += 1
            done = terminated or truncated
        episodes += 1
    total = time.process_time() - start
    return {
        "steps": steps,
        "episodes": episodes,
        "steps_per_s": steps / total,
        "steps_per_s_without_resets": steps / max(total - reset_s, 1e-9),
        "steps_per_episode": steps / max(episodes, 1),
    }


def cartpole(seconds: float) -> float:
    """Raw CartPole-v1 steps/s (child process)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)
    steps = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / (time.process_time() - start)


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-cartpole", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.seconds)))
        return
    if args.child_cartpole:
        print(json.dumps({"steps_per_s": cartpole(args.seconds)}))
        return
    base = _child(["--child-cartpole", "--seconds", str(args.seconds)])["steps_per_s"]
    rows = []
    for env_id, preset in CASES:
        r = _child(["--child", env_id, preset, "--seconds", str(args.seconds)])
        rows.append(
            {"env": env_id, "preset": preset, **r, "ratio_to_cartpole": r["steps_per_s"] / base}
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    doc = {"cartpole_steps_per_s": base, "cpu_seconds_per_case": args.seconds, "rows": rows}
    (RESULTS / "envs.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        "# Env steps per second (`.venv/bin/python benchmarks/bench_envs.py`)",
        "",
        f"Masked random actions, one core, CPU time. CartPole-v1 raw: {base:,.0f} steps/s.",
        "",
        "| env | preset | steps/s | steps/s without resets | steps/episode | vs CartPole |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['env'].split('/')[-1]} | {r['preset']} | {r['steps_per_s']:,.0f} | "
            f"{r['steps_per_s_without_resets']:,.0f} | {r['steps_per_episode']:.0f} | "
            f"{r['ratio_to_cartpole']:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / "envs.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
