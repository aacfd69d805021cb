"""Online BO placers vs the consolidated heuristics on JobPlacement-v0, every workload.

Workloads: the ``default`` and ``large`` presets (held-out seeds) and the *test* split of
every placement family of the generalization suite (``family=<name>, split=test``).
Every policy plays the same episodes (same env kwargs and seed) through the benchmark
grid's cells; a workload's reference is the best consolidated heuristic on it (the lower
mean average JCT of ``fifo`` = consolidated first-fit and ``fifo-best-fit``), and the
ratio of a policy is its mean average JCT over that reference's. Across workloads:
geometric mean and worst ratio. Writes ``benchmarks/results/placement_online.md/json``.
Usage::

    .venv/bin/python benchmarks/bench_placement_online.py [--seeds 100-104] [--workers 2]
        [--workloads default,large,synthetic-16,...] [--policies fifo,fifo-best-fit,bo-gp-ei]

Training-split mode (``--split train``, seeds 0-...) is for tuning: never tune on test.
``bo-gp-ei`` runs the code default (anchor consolidated first-fit, 5 % margin, the
demand-weighted fragmentation guard with weight 1, the spread guard on clusters of at most
8 nodes; ``{"FRAGMENTATION_WEIGHT": 0}`` / ``{"MAX_EXTRA_NODES": null}`` turn the guards
off, ``{"RESCORE_DRAWS": 8}`` turns on the robustness re-scoring, ``{"JOINT_WINDOW": 4}`` the
joint queue-window placement); ``--rollout-options '{"IMPROVEMENT_MARGIN": 0.01}'``
sets the rollout placer's (``fifo-rollout``) constants the same way; the setting before
issue 17 is
``--bo-options '{"ANCHOR": "best-greedy", "IMPROVEMENT_MARGIN": 0.02, "FRAGMENTATION_WEIGHT": 0,
"MAX_EXTRA_NODES": null}'``.
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

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
ENV = "cluster_envs/JobPlacement-v0"
HEURISTICS = ("fifo", "fifo-best-fit")


def _workloads(names: list[str], split: str) -> dict[str, dict[str, Any]]:
    from cluster_envs.workload.families import family_names

    families = set(family_names("placement"))
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if name in families:
            out[f"{name}/{split}"] = {"family": name, "split": split}
        else:
            out[name] = {"preset": name}
    return out


def _set_options(bo: dict[str, Any], rollout: dict[str, Any] | None = None) -> None:
    """Pool initializer: override module constants of baselines.placement.online (``bo``)
    and baselines.placement.rollout (``rollout``)."""
    from baselines.placement import online
    from baselines.placement import rollout as rollout_module

    for flag, module, options in (
        ("--bo-options", online, bo),
        ("--rollout-options", rollout_module, rollout or {}),
    ):
        for key, value in options.items():
            if not hasattr(module, key):
                raise SystemExit(f"{flag}: {module.__name__} has no {key!r}")
            setattr(module, key, value)


def _run(task: tuple[str, dict[str, Any], str, int]) -> dict[str, Any]:
    from cluster_envs.harness.grid import Cell, run_cell

    workload, kwargs, policy, seed = task
    row = run_cell(Cell(ENV, workload, kwargs, policy, seed), keep_details=False)
    return {
        "workload": workload,
        "policy": policy,
        "seed": seed,
        "status": row["status"],
        "error": row.get("error"),
        "avg_jct_s": row["metrics"].get("avg_jct_s", math.nan),
        "wall_s": row.get("wall_s", math.nan),
    }


def summarise(rows: list[dict[str, Any]], policies: list[str]) -> dict[str, Any]:
    """Per workload: mean avg JCT per policy, the reference and ratios; overall geomean."""
    table: dict[str, Any] = {}
    for workload in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == workload]
        means = {
            p: float(np.mean([r["avg_jct_s"] for r in mine if r["policy"] == p])) for p in policies
        }
        walls = {
            p: float(np.mean([r["wall_s"] for r in mine if r["policy"] == p])) for p in policies
        }
        ref_name = min((p for p in policies if p in HEURISTICS), key=lambda p: means[p])
        table[workload] = {
            "reference": ref_name,
            "mean_avg_jct_s": means,
            "mean_episode_wall_s": walls,
            "ratio": {p: means[p] / means[ref_name] for p in policies},
        }
    overall = {}
    for p in policies:
        ratios = [t["ratio"][p] for t in table.values()]
        worst = max(table, key=lambda w: table[w]["ratio"][p])
        overall[p] = {
            "geomean": float(np.exp(np.mean(np.log(ratios)))),
            "worst": float(table[worst]["ratio"][p]),
            "worst_workload": worst,
        }
    return {"workloads": table, "overall": overall}


def markdown(summary: dict[str, Any], policies: list[str], command: str, wall: float,
             seeds: list[int], split: str = "test") -> str:  # fmt: skip
    lines = [
        "# Online BO placers on JobPlacement-v0",
        "",
        f"Command ({wall / 60:.1f} min wall on the shared 2-core machine):",
        "",
        f"    {command}",
        "",
        f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per workload); families on their {split} "
        "split. Ratio: mean average JCT over the best consolidated heuristic's on that "
        "workload (fifo = consolidated first-fit, fifo-best-fit); lower is better.",
        "",
        "| workload | reference (avg JCT s) | " + " | ".join(policies) + " |",
        "|---|---|" + "---|" * len(policies),
    ]
    for w, t in summary["workloads"].items():
        ref = t["reference"]
        cells = [f"{t['ratio'][p]:.3f}" for p in policies]
        lines.append(
            f"| {w} | {ref} ({t['mean_avg_jct_s'][ref]:,.0f}) | " + " | ".join(cells) + " |"
        )
    lines += ["", "| policy | geomean | worst (workload) |", "|---|---|---|"]
    for p, o in summary["overall"].items():
        lines.append(f"| {p} | {o['geomean']:.3f} | {o['worst']:.3f} ({o['worst_workload']}) |")
    lines += [
        "",
        "Mean wall seconds per episode: "
        + "; ".join(
            f"{w}: " + ", ".join(f"{p} {t['mean_episode_wall_s'][p]:.1f}" for p in policies)
            for w, t in summary["workloads"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


def rows_from_log(paths: list[str]) -> list[dict[str, Any]]:
    """Episodes (possibly unfinished) runs printed: their progress lines, JCT to 1 s."""
    import re

    pattern = re.compile(r"^\[\d+/\d+\] (\S+) (\S+) (\d+): ([\d.]+) s \(([\d.]+) s wall\)")
    rows, seen = [], set()
    lines = [line for path in paths for line in Path(path).read_text().splitlines()]
    for line in lines:
        m = pattern.match(line)
        if m and m.groups()[:3] not in seen:  # an episode run twice counts once
            seen.add(m.groups()[:3])
            w, p, seed, jct, wall = m.groups()
            rows.append({"workload": w, "policy": p, "seed": int(seed), "status": "ok",
                         "error": None, "avg_jct_s": float(jct), "wall_s": float(wall)})  # fmt: skip
    return rows


def _complete(rows: list[dict[str, Any]], policies: list[str]) -> list[dict[str, Any]]:
    """Only the (workload, seed) episodes every policy finished."""
    done: dict[tuple[str, int], set[str]] = {}
    for r in rows:
        done.setdefault((r["workload"], r["seed"]), set()).add(r["policy"])
    return [r for r in rows if done[(r["workload"], r["seed"])] >= set(policies)]


def _out(stem: str, suffix: str) -> Path:
    """``stem`` + ``suffix`` (not Path.with_suffix: a stem like ``train_m0.01`` keeps its
    dot)."""
    return Path(stem + suffix)


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> int:
    from cluster_envs.workload.families import family_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-104")
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--workloads", default=",".join(["default", "large", *family_names("placement")])
    )
    parser.add_argument("--policies", default="fifo,fifo-best-fit,bo-gp-ei")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "placement_online"))
    parser.add_argument(
        "--from-log",
        default=None,
        help="summarise the progress lines of earlier (maybe unfinished) runs instead "
        "(comma-separated logs)",
    )
    parser.add_argument(
        "--bo-options",
        default="{}",
        help='JSON overrides of online.py constants, e.g. {"IMPROVEMENT_MARGIN": 0.1}',
    )
    parser.add_argument(
        "--rollout-options",
        default="{}",
        help='JSON overrides of rollout.py constants (fifo-rollout), e.g. {"IMPROVEMENT_MARGIN": 0.01}',
    )
    args = parser.parse_args()
    policies = args.policies.split(",")
    if not set(HEURISTICS) & set(policies):
        parser.error(f"--policies needs one of {', '.join(HEURISTICS)} as the reference")
    seeds = _seeds(args.seeds)
    workloads = _workloads(args.workloads.split(","), args.split)
    tasks = [(w, kw, p, s) for w, kw in workloads.items() for p in policies for s in seeds]
    slow = ("bo", "fifo-rollout")
    tasks.sort(key=lambda t: (not t[2].startswith(slow), t[0] != "large"))  # slow ones first
    start = time.perf_counter()
    rows = []
    if args.from_log:
        logs = args.from_log.split(",")
        rows = _complete(rows_from_log(logs), policies)
        if not rows:
            parser.error(f"{args.from_log}: no episode that every policy finished")
        summary = summarise(rows, policies)
        seeds = sorted({r["seed"] for r in rows})
        command = ".venv/bin/python benchmarks/bench_placement_online.py " + " ".join(
            a for a in sys.argv[1:]
        )
        text = markdown(summary, policies, command, 0.0, seeds, args.split)
        _out(args.out, ".md").write_text(text)
        _out(args.out, ".json").write_text(
            json.dumps({"command": command, "rows": rows, **summary}, indent=1)
        )
        print(text)
        return 0
    options = (json.loads(args.bo_options), json.loads(args.rollout_options))
    _set_options(*options)  # fail here, not in a worker
    with get_context("fork").Pool(args.workers, _set_options, options) as pool:
        for i, row in enumerate(pool.imap_unordered(_run, tasks)):
            rows.append(row)
            print(f"[{i + 1}/{len(tasks)}] {row['workload']} {row['policy']} {row['seed']}: "
                  f"{row['avg_jct_s']:.0f} s ({row['wall_s']:.1f} s wall) {row['error'] or ''}",
                  flush=True)  # fmt: skip
    wall = time.perf_counter() - start
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        print(f"{len(bad)} episodes failed, first: {bad[0]}", file=sys.stderr)
        return 1
    summary = summarise(rows, policies)
    command = ".venv/bin/python benchmarks/bench_placement_online.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _out(args.out, ".json").write_text(
        json.dumps(
            {"command": command, "wall_s": wall, "seeds": seeds, "rows": rows, **summary}, indent=1
        )  # fmt: skip
    )
    _out(args.out, ".md").write_text(markdown(summary, policies, command, wall, seeds, args.split))
    print(_out(args.out, ".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
