"""Projection fidelity: does the online BO placer's projected cost rank placements right?

At sampled placement decisions of ``JobPlacement-v0`` episodes (``default`` preset,
held-out seeds), the simulator is forked and every candidate placement of the head job
(the greedy ones plus distinct points of the BO search space) is played to the end of
the episode with :func:`cluster_envs.sim.fork.play_candidate`, every later decision made
by the same policy (FIFO + consolidated first-fit, ``fifo``). Per decision we report the
Spearman and Kendall rank correlations between the placer's projected cost
(:meth:`baselines.placement.online.BOPlacement.projected_cost`, which only sees
estimated lengths) and the realised average JCT; then their mean and median, and how
often the projection's favourite is the realised best (or within 1 % of it).

Usage::

    .venv/bin/python benchmarks/bench_projection_fidelity.py [--seeds 100-109]
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.stats import kendalltau, spearmanr

import cluster_envs  # noqa: F401  (registers the envs)
from baselines.placement.encoding import PlacementEncoding
from baselines.placement.online import WARM_START, BOPlacement
from cluster_envs.policies import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import play_candidate, settle
from cluster_envs.types import Allocate, Decision

RESULTS = Path(__file__).parent / "results"
ENV_ID = "cluster_envs/JobPlacement-v0"
#: Decisions (indices among an episode's placement decisions) probed per seed.
DECISIONS = tuple(range(2, 34, 4))
#: Most candidate placements per decision (greedy ones included).
MAX_CANDIDATES = 8
#: A favourite within this fraction of the realised best counts as "near best".
NEAR_BEST = 0.01
ROLLOUT_POLICY = "fifo"


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def _candidates(view, job, free: np.ndarray, rng: np.random.Generator) -> list[tuple]:
    """The greedy placements, then distinct random points of the search space."""
    out: list[tuple] = []
    for g in WARM_START:
        p = g.place(view, job, job.num_gpus, free)
        if p is not None and p not in out:
            out.append(p)
    load = np.zeros(len(free), dtype=np.int64)
    for status in view.running:
        for node, _ in status.placement:
            load[node] += 1
    enc = PlacementEncoding([job.num_gpus], free, view.node_speed, load)
    points = [enc.decode(x)[0] for x in enc.grid()] if enc.num_dims else []
    for i in rng.permutation(len(points)):
        if len(out) >= MAX_CANDIDATES:
            break
        if points[i] not in out:
            out.append(points[i])
    return out


def probe_seed(seed: int, placer: BOPlacement) -> list[dict[str, Any]]:
    """Fidelity rows of the probed decisions of one episode."""
    env = gym.make(ENV_ID, preset="default").unwrapped
    env.reset(seed=seed)
    args = env.runner_args()
    sim = Simulator(args["jobs"].jobs, args["cluster"], args["config"], args["seed"])
    policy = make_policy(ROLLOUT_POLICY)
    policy.reset(args["seed"])
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    index = 0
    while not sim.done and index <= max(DECISIONS):
        sim.step()
        if not sim.queue:
            continue
        view = sim.view()
        head = view.job(view.queued_ids[0])
        if head.num_gpus <= view.num_free_gpus:
            if index in DECISIONS:
                free = view.free_gpus.copy()
                cands = _candidates(view, head, free, rng)
                placer.reset(seed)
                t0 = time.perf_counter()
                projected = [placer.projected_cost(view, head, free, p) for p in cands]
                ms = 1e3 * (time.perf_counter() - t0) / len(cands)
                realised = [
                    play_candidate(sim, policy, Decision((Allocate(head.job_id, p),)))["avg_jct_s"]
                    for p in cands
                ]
                rows.append(_row(seed, index, head.num_gpus, cands, projected, realised, ms))
            index += 1
        settle(sim, policy)
    return rows


def _row(seed, index, gpus, cands, projected, realised, ms) -> dict[str, Any]:
    proj, real = np.asarray(projected), np.asarray(realised)
    flat = np.ptp(real) == 0 or np.ptp(proj) == 0
    rho = float("nan") if flat else float(spearmanr(proj, real).statistic)
    tau = float("nan") if flat else float(kendalltau(proj, real).statistic)
    pick = real[int(np.argmin(proj))]
    return {
        "seed": seed,
        "decision": index,
        "job_gpus": gpus,
        "candidates": len(cands),
        "spearman": rho,
        "kendall": tau,
        "pick_is_best": bool(pick == real.min()),
        "pick_near_best": bool(pick <= (1 + NEAR_BEST) * real.min()),
        "pick_regret": float(pick / real.min() - 1),
        "first_fit_regret": float(real[0] / real.min() - 1),
        "realised_spread": float(real.max() / real.min() - 1),
        "projection_ms": ms,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean/median correlations over decisions with a non-constant ranking."""
    ok = [r for r in rows if not np.isnan(r["spearman"])]
    out: dict[str, Any] = {"decisions": len(rows), "ranked_decisions": len(ok)}
    for key in ("spearman", "kendall"):
        vals = np.array([r[key] for r in ok])
        out[f"{key}_mean"] = float(vals.mean()) if len(vals) else float("nan")
        out[f"{key}_median"] = float(np.median(vals)) if len(vals) else float("nan")
    out["pick_is_best"] = float(np.mean([r["pick_is_best"] for r in rows]))
    out["pick_near_best"] = float(np.mean([r["pick_near_best"] for r in rows]))
    out["pick_regret_mean"] = float(np.mean([r["pick_regret"] for r in rows]))
    out["first_fit_regret_mean"] = float(np.mean([r["first_fit_regret"] for r in rows]))
    out["projection_ms_median"] = float(np.median([r["projection_ms"] for r in rows]))
    return out


def write(rows, summary, command: str, seconds: float, label: str) -> None:
    """``projection_fidelity.md`` and ``.json`` under benchmarks/results."""
    RESULTS.mkdir(exist_ok=True)
    data = {"label": label, "command": command, "seconds": seconds, "summary": summary}
    data["rows"] = rows
    data["python"] = platform.python_version()
    (RESULTS / "projection_fidelity.json").write_text(json.dumps(data, indent=1))
    s = summary
    lines = [
        "# Projection fidelity of the online BO placer (JobPlacement-v0, `default`)",
        "",
        f"Command ({seconds:.0f} s on a shared 2-core machine):",
        "",
        f"    {command}",
        "",
        f"Projection: {label}. Every candidate is played to the end of the episode on a fork",
        f"(`play_candidate`), later decisions by `{ROLLOUT_POLICY}`; up to {MAX_CANDIDATES} "
        "candidates per decision (greedy ones first; the first is FIFO's own consolidated first-fit). Regret: realised "
        "avg JCT over the best candidate's, minus 1.",
        "",
        "| decisions (ranked) | Spearman mean / median | Kendall mean / median | "
        "favourite is best | within 1 % | mean regret of favourite | of first-fit | ms per projection |",
        "|---|---|---|---|---|---|---|---|",
        f"| {s['decisions']} ({s['ranked_decisions']}) | {s['spearman_mean']:.2f} / "
        f"{s['spearman_median']:.2f} | {s['kendall_mean']:.2f} / {s['kendall_median']:.2f} | "
        f"{100 * s['pick_is_best']:.0f} % | {100 * s['pick_near_best']:.0f} % | "
        f"{100 * s['pick_regret_mean']:.1f} % | {100 * s['first_fit_regret_mean']:.1f} % | "
        f"{s['projection_ms_median']:.1f} |",
        "",
        "Per decision:",
        "",
        "| seed | decision | job GPUs | candidates | Spearman | Kendall | favourite regret "
        "| realised spread |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['decision']} | {r['job_gpus']} | {r['candidates']} | "
            f"{r['spearman']:.2f} | {r['kendall']:.2f} | {100 * r['pick_regret']:.1f} % | "
            f"{100 * r['realised_spread']:.1f} % |"
        )
    (RESULTS / "projection_fidelity.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-109", help="held-out episode seeds, e.g. 100-109")
    parser.add_argument("--label", default="current", help="what the projection is")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    placer = BOPlacement("gp-ei")
    rows = [r for seed in _seeds(args.seeds) for r in probe_seed(seed, placer)]
    summary = summarise(rows)
    command = "python benchmarks/bench_projection_fidelity.py " + shlex.join(sys.argv[1:])
    write(rows, summary, command.strip(), time.perf_counter() - t0, args.label)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
