"""Confidence interval and episode changes of an online placement table (issue 17).

Reads a ``bench_placement_online.py`` JSON and prints, per policy, the geometric mean over
workloads of its ratio to the best consolidated heuristic (as the table does) with a
bootstrap 95 % interval (seeds resampled within each workload, the same draw for every
policy). With ``--before`` (an earlier JSON of the same workloads and seeds) it also
counts, per workload, the episodes of ``--policy`` whose average JCT changed, got better
or worse, and the range of their new-over-old ratios. Usage::

    .venv/bin/python benchmarks/compare_placement_online.py benchmarks/results/placement_online.json \\
        [--before OLD.json] [--policy bo-gp-ei] [--against fifo] [--draws 2000]

(``git show REV:benchmarks/results/placement_online.json > OLD.json`` gives an earlier one.)
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from typing import Any

import numpy as np

HEURISTICS = ("fifo", "fifo-best-fit")


def _rows(path: str) -> list[dict[str, Any]]:
    with open(path) as fh:
        return list(json.load(fh)["rows"])


def _jcts(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[int, float]]]:
    """workload -> policy -> seed -> average JCT."""
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        out[r["workload"]][r["policy"]][int(r["seed"])] = float(r["avg_jct_s"])
    return out


def geomean(
    jcts: dict[str, dict[str, dict[int, float]]],
    policy: str,
    draw: dict[str, list[int]],
    against: str | None = None,
) -> float:
    """The table's geometric mean of ``policy`` on the seeds ``draw`` picks per workload
    (against the best consolidated heuristic, or the policy ``against``)."""
    logs = []
    for w, by_policy in jcts.items():
        seeds = draw[w]
        refs = HEURISTICS if against is None else (against,)
        ref = min(np.mean([by_policy[h][s] for s in seeds]) for h in refs if h in by_policy)
        logs.append(math.log(np.mean([by_policy[policy][s] for s in seeds]) / ref))
    return math.exp(float(np.mean(logs)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", help="a bench_placement_online.py JSON")
    parser.add_argument("--before", default=None, help="an earlier JSON of the same episodes")
    parser.add_argument("--policy", default="bo-gp-ei")
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--against",
        default=None,
        help="another policy of the table: the geometric mean over workloads of --policy's "
        "mean JCT over its, with the same bootstrap (paired: the same seeds for both)",
    )
    args = parser.parse_args()
    jcts = _jcts(_rows(args.table))
    seeds = {w: sorted(next(iter(p.values())).keys()) for w, p in jcts.items()}
    policies = sorted({p for by in jcts.values() for p in by})
    for flag, name in (("--policy", args.policy), ("--against", args.against)):
        if name is not None and name not in policies:
            parser.error(f"{flag} {name!r} is not in the table ({', '.join(policies)})")
    rng = np.random.default_rng(args.seed)
    draws = [
        {w: list(rng.choice(s, size=len(s))) for w, s in seeds.items()} for _ in range(args.draws)
    ]
    for p in policies:
        point = geomean(jcts, p, seeds)
        boot = [geomean(jcts, p, d) for d in draws]
        lo, hi = np.percentile(boot, [2.5, 97.5])
        print(f"{p}: geomean {point:.3f}, bootstrap 95% [{lo:.3f}, {hi:.3f}] ({args.draws} draws)")
    if args.against:
        pair = [geomean(jcts, args.policy, seeds, args.against)]
        boot = [geomean(jcts, args.policy, d, args.against) for d in draws]
        lo, hi = np.percentile(boot, [2.5, 97.5])
        wins = sum(
            np.mean([by[args.policy][s] for s in seeds[w]])
            < np.mean([by[args.against][s] for s in seeds[w]])
            for w, by in jcts.items()
        )
        print(f"{args.policy} / {args.against}: geomean {pair[0]:.3f}, bootstrap 95% "
              f"[{lo:.3f}, {hi:.3f}]; lower mean JCT on {wins} of {len(jcts)} workloads")  # fmt: skip
    if args.before:
        old = _jcts(_rows(args.before))
        total = [0, 0, 0]
        for w in jcts:
            new_p, old_p = jcts[w][args.policy], old[w][args.policy]
            ratios = [new_p[s] / old_p[s] for s in sorted(set(new_p) & set(old_p))]
            moved = [r for r in ratios if abs(r - 1.0) > 1e-9]
            better = sum(r < 1.0 for r in moved)
            total = [total[0] + len(moved), total[1] + better, total[2] + len(moved) - better]
            print(f"{w}: {len(moved)} of {len(ratios)} changed, {better} better, "
                  f"{len(moved) - better} worse (new/old {min(ratios):.3f}-{max(ratios):.3f})")  # fmt: skip
        print(f"all: {total[0]} changed, {total[1]} better, {total[2]} worse")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
