"""Which of the online BO placer's decisions leave first-fit, and which of them lose?

Plays ``bo-gp-ei`` episodes of JobPlacement-v0 (a preset or a family split; training
seeds only: this is for tuning) and, at every instant where its decision differs from
FIFO + consolidated first-fit's on the same view, forks the simulator and plays both
decisions to the end of the episode, every later decision by ``fifo`` (the fork oracle,
:func:`cluster_envs.sim.fork.play_candidate`). Per deviation it records what the
projection saw (projected saving over first-fit, job size, free GPUs, queue, how many
running/queued jobs are estimated from priors) and what happened (realised avg JCT of
the deviation over first-fit's). Writes JSON lines for analysis::

    .venv/bin/python benchmarks/diag_placement_bets.py --family synthetic-16 --split train \
        --seeds 0-49 --out /tmp/bets.jsonl [--bo-options '{"IMPROVEMENT_MARGIN": 0.05}']
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cluster_envs  # noqa: E402, F401  (registers the envs)
from baselines.placement import online  # noqa: E402
from cluster_envs.policies import make_policy  # noqa: E402
from cluster_envs.sim.engine import Simulator  # noqa: E402
from cluster_envs.sim.fork import play_candidate  # noqa: E402
from cluster_envs.sim.metrics import compute_metrics  # noqa: E402

ENV_ID = "cluster_envs/JobPlacement-v0"


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def _instrument(bo: online.BOPlacement, log: list[dict[str, Any]]) -> None:
    """Record, per placed job, first-fit's and the chosen placement's projected costs."""
    place, projection = bo.place, bo._projection
    last: dict[str, Any] = {}

    def wrapped_projection(view, job, num_gpus, free, scale=None):
        cost = projection(view, job, num_gpus, free, scale)
        if scale is None:  # the nominal projection, not a re-scoring draw
            last["cost"] = cost
        return cost

    def wrapped_place(view, job, num_gpus, free):
        free0 = free.copy()
        chosen = place(view, job, num_gpus, free)
        if chosen is None:
            return None
        ff = online.WARM_START[0].place(view, job, num_gpus, free0)
        cost = last["cost"]
        est = view.estimate(job.job_id)

        def whole(placement):  # fully free nodes left after placing
            left = free0.copy()
            for node, g in placement:
                left[node] -= g
            return int((left == view.total_gpus).sum())

        log.append({
            "job": job.job_id, "gpus": num_gpus, "free": int(free0.sum()),
            "deviates": ff != chosen, "proj_ff": cost((ff,)), "proj_pick": cost((chosen,)),
            "job_source": est.source, "ff": ff, "pick": chosen,
            "whole_ff": whole(ff), "whole_pick": whole(chosen),
        })  # fmt: skip
        return chosen

    bo.place = wrapped_place  # type: ignore[method-assign]
    bo._projection = wrapped_projection  # type: ignore[method-assign]


def run_seed(kwargs: dict[str, Any], seed: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
    env: Any = gym.make(ENV_ID, **kwargs).unwrapped
    env.reset(seed=seed)
    args = env.runner_args()
    sim = Simulator(args["jobs"].jobs, args["cluster"], args["config"], args["seed"])
    bo_policy: Any = make_policy("bo-gp-ei")
    bo_policy.reset(args["seed"])
    fifo = make_policy("fifo")
    fifo.reset(args["seed"])
    log: list[dict[str, Any]] = []
    _instrument(bo_policy.bo, log)
    rows: list[dict[str, Any]] = []
    total_gpus = int(sim.view().free_gpus.sum())
    while not sim.done:
        sim.step()
        while sim.queue:
            view = sim.view()
            start = len(log)
            d_bo = bo_policy.decide(view)
            if not d_bo.actions:
                break
            placed = log[start:]
            if any(p["deviates"] for p in placed):
                d_ff = fifo.decide(view)
                r_bo = play_candidate(sim, fifo, d_bo)["avg_jct_s"]
                r_ff = play_candidate(sim, fifo, d_ff)["avg_jct_s"]
                queued = [j for j in view.queued_ids]
                src = [view.estimate(s.job_id).source for s in view.running]
                qsrc = [view.estimate(j).source for j in queued]
                for p in placed:
                    if not p["deviates"]:
                        continue
                    rows.append({
                        "seed": seed, "t": view.time_s, **p, "cluster_gpus": total_gpus,
                        "proj_saving": 1 - p["proj_pick"] / p["proj_ff"],
                        "realised": r_bo / r_ff, "queued": len(queued),
                        "queued_gpus": int(sum(view.job(j).num_gpus for j in queued)),
                        "running": len(src), "running_prior": src.count("prior"),
                        "queued_prior": qsrc.count("prior"), "pending": view.num_pending,
                        "jobs_in_decision": len(placed),
                    })  # fmt: skip
            sim.apply(d_bo)
    m_bo = compute_metrics(sim)["avg_jct_s"]
    env2: Any = gym.make(ENV_ID, **kwargs).unwrapped
    env2.reset(seed=seed)
    a2 = env2.runner_args()
    sim2 = Simulator(a2["jobs"].jobs, a2["cluster"], a2["config"], a2["seed"])
    from cluster_envs.sim.fork import play_out

    fifo2 = make_policy("fifo")
    fifo2.reset(a2["seed"])
    m_ff = play_out(sim2, fifo2)["avg_jct_s"]
    return rows, {"seed": seed, "bo": m_bo, "fifo": m_ff, "ratio": m_bo / m_ff}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default=None)
    parser.add_argument("--preset", default=None)
    parser.add_argument("--split", default="train")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--out", required=True)
    parser.add_argument("--bo-options", default="{}")
    args = parser.parse_args()
    if args.split == "test" or max(_seeds(args.seeds)) >= 100:
        parser.error("diagnosis is for tuning: training/validation splits and seeds < 100")
    for key, value in json.loads(args.bo_options).items():
        if not hasattr(online, key):
            parser.error(f"--bo-options: baselines.placement.online has no {key!r}")
        setattr(online, key, value)
    kwargs: dict[str, Any] = (
        {"family": args.family, "split": args.split}
        if args.family
        else {"preset": args.preset or "default"}
    )
    with open(args.out, "w") as fh:
        for seed in _seeds(args.seeds):
            rows, episode = run_seed(kwargs, seed)
            for r in rows:
                fh.write(json.dumps({"kind": "bet", **r}) + "\n")
            fh.write(json.dumps({"kind": "episode", **episode}) + "\n")
            fh.flush()
            lost = [r for r in rows if r["realised"] > 1.001]
            print(f"seed {seed}: bo/fifo {episode['ratio']:.3f}, {len(rows)} deviations, "
                  f"{len(lost)} lose (worst {max([r['realised'] for r in rows] or [np.nan]):.3f})",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
