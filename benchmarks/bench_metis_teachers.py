"""Which teacher could a MetisAllocation generalist imitate? (issue 13; validation splits only)

Plays the heuristics MetisAllocation's ``action="hints"`` options follow (slaq, optimus,
tiresias, fair; each through its option, which replays it exactly) and the lookahead
teachers of ``agents/teacher.py`` over them (``lookahead``: believed quality over the next
quality window, the Metis default; ``lookahead-jct``: the same candidates scored by total
believed completion time) on the chosen families' *validation* splits, and prints each
one's quality AUC and its ratio to the best of the heuristics in that family
(best / it: > 1 is worse), with CPU time.

A teacher name may carry LookaheadTeacher settings after ``@`` (``make_teacher``):
``lookahead:slaq,tiresias@commit=5,margin=0.02`` (``commit``: decisions a choice is
kept for; ``margin``: hysteresis against the candidate chosen last; ``prefer``: the
option a tie is labelled with). ``--hint-policies``
sets the env's options (default: the shipped Metis generalist's five, with slaq-window).

    python benchmarks/bench_metis_teachers.py --seeds 500-503 --out F.json [--families a,b]
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
from agents.teacher import METIS_CANDIDATES, LookaheadTeacher, make_teacher
from cluster_envs.envs.rollout import rollout
from cluster_envs.seeds import parse_seeds
from cluster_envs.workload.families import family_names

ENV = "cluster_envs/MetisAllocation-v0"
HINTS = "slaq,optimus,tiresias,fair,slaq-window"
TEACHERS = (*HINTS.split(","), "lookahead", "lookahead-jct")


def agent_for(name: str, env: gym.Env) -> Any:
    if name == "lookahead-jct":
        teacher = LookaheadTeacher(METIS_CANDIDATES, objective="jct")
        teacher.options = True
        return teacher
    return make_teacher(name, ENV, env.unwrapped)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="500-503")
    ap.add_argument("--families", default="", help="comma-separated; default: every family")
    ap.add_argument("--teachers", default=" ".join(TEACHERS), help="space-separated")
    ap.add_argument("--hint-policies", default=HINTS)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)  # validation seeds; a bad list is a ConfigError
    families = [f for f in args.families.split(",") if f] or family_names("metis")
    rows: dict[str, Any] = {}
    for fam in families:
        env = gym.make(ENV, family=fam, split="validation", action="hints",
                       observation="scale_free_hints",
                       hint_policies=tuple(args.hint_policies.split(",")))  # fmt: skip
        rows[fam] = {}
        for name in args.teachers.split():
            start = time.process_time()
            agent = agent_for(name, env)
            auc = [rollout(env, agent, s).metrics["quality_auc"] for s in seeds]
            rows[fam][name] = {"quality_auc": auc, "cpu_s": round(time.process_time() - start, 2),
                               "choices": dict(getattr(agent, "choices", {}))}  # fmt: skip
        means = {n: float(np.mean(r["quality_auc"])) for n, r in rows[fam].items()}
        plain = args.hint_policies.split(",")
        best = max((n for n in means if n in plain), key=means.__getitem__,
                   default=None)  # fmt: skip
        line = {n: round(means[best] / m, 4) if best else round(m, 4) for n, m in means.items()}
        print(fam, "best", best, line, flush=True)
    Path(args.out).write_text(json.dumps({"seeds": list(seeds), "split": "validation",
                                          "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
