"""What a fork costs: ``fork_believed`` and the lookahead teacher's decisions, before/after.

A lookahead teacher (agents/teacher.py) forks the running simulation once per candidate
per decision; on pollux's MetisAllocation episodes (160 jobs, 60 s slices) the six-heuristic
teacher spent ~76 % of its time in ``copy.deepcopy`` (py-spy, 2026-12-06). This bench plays
a MetisAllocation episode of ``--family`` to decision ``--at`` under switch-window, then
times ``fork_believed`` of the simulator and SLAQ, and the teacher's next ``--decisions``
decisions (CPU seconds, best of ``--repeats``). ``--before-src DIR`` runs the same
measurement on another source tree (e.g. ``git archive`` of an earlier commit) in a child
process, interleaved with this tree's, and reports the ratios.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_fork.py --before-src /tmp/old --before-label 2e1f0a3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cluster_envs.cli import positive_int


def non_negative_int(text: str) -> int:
    """``--at``: 0 or more decisions."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


OUT = Path(__file__).parent / "results"
TEACHER = "lookahead:slaq,optimus,tiresias,fair,slaq-window,switch-window@prefer=switch-window"


def measure(family: str, at: int, forks: int, decisions: int) -> dict[str, float]:
    """CPU seconds of one fork and of one teacher decision, mid-episode."""
    import dataclasses

    from agents import generalist
    from agents.teacher import FollowOption, make_teacher
    from cluster_envs.sim.fork import fork_believed

    names = tuple(TEACHER.split(":")[1].split("@")[0].split(","))
    spec = dataclasses.replace(generalist.ENV_SPECS["metis"], hint_policies=names)
    env = generalist.make_env(family, "train", spec=spec)
    base: Any = env.unwrapped
    obs, info = env.reset(seed=3)
    play = FollowOption("switch-window", base.hints.options)
    for _ in range(at):
        obs, _, term, trunc, info = env.step(play.act(env, obs, info))
        if term or trunc:
            raise SystemExit(f"--at {at}: the {family} episode ended before it")
    sim = base.sim
    policy = base.policy("slaq")
    policy.reset(3)
    policy.decide(sim.view())
    t0 = time.process_time()
    for _ in range(forks):
        fork_believed(sim, policy)
    fork_s = (time.process_time() - t0) / forks
    teacher = make_teacher(TEACHER, spec.env_id, base)
    teacher.reset(3)
    t0 = time.process_time()
    done = 0
    while done < decisions:
        obs, _, term, trunc, info = env.step(teacher.act(env, obs, info))
        done += 1
        if term or trunc:
            break
    decision_s = (time.process_time() - t0) / done  # per decision actually made
    return {"jobs": len(sim.jobs), "now_s": float(sim.now_s), "fork_ms": fork_s * 1e3,
            "decision_ms": decision_s * 1e3}  # fmt: skip


def _child(src: str | None, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    root = src or str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root
    cmd = [sys.executable, __file__, "--child", "--family", args.family, "--at", str(args.at),
           "--forks", str(args.forks), "--decisions", str(args.decisions)]  # fmt: skip
    out = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="pollux")
    parser.add_argument(
        "--at", type=non_negative_int, default=30, help="decisions played before timing"
    )
    parser.add_argument("--forks", type=positive_int, default=30)
    parser.add_argument("--decisions", type=positive_int, default=5)
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--before-src", help="source tree of the code to compare against")
    parser.add_argument("--before-label", help="what --before-src holds (e.g. a commit)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(OUT / "fork.json"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.family, args.at, args.forks, args.decisions)))
        return
    if args.before_src and not (Path(args.before_src) / "cluster_envs").is_dir():
        parser.error(f"--before-src {args.before_src}: no cluster_envs package there")
    runs: dict[str, list[dict[str, float]]] = {"after": [], "before": []}
    for _ in range(args.repeats):
        if args.before_src:
            runs["before"].append(_child(args.before_src, args))
        runs["after"].append(_child(None, args))
    result: dict[str, Any] = {"family": args.family, "at": args.at, "runs": runs}
    for side, rows in runs.items():
        if rows:
            result[side] = {k: min(r[k] for r in rows) for k in ("fork_ms", "decision_ms")}
    if args.before_src:
        result["before_label"] = args.before_label or args.before_src
        result["speedup"] = {
            k: result["before"][k] / result["after"][k] for k in ("fork_ms", "decision_ms")
        }
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
