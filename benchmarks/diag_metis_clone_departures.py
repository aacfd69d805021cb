"""Where does a Metis clone depart from its lookahead teacher? (issue 13; validation only)

Plays the clone (deterministic) on one validation episode of a family and asks the
six-heuristic lookahead teacher (``@prefer=switch-window``) for its action at every
step of the clone's own trajectory; prints the steps where they differ and the most
frequent (teacher option, clone option) pairs per slot, and what the departures cost by the
teacher's own scores (``LookaheadTeacher.regrets``: per step, the mean over slots of the
clone's option's relative regret; summed over the departing steps). Option indices: the model's
``hint_policies`` then keep, pause (0 slaq, 1 optimus, 2 tiresias, 3 fair,
4 slaq-window, 5 switch-window, 6 keep, 7 pause).

    PYTHONPATH=. python benchmarks/diag_metis_clone_departures.py MODEL.zip SEED [FAMILY]
"""

from __future__ import annotations

import collections
import dataclasses
import json
import sys

import numpy as np
from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401  (registers the envs)
from agents import generalist
from agents.imitation import _student_action
from agents.set_policy import adapt
from agents.teacher import make_teacher
from cluster_envs.envs.base import unwrap_cluster_env

H = "slaq,optimus,tiresias,fair,slaq-window,switch-window"


def main() -> None:
    if len(sys.argv) not in (3, 4) or not sys.argv[2].isdigit():
        raise SystemExit("usage: diag_metis_clone_departures.py MODEL.zip SEED [FAMILY]")
    spec = dataclasses.replace(generalist.ENV_SPECS["metis"], hint_policies=tuple(H.split(",")))
    model = MaskablePPO.load(sys.argv[1], device="cpu")
    seed = int(sys.argv[2])
    family = sys.argv[3] if len(sys.argv) > 3 else "philly-vc"
    env = generalist.make_env(family, "validation", None, spec)
    student = adapt(model, env)
    base = unwrap_cluster_env(env)
    teacher = make_teacher(f"lookahead:{H}@prefer=switch-window", spec.env_id, base)
    obs, info = env.reset(seed=seed)
    teacher.reset(base.episode_seed)
    pairs = collections.Counter()
    steps = diff_steps = 0
    regret = []
    done = False
    while not done:
        t = np.asarray(teacher.act(env, obs, info)).reshape(-1)
        s = np.asarray(_student_action(student, obs, info)).reshape(-1)
        steps += 1
        if (t != s).any():
            diff_steps += 1
            if teacher.regrets is not None:
                per_slot = teacher.regrets.reshape(len(s), -1)
                regret.append(float(per_slot[np.arange(len(s)), s].mean()))
            for a, b in zip(t, s, strict=True):
                if a != b:
                    pairs[(int(a), int(b))] += 1
        obs, r, term, trunc, info = env.step(s)
        done = term or trunc
    print(
        json.dumps(
            {
                "family": family,
                "seed": seed,
                "steps": steps,
                "diff_steps": diff_steps,
                "slot_pairs(teacher,student)": {str(k): v for k, v in pairs.most_common(12)},
                "departure_regret_sum": round(float(np.sum(regret)), 4),
                "departure_regret_top5": sorted(np.round(regret, 4).tolist())[-5:],
                "quality": info["episode_metrics"]["quality_auc"],
            }
        )
    )


if __name__ == "__main__":
    main()
