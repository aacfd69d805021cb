"""Milliseconds per placement decision of the online placers on JobPlacement-v0.

Runs each placer's episodes (``--preset``, default ``default``; the given seeds) through
the event-driven runner and times every ``BOPlacement.place`` call (BO methods) or every
``fifo-rollout`` decision that places a job (method ``rollout``). Usage::

    .venv/bin/python benchmarks/bench_placement_decision_ms.py [--seeds 100-101] \
        [--methods gp-ei,rf,rollout] [--preset default]
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the envs)
from baselines.placement.online import BOScheduler
from baselines.placement.rollout import RolloutScheduler
from cluster_envs.runner import run_episode


class _Timed(BOScheduler):
    """A BOScheduler that records the wall time (ms) of each placement."""

    def __init__(self, method: str) -> None:
        super().__init__(method)
        self.times_ms: list[float] = []
        place = self.bo.place

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = place(*args, **kwargs)
            self.times_ms.append(1e3 * (time.perf_counter() - t0))
            return out

        self.bo.place = timed  # type: ignore[method-assign]


class _TimedRollout(RolloutScheduler):
    """A RolloutScheduler that records the wall time (ms) of each decision placing a job."""

    def __init__(self) -> None:
        super().__init__()
        self.times_ms: list[float] = []

    def decide(self, view):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = super().decide(view)
        if out.actions:
            self.times_ms.append(1e3 * (time.perf_counter() - t0))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-101")
    parser.add_argument("--methods", default="gp-ei,rf", help="BO methods and/or rollout")
    parser.add_argument("--preset", default="default")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    out = {}
    for method in args.methods.split(","):
        times: list[float] = []
        for seed in range(int(lo), int(hi or lo) + 1):
            env = gym.make("cluster_envs/JobPlacement-v0", preset=args.preset).unwrapped
            env.reset(seed=seed)
            policy = _TimedRollout() if method == "rollout" else _Timed(method)
            run_episode(**env.runner_args(), policy=policy)
            times += policy.times_ms
        t = np.asarray(times)
        out["fifo-rollout" if method == "rollout" else f"bo-{method}"] = {
            "decisions": len(t),
            "median_ms": float(np.median(t)),
            "p90_ms": float(np.percentile(t, 90)),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
