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
run on a noisy machine. ``--pairs N`` (with ``--before-src``) adds a load-robust
speed-up: two long-lived workers (before, after) on the same core play the same
``--pair-episodes`` episodes in turn, N times each, and the median of the N after/before
ratios of adjacent turns is reported (with its quartiles).

Usage: ``.venv/bin/python benchmarks/bench_envs.py [--seconds 10] [--repeats 1]
[--before-src DIR] [--pairs N] [--pair-episodes E]``.
Writes ``benchmarks/results/envs.json`` and ``benchmarks/results/envs.md`` (``--out``: another
name; ``--only``: a subset of the cases).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
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
    ("cluster_envs/MetisAllocation-v0", "default", "hints"),
    ("cluster_envs/MetisAllocationDiscrete-v0", "default", "default"),
    ("cluster_envs/JobPlacement-v0", "default", "default"),
    ("cluster_envs/JobPlacement-v0", "default", "scale_free"),
]
#: Observation modes that stand for more kwargs: ``hints`` is the shipped generalist's
#: MetisAllocation (scale-free observation with every heuristic's counts, per-slot options
#: as the action, the slice length observed; agents/pretrained/MetisAllocation-v0.json).
MODE_KWARGS = {
    "hints": {
        "observation": "scale_free_hints",
        "action": "hints",
        "hint_policies": ["slaq", "optimus", "tiresias", "fair", "slaq-window"],
        "observe_slice": True,
    },
}
#: Issue 11's targets: steps/s (resets included) as a ratio to raw CartPole-v1.
TARGETS = {
    "cluster_envs/MoldableScheduling-v0": 0.10,
    "cluster_envs/MetisAllocation-v0": 0.05,
    "cluster_envs/MetisAllocationDiscrete-v0": 0.10,
    "cluster_envs/JobPlacement-v0": 0.25,
}


def mode_kwargs(observation: str) -> dict[str, object]:
    """The env kwargs of an observation mode of :data:`CASES`."""
    if observation == "default":
        return {}
    return dict(MODE_KWARGS.get(observation, {"observation": observation}))


def measure(env_id: str, preset: str, observation: str, seconds: float) -> dict[str, float]:
    """Masked-random steps for ``seconds`` of CPU time (child process)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym
    import numpy as np

    import cluster_envs  # noqa: F401

    env = gym.make(env_id, preset=preset, **mode_kwargs(observation))
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


def _episodes(env_id: str, preset: str, observation: str, episodes: int) -> None:
    """Worker: per input line, play episodes 0..E-1 (masked random) and print steps/s."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym
    import numpy as np

    import cluster_envs  # noqa: F401

    kwargs = mode_kwargs(observation)
    env = gym.make(env_id, preset=preset, **kwargs)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)

    def play() -> float:  # the actions of measure()
        rng, steps, start = np.random.default_rng(0), 0, time.process_time()
        env.action_space.seed(0)
        for episode in range(episodes):
            _, info = env.reset(seed=episode)
            done = False
            while not done:
                if discrete:
                    action = int(rng.choice(np.flatnonzero(info["action_mask"])))
                else:
                    action = env.action_space.sample()
                _, _, terminated, truncated, info = env.step(action)
                steps, done = steps + 1, terminated or truncated
        return steps / (time.process_time() - start)

    play()  # warm-up (caches of the first episodes, imports)
    for _ in sys.stdin:
        print(json.dumps(play()), flush=True)


def paired(case: list[str], before_src: str, pairs: int, episodes: int) -> dict[str, float]:
    """Median after/before ratio of ``pairs`` adjacent turns of two workers (see doc)."""

    def start(src: str | None) -> subprocess.Popen:
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
        args = [sys.executable, __file__, "--child-episodes", *case, str(episodes)]
        return subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    before, after = start(before_src), start(None)
    ratios = []
    for k in range(pairs):
        got = {}
        for worker in (before, after) if k % 2 == 0 else (after, before):
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
            got[worker] = json.loads(worker.stdout.readline())
        ratios.append(got[after] / got[before])
    for worker in (before, after):
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    q1, median, q3 = statistics.quantiles(ratios, n=4) if pairs > 1 else (ratios[0],) * 3
    return {"median": median, "q1": q1, "q3": q3, "pairs": pairs, "episodes": episodes}


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


def selected(cases: list[tuple[str, str, str]], only: str | None) -> list[tuple[str, str, str]]:
    """The cases that ``--only`` names (every case without it)."""
    if not only:
        return list(cases)
    wanted = [tuple(item.split(":")) for item in only.split(",")]
    for item in wanted:
        if len(item) != 3:
            raise SystemExit(f"--only: {':'.join(item)!r} is not ENV:PRESET:OBS")

    def match(case: tuple[str, str, str], item: tuple[str, ...]) -> bool:
        return all(not part or part in (value, value.split("/")[-1])
                   for part, value in zip(item, case, strict=True))  # fmt: skip

    return [case for case in cases if any(match(case, item) for item in wanted)]


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


def _fmt_paired(p: dict[str, float]) -> str:
    return f" {p['median']:.2f}x ({p['q1']:.2f}-{p['q3']:.2f}) |"


def _fmt_ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--before-src", help="source tree of the code to compare against")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many runs")
    parser.add_argument("--before-label", help="what --before-src holds (e.g. a commit)")
    parser.add_argument("--pairs", type=int, default=0, help="paired turns per case")
    parser.add_argument("--pair-episodes", type=int, default=8, help="episodes per turn")
    parser.add_argument(
        "--only",
        help="comma-separated cases to run, each 'ENV:PRESET:OBS' with parts left empty"
        " to match any (e.g. 'MetisAllocation-v0::hints'); default: every case",
    )
    parser.add_argument(
        "--out", default="envs", help="results name: benchmarks/results/OUT.{json,md}"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-episodes", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--child-cartpole", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child, args.seconds)))
        return
    if args.child_episodes:
        *case, episodes = args.child_episodes
        _episodes(*case, int(episodes))
        return
    if args.child_cartpole:
        print(json.dumps({"steps_per_s": cartpole(args.seconds)}))
        return
    if args.before_src and not (Path(args.before_src) / "cluster_envs").is_dir():
        parser.error(f"--before-src {args.before_src}: no cluster_envs package there")
    if args.pairs < 0 or args.pair_episodes < 1:
        parser.error("--pairs must be >= 0 and --pair-episodes >= 1")
    if args.pairs and not args.before_src:
        parser.error("--pairs needs --before-src (the tree to pair with)")
    cases = selected(CASES, args.only)
    if not cases:
        parser.error(f"--only {args.only!r} matches none of the cases")
    secs = ["--seconds", str(args.seconds)]
    repeats = range(args.repeats)
    first = max(_child(["--child-cartpole", *secs])["steps_per_s"] for _ in repeats)
    rows = []
    for env_id, preset, observation in cases:
        child = ["--child", env_id, preset, observation, *secs]
        runs, before_runs = [], []
        for _ in repeats:  # interleaved, so both see the same machine load
            runs.append(_child(child))
            if args.before_src:
                before_runs.append(_child(child, args.before_src))
        row = {"env": env_id, "preset": preset, "observation": observation, **_best(runs)}
        if before_runs:
            row["before"] = _best(before_runs)
        if args.before_src and args.pairs:
            case = [env_id, preset, observation]
            row["paired"] = paired(case, args.before_src, args.pairs, args.pair_episodes)
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
    (RESULTS / f"{args.out}.json").write_text(json.dumps(doc, indent=2) + "\n")
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
            " | steps/episode | before vs CartPole | vs CartPole | target |"
            + (" paired speed-up (quartiles) |" if args.pairs else ""),
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
            + ("---:|" if args.pairs else ""),
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
                + (_fmt_paired(r["paired"]) if "paired" in r else "")
            )
        else:
            lines.append(
                f"| {name} | {r['preset']} | {r['observation']} | {r['steps_per_s']:,.0f} | "
                f"{tail}{r['ratio_to_cartpole']:.3f} | {target} |"
            )
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
