"""MetisAllocation's heuristics (and a lookahead teacher) per family: CPU seconds per episode,
this tree against another, interleaved (issue 11, "heuristics at simulator speed").

The generalist's training and evaluation play these heuristics on every family: as
baselines, as the hints env's options (asked every slice) and inside the lookahead
teacher's forks. Each (family, policy) episode runs in a fresh child process pinned to
one core, ``--pairs`` times per tree, before and after in turn, so each pair sees the same
machine load (this machine's CPU time for the same run varies by +-40 %): the speed-up is
the median over pairs of before / after CPU time (``time.process_time``), with the
quartiles and each tree's fastest run; the episode's metrics must be equal on both trees
(a speed-up may change nothing).

Usage::

    .venv/bin/python benchmarks/bench_metis_heuristics_speed.py --before-src DIR
        [--families synthetic-16,mixed] [--policies slaq,optimus] [--pairs 5]
        [--teacher NAME] [--out metis_heuristics_speed]

``DIR`` is another checkout (``git worktree add DIR REV``). Writes
``benchmarks/results/OUT.{json,md}``.
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
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: ``runner:<preset>``: that workload through the no-gym runner (rigid jobs), not the env.
FAMILIES = "synthetic-16,synthetic-256,mixed,philly-vc,pollux,runner:philly-sample"
POLICIES = "slaq,optimus,slaq-window,switch-short,tiresias,fair"
#: The shipped generalist's options plus switch-short: the N2 lookahead teacher.
TEACHER = "lookahead:slaq,optimus,tiresias,fair,slaq-window,switch-short@prefer=switch-short"
METRICS = ("quality_auc", "avg_jct_s", "gpu_utilization")


def episode(family: str, policy: str, seed: int) -> dict[str, Any]:
    """Child: one validation episode of ``policy`` (a heuristic, or ``teacher:NAME``)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gymnasium as gym

    import cluster_envs  # noqa: F401  (registers the envs)
    from cluster_envs.envs.rollout import HeuristicAgent, rollout

    if family.startswith("runner:"):  # the no-gym runner on a workload preset, rigid jobs
        return runner_episode(family[len("runner:") :], policy)
    env_id = "cluster_envs/MetisAllocation-v0"
    if policy.startswith("teacher:"):
        from agents.teacher import make_teacher

        options = ["slaq", "optimus", "tiresias", "fair", "slaq-window", "switch-short"]
        env = gym.make(env_id, family=family, split="validation", action="hints",
                       observation="scale_free_hints", hint_policies=options,
                       observe_slice=True)  # fmt: skip
        agent: Any = make_teacher(policy[len("teacher:") :], env_id, env.unwrapped)
    else:
        env = gym.make(env_id, family=family, split="validation", observation="scale_free")
        agent = HeuristicAgent(env.unwrapped.policy(policy))  # type: ignore[attr-defined]
    start = time.process_time()
    result = rollout(env, agent, seed)
    seconds = time.process_time() - start
    return {
        "cpu_s": seconds,
        "steps": result.num_steps,
        "metrics": {k: float(result.metrics[k]) for k in METRICS},
    }


def runner_episode(preset: str, policy: str) -> dict[str, Any]:
    """Child: ``policy`` replaying workload ``preset`` on ``pollux-testbed`` through the
    runner's event loop (bench_heuristics_speed's case; its jobs are rigid)."""
    from cluster_envs.config import sim_config
    from cluster_envs.policies.registry import make_policy
    from cluster_envs.runner import _run_events
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.sim.metrics import compute_metrics
    from cluster_envs.workload import load_workload

    workload = load_workload(preset, seed=0)
    pol = make_policy(policy)
    pol.reset(0)
    sim = Simulator(workload.jobs, "pollux-testbed", sim_config({}), seed=0)
    start = time.process_time()
    _run_events(sim, pol)
    seconds = time.process_time() - start
    sim.record.sample(sim)
    metrics = compute_metrics(sim)
    keys = ("avg_jct_s", "makespan_s", "gpu_utilization")
    return {
        "cpu_s": seconds,
        "steps": sim.num_events,
        "metrics": {k: float(metrics[k]) for k in keys},
    }


def _child(tree: Path, family: str, policy: str, seed: int) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    args = [sys.executable, __file__, "--child", family, policy, str(seed)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env, cwd=tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", required=False, help="the other checkout")
    parser.add_argument("--before-label", default="", help="what --before-src holds")
    parser.add_argument("--families", default=FAMILIES)
    parser.add_argument("--policies", default=POLICIES)
    parser.add_argument("--teacher", default=TEACHER, help="'' for none")
    parser.add_argument("--teacher-families", default="synthetic-16,mixed,pollux")
    parser.add_argument("--seed", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=5, help="before/after runs per case")
    parser.add_argument("--out", default="metis_heuristics_speed")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        family, policy, seed = args.child
        print(json.dumps(episode(family, policy, int(seed))))
        return
    if not args.before_src or not (Path(args.before_src) / "cluster_envs").is_dir():
        parser.error("--before-src must be a checkout with a cluster_envs package")
    trees = {"before": Path(args.before_src).resolve(), "after": ROOT}
    cases = [(f, p) for f in args.families.split(",") for p in args.policies.split(",")]
    if args.teacher:
        cases += [(f, f"teacher:{args.teacher}") for f in args.teacher_families.split(",")]
    rows = []
    for family, policy in cases:
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(args.pairs):
            for name, tree in trees.items():  # in turn: a pair sees the same load
                runs[name].append(_child(tree, family, policy, args.seed))
        ratios = sorted(
            b["cpu_s"] / a["cpu_s"] for b, a in zip(runs["before"], runs["after"], strict=True)
        )
        q1, median, q3 = (float(np.quantile(ratios, q)) for q in (0.25, 0.5, 0.75))
        same = all(r["metrics"] == runs["before"][0]["metrics"] for rs in runs.values() for r in rs)
        row = {"family": family, "policy": policy,
               "before_s": min(r["cpu_s"] for r in runs["before"]),
               "after_s": min(r["cpu_s"] for r in runs["after"]),
               "speedup": median, "speedup_q1": q1, "speedup_q3": q3,
               "steps": runs["after"][0]["steps"], "same_metrics": same,
               "metrics": runs["after"][0]["metrics"]}  # fmt: skip
        rows.append(row)
        print(f"{family:14s} {policy[:40]:40s} {row['before_s']:8.3f} {row['after_s']:8.3f}"
              f"  x{median:.2f} ({q1:.2f}-{q3:.2f})  same={same}", flush=True)  # fmt: skip
    command = ".venv/bin/python benchmarks/bench_metis_heuristics_speed.py " + shlex.join(
        sys.argv[1:]
    )
    doc = {"command": command, "before_src": args.before_src,
           "before_label": args.before_label, "seed": args.seed, "pairs": args.pairs,
           "rows": rows}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# MetisAllocation heuristics, CPU s per episode (`{command}`)",
        "",
        f"Validation split, seed {args.seed}; {args.pairs} before/after pairs per case, each"
        " run in a fresh process pinned to one core; speed-up = median of the pairs'"
        " before/after CPU-time ratios (quartiles); s = each tree's fastest run. Before: "
        f"`{args.before_src}`{f' ({args.before_label})' if args.before_label else ''}."
        " `same` = quality AUC, average JCT and utilisation equal on both trees.",
        "",
        "| family | policy | steps | before s | after s | speed-up (quartiles) | same |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['policy']} | {r['steps']} | {r['before_s']:.3f} |"
            f" {r['after_s']:.3f} | {r['speedup']:.2f}x ({r['speedup_q1']:.2f}-{r['speedup_q3']:.2f})"
            f" | {'yes' if r['same_metrics'] else 'NO'} |"
        )
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
