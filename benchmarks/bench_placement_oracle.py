"""How much can placement alone gain over consolidated first-fit? The oracle rollout bound.

Plays every workload of issue 17's table (``default``, ``large`` and every placement
family's split) with FIFO + consolidated first-fit and with the oracle rollout placer
(:mod:`baselines.placement.oracle`): at each decision, each candidate placement of the
head job is played to the end of the episode in a fork, every later decision by first-fit,
and the lowest realised average JCT wins. ``--information`` says what the forks know:
``true`` (the full oracle: true lengths and future arrivals; its JCT is reachable by some
placement sequence, so a placer's target below it is possible in principle), ``lengths``
(true lengths, no future arrivals), ``believed`` (the scheduler's estimates only, no
arrivals: what an online placer may consult). Each mode is a column; ratios are mean
average JCT over first-fit's on the same episodes, then the geometric mean and the worst
workload. Writes ``benchmarks/results/<out>.md/json``. Usage::

    .venv/bin/python benchmarks/bench_placement_oracle.py --split validation --seeds 500-504 \\
        [--information true,lengths,believed] [--candidates greedy] [--workers 2]

Nothing here is tuned: it measures what any placer could reach, so it may run on any
split; the repository's tables say which.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
RESULTS = ROOT / "benchmarks" / "results"
ENV = "cluster_envs/JobPlacement-v0"

from bench_placement_online import _seeds, _workloads  # noqa: E402  (the same workloads)


def make_sim(kwargs: dict[str, Any], seed: int) -> tuple[Any, int]:
    """The simulator of the JobPlacement-v0 episode ``kwargs``/``seed`` and its sim seed."""
    import gymnasium as gym

    import cluster_envs  # noqa: F401  (registers the envs)
    from cluster_envs.sim.engine import Simulator

    env: Any = gym.make(ENV, **kwargs).unwrapped
    env.reset(seed=seed)
    a = env.runner_args()
    return Simulator(a["jobs"].jobs, a["cluster"], a["config"], a["seed"]), int(a["seed"])


def _run(task: tuple[str, dict[str, Any], str, str, int, int]) -> dict[str, Any]:
    from baselines.placement.oracle import play_oracle
    from cluster_envs.policies import make_policy
    from cluster_envs.sim.fork import play_out

    workload, kwargs, mode, candidates, max_candidates, seed = task
    sim, sim_seed = make_sim(kwargs, seed)
    start = time.perf_counter()
    row: dict[str, Any] = {"workload": workload, "mode": mode, "seed": seed}
    if mode == "first-fit":
        fifo = make_policy("fifo")
        fifo.reset(sim_seed)
        row["avg_jct_s"] = play_out(sim, fifo)["avg_jct_s"]
    else:
        r = play_oracle(sim, candidates=candidates, max_candidates=max_candidates,
                        seed=sim_seed, information=mode)  # fmt: skip
        row.update(avg_jct_s=r.metrics["avg_jct_s"], decisions=r.decisions,
                   deviations=r.deviations, rollouts=r.rollouts)  # fmt: skip
    row["wall_s"] = time.perf_counter() - start
    return row


def summarise(rows: list[dict[str, Any]], modes: list[str]) -> dict[str, Any]:
    """Per workload each mode's mean JCT over first-fit's (same seeds); geomean and worst."""
    table: dict[str, dict[str, float]] = {}
    for w in sorted({r["workload"] for r in rows}):
        mine = [r for r in rows if r["workload"] == w]
        ff = {r["seed"]: r["avg_jct_s"] for r in mine if r["mode"] == "first-fit"}
        table[w] = {"first-fit_s": sum(ff.values()) / len(ff)}
        for m in modes:
            got = {r["seed"]: r["avg_jct_s"] for r in mine if r["mode"] == m}
            seeds = sorted(set(got) & set(ff))
            table[w][m] = sum(got[s] for s in seeds) / sum(ff[s] for s in seeds)
            table[w][f"{m}_deviations"] = sum(
                r.get("deviations", 0) for r in mine if r["mode"] == m
            ) / max(1, sum(r.get("decisions", 0) for r in mine if r["mode"] == m))
    across = {}
    for m in modes:
        ratios = [table[w][m] for w in table]
        worst = max(table, key=lambda w: table[w][m])
        across[m] = {
            "geomean": math.exp(sum(math.log(x) for x in ratios) / len(ratios)),
            "worst": table[worst][m],
            "worst_workload": worst,
            "best": min(ratios),
        }
    return {"table": table, "across": across}


def markdown(summary: dict[str, Any], modes: list[str], command: str, wall: float,
             seeds: list[int], candidates: str, max_candidates: int) -> str:  # fmt: skip
    lines = [
        "# Oracle rollout placer on JobPlacement-v0: what placement alone can gain",
        "",
        f"Command ({wall / 60:.1f} min wall):",
        "",
        f"    {command}",
        "",
        f"Seeds {seeds[0]}-{seeds[-1]}; candidates `{candidates}` (at most {max_candidates} "
        "distinct placements per decision); forks played out by FIFO + consolidated "
        "first-fit. Ratio: mean average JCT over first-fit's on the same episodes (lower is "
        "better); in brackets the share of decisions where the oracle left first-fit.",
        "",
        "| workload | first-fit (avg JCT s) | " + " | ".join(modes) + " |",
        "|---|---|" + "---|" * len(modes),
    ]
    for w, row in summary["table"].items():
        cells = " | ".join(f"{row[m]:.3f} ({row[f'{m}_deviations']:.0%})" for m in modes)
        lines.append(f"| {w} | {row['first-fit_s']:,.0f} | {cells} |")
    lines += ["", "| information | geomean | worst (workload) | best |", "|---|---|---|---|"]
    for m in modes:
        a = summary["across"][m]
        lines.append(f"| {m} | {a['geomean']:.3f} | {a['worst']:.3f} ({a['worst_workload']}) | "
                     f"{a['best']:.3f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    from baselines.placement.oracle import CANDIDATE_SETS, INFORMATION, MAX_CANDIDATES
    from cluster_envs.workload.families import family_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="500-504")
    parser.add_argument("--split", default="validation")
    parser.add_argument(
        "--workloads", default=",".join(["default", "large", *family_names("placement")])
    )
    parser.add_argument("--information", default=",".join(INFORMATION))
    parser.add_argument("--candidates", default="greedy", choices=CANDIDATE_SETS)
    parser.add_argument("--max-candidates", type=int, default=MAX_CANDIDATES)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "placement_oracle"))
    args = parser.parse_args()
    modes = args.information.split(",")
    unknown = [m for m in modes if m not in INFORMATION]
    if unknown:
        parser.error(f"--information: unknown {unknown}; choose from {', '.join(INFORMATION)}")
    seeds = _seeds(args.seeds)
    workloads = _workloads(args.workloads.split(","), args.split)
    tasks = [
        (w, kw, m, args.candidates, args.max_candidates, s)
        for w, kw in workloads.items()
        for m in ["first-fit", *modes]
        for s in seeds
    ]
    tasks.sort(
        key=lambda t: (t[0] not in ("large", f"synthetic-256/{args.split}"), t[2] == "first-fit")
    )
    start = time.perf_counter()
    rows = []
    with get_context("fork").Pool(args.workers) as pool:
        for i, row in enumerate(pool.imap_unordered(_run, tasks)):
            rows.append(row)
            print(f"[{i + 1}/{len(tasks)}] {row['workload']} {row['mode']} {row['seed']}: "
                  f"{row['avg_jct_s']:.0f} s ({row['wall_s']:.1f} s wall)", flush=True)  # fmt: skip
    wall = time.perf_counter() - start
    summary = summarise(rows, modes)
    command = ".venv/bin/python benchmarks/bench_placement_oracle.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {"command": command, "wall_s": wall, "seeds": seeds, "rows": rows, **summary}, indent=1
    ))  # fmt: skip
    text = markdown(summary, modes, command, wall, seeds, args.candidates, args.max_candidates)
    out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
