"""Does a moldable lookahead teacher gain from sampled future arrivals? (issue 13; validation)

Plays ``threshold-eta`` and the moldable lookahead teachers of ``agents/teacher.py``
(``lookahead``: believed forks without future arrivals; ``lookahead-arrivals``: with
sampled ones) on a few MoldableScheduling families' *validation* splits and prints each
one's ratio of mean JCT to threshold-eta's (the first of ``--teachers``), with CPU time;
``--teachers threshold-eta,lookahead,lookahead-multi`` compares the policy-selection
lookahead with the rollout over several base heuristics, and ``lookahead-multi-arrivals``
adds sampled arrivals to that rollout. A plain heuristic plays as the env builds it
(``env.unwrapped.policy(name)``: it chooses among the jobs the action window can name, as
the generalist's evaluation plays it); built by bare name, SJF could pick a job outside
the window and stop the episode.

    python benchmarks/bench_moldable_teachers.py --families synthetic-16,philly-time \
        --seeds 500-503 --out F.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the envs)
from agents.teacher import make_teacher
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.seeds import parse_seeds

ENV = "cluster_envs/MoldableScheduling-v0"
TEACHERS = ("threshold-eta", "lookahead", "lookahead-arrivals")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="synthetic-16,philly-time")
    ap.add_argument("--seeds", default="500-503")
    ap.add_argument("--teachers", default=",".join(TEACHERS),
                    help="comma-separated: heuristics or teachers (first: the reference)")  # fmt: skip
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)  # validation seeds; a bad list is a ConfigError
    names = [n for n in args.teachers.split(",") if n]
    if not names:
        ap.error("--teachers names no heuristic or teacher")
    rows: dict[str, Any] = {}
    for fam in args.families.split(","):
        env = gym.make(ENV, family=fam, split="validation")
        rows[fam] = {}
        for name in names:
            start = time.process_time()
            agent = make_teacher(name, ENV) or HeuristicAgent(env.unwrapped.policy(name))
            jct = [rollout(env, agent, s).metrics["avg_jct_s"] for s in seeds]
            rows[fam][name] = {"avg_jct_s": jct, "cpu_s": round(time.process_time() - start, 2)}
        ref = np.asarray(rows[fam][names[0]]["avg_jct_s"])
        line = {
            n: round(float(np.mean(r["avg_jct_s"]) / ref.mean()), 4) for n, r in rows[fam].items()
        }
        print(fam, line, {n: r["cpu_s"] for n, r in rows[fam].items()}, flush=True)
    Path(args.out).write_text(json.dumps({"seeds": list(seeds), "split": "validation",
                                          "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
