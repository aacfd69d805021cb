"""Which teacher could a JobPlacement generalist imitate? (issue 13; validation splits only)

Plays consolidated first-fit (``fifo``), best-fit, and the lookahead teachers of
``agents/teacher.py`` (all three FIFO placement rules as candidates; first-fit and
best-fit only; each without and with sampled future arrivals in its forks) on every placement family's *validation* split and prints each one's
per-family ratio to first-fit (mean JCT over mean JCT, and per seed), with CPU time.

    python benchmarks/bench_placement_teachers.py --seeds 500-503 --out F.json
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
from cluster_envs.workload.families import family_names

ENV = "cluster_envs/JobPlacement-v0"
TEACHERS = (
    "fifo", "fifo-best-fit", "lookahead", "lookahead:fifo,fifo-best-fit",
    "lookahead-arrivals", "lookahead-arrivals:fifo,fifo-best-fit",
)  # fmt: skip


def agent_for(name: str) -> Any:
    return make_teacher(name, ENV) or HeuristicAgent(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="500-503")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)  # validation seeds; a bad list is a ConfigError
    rows: dict[str, Any] = {}
    for fam in family_names("placement"):
        env = gym.make(ENV, family=fam, split="validation")
        rows[fam] = {}
        for name in TEACHERS:
            start = time.process_time()
            jct = [rollout(env, agent_for(name), s).metrics["avg_jct_s"] for s in seeds]
            rows[fam][name] = {"avg_jct_s": jct, "cpu_s": round(time.process_time() - start, 2)}
        ref = np.asarray(rows[fam]["fifo"]["avg_jct_s"])
        line = {
            n: round(float(np.mean(r["avg_jct_s"]) / ref.mean()), 4) for n, r in rows[fam].items()
        }
        print(fam, line, flush=True)
    Path(args.out).write_text(json.dumps({"seeds": list(seeds), "split": "validation",
                                          "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
