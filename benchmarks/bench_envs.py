"""Env step throughput: steps per second with masked random actions, one core.

For every registered env (each preset and observation mode given), plays masked-random
episodes for a fixed CPU-time budget in a fresh process pinned to one core, and reports
steps/s with and without the resets, next to raw CartPole-v1 measured in the same run
(before and after the cases; the ratio uses their mean). ``--repeats R`` keeps the
best of R runs of every figure (the least disturbed on a shared machine). Targets (issue 11, ratio to
CartPole, resets included): MoldableScheduling-v0 >= 0.10, MetisAllocation-v0 >= 0.05,
MetisAllocationDiscrete-v0 >= 0.10, JobPlacement-v0 >= 0.25.

``--before-src DIR`` measures every case a second time, interleaved, on another source
tree (e.g. ``git archive <rev> | tar -x -C DIR``), so before/after figures share one
run on a noisy machine.

Usage: ``.venv/bin/python benchmarks/bench_envs.py [--seconds 10] [--repeats 1]
[--before-src DIR]``.
Writes ``benchmarks/results/envs.json`` and ``benchmarks/results/envs.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CASES = [
    ("cluster_envs/MoldableScheduling-v0", "default", "default"),
    ("cluster_envs/MoldableScheduling-v0", "pollux", "default"),
    ("cluster_envs/MoldableScheduling-v0", "default", "scale_free"),
    ("cluster_envs/MetisAllocation-v0", "default", "default"),
    ("cluster_envs/MetisAllocation-v0", "default", "scale_free"),
    ("cluster_envs/MetisAllocationDiscrete-v0", "default", "default"),
    ("cluster_envs/JobPlacement-v0", "default", "default"),
    ("cluster_envs/JobPlacement-v0", "default", "scale_free"),
]
#: Issue 11's targets: steps/s (resets included) as a ratio to raw CartPole-v1.
TARGETS = {
    "cluster_envs/MoldableScheduling-v0": 0.10,
    "cluster_envs/MetisAllocation-v0": 0.05,
    "cluster_envs/MetisAllocationDiscrete-v0": 0.10,
    "cluster_envs/JobPlacement-v0": 0.25,
}


def measure(env_id: str, preset: str, observation: str, seconds: float) -> dict[str, float]:
    """Masked-random steps for ``seconds`` of CPU time (child process)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym
    import numpy as np

    import cluster_envs  # noqa: F401

    kwargs = {} if observation == "default" else {"observation": observation}
    env = gym.make(env_id, preset=preset, **kwargs)
    env.action_space.seed(0)
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


def _child(args: list[str], src: str | None = None) -> dict:
    env = dict(os.environ)
    if src is not None:  # import cluster_envs from that tree instead of this one
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _best(runs: list[dict]) -> dict:
    """The fastest of repeated runs (the least disturbed by other load)."""
    return max(runs, key=lambda r: r["steps_per_s"])


def _fmt_ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--before-src", help="source tree of the code to compare against")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many runs")
    parser.add_argument("--before-label", help="what --before-src holds (e.g. a commit)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-cartpole", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child, args.seconds)))
        return
    if args.child_cartpole:
        print(json.dumps({"steps_per_s": cartpole(args.seconds)}))
        return
    if args.before_src and not (Path(args.before_src) / "cluster_envs").is_dir():
        parser.error(f"--before-src {args.before_src}: no cluster_envs package there")
    secs = ["--seconds", str(args.seconds)]
    repeats = range(args.repeats)
    first = max(_child(["--child-cartpole", *secs])["steps_per_s"] for _ in repeats)
    rows = []
    for env_id, preset, observation in CASES:
        child = ["--child", env_id, preset, observation, *secs]
        runs, before_runs = [], []
        for _ in repeats:  # interleaved, so both see the same machine load
            runs.append(_child(child))
            if args.before_src:
                before_runs.append(_child(child, args.before_src))
        row = {"env": env_id, "preset": preset, "observation": observation, **_best(runs)}
        if before_runs:
            row["before"] = _best(before_runs)
        rows.append(row)
    last = max(_child(["--child-cartpole", *secs])["steps_per_s"] for _ in repeats)
    base = (first + last) / 2
    for row in rows:
        row["ratio_to_cartpole"] = row["steps_per_s"] / base
        row["target_ratio"] = TARGETS.get(row["env"])
        if "before" in row:
            row["before"]["ratio_to_cartpole"] = row["before"]["steps_per_s"] / base
            row["speedup"] = row["steps_per_s"] / row["before"]["steps_per_s"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = ".venv/bin/python benchmarks/bench_envs.py " + shlex.join(sys.argv[1:])
    doc = {
        "command": command.strip(),
        "cartpole_steps_per_s": base,
        "cartpole_steps_per_s_first_last": [first, last],
        "cpu_seconds_per_case": args.seconds,
        "repeats_best_of": args.repeats,
        "before_src": args.before_src,
        "before_label": args.before_label,
        "rows": rows,
    }
    (RESULTS / "envs.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# Env steps per second (`{command.strip()}`)",
        "",
        "Masked random actions, one core, CPU time, resets included unless said; each figure"
        f" the best of {args.repeats} run(s) of {args.seconds:g} CPU-s. CartPole-v1 raw:"
        f" {base:,.0f} steps/s (mean of {first:,.0f} before and {last:,.0f} after the"
        " cases). Targets: issue 11's ratios to CartPole.",
        "",
    ]
    if args.before_src:
        lines += [
            f"Before: the same cases on `{args.before_src}`"
            + (f" ({args.before_label})" if args.before_label else "")
            + ", measured interleaved in this run.",
            "",
            "| env | preset | obs | before steps/s | steps/s | speed-up | steps/s w/o resets"
            " | steps/episode | before vs CartPole | vs CartPole | target |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
    else:
        lines += [
            "| env | preset | obs | steps/s | steps/s w/o resets | steps/episode | vs CartPole"
            " | target |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
    for r in rows:
        name = r["env"].split("/")[-1]
        tail = f"{r['steps_per_s_without_resets']:,.0f} | {r['steps_per_episode']:.0f} | "
        target = _fmt_ratio(r["target_ratio"])
        if "before" in r:
            b = r["before"]
            lines.append(
                f"| {name} | {r['preset']} | {r['observation']} | {b['steps_per_s']:,.0f} | "
                f"{r['steps_per_s']:,.0f} | {r['speedup']:.2f}x | {tail}"
                f"{b['ratio_to_cartpole']:.3f} | {r['ratio_to_cartpole']:.3f} | {target} |"
            )
        else:
            lines.append(
                f"| {name} | {r['preset']} | {r['observation']} | {r['steps_per_s']:,.0f} | "
                f"{tail}{r['ratio_to_cartpole']:.3f} | {target} |"
            )
    text = "\n".join(lines) + "\n"
    (RESULTS / "envs.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
