"""Side-by-side table of moldable generalist candidates on the same split and seeds.

Each input is an ``agents.generalist evaluate`` file (same env, split and seeds; the
heuristics played in it or copied with ``--heuristics-from``). The first file is the
baseline (the shipped agent). Per family: each candidate's mean JCT over the best
heuristic's there (by mean) and over threshold-eta's; then the geometric means across
families, the worst family, and each candidate against the baseline **paired by seed**
(geometric mean of per-seed JCT ratios, with a 95% bootstrap interval that resamples the
seeds of every family; the across-family figure resamples every family at once).

    python benchmarks/compare_moldable_candidates.py --out benchmarks/results/X.md \
        shipped=runs/a/val.json dagger4=runs/b/val.json
    (``label=a.json+b.json``: the same candidate's files on other seeds, concatenated)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

SINGLE = "threshold-eta"
DRAWS = 2000


def load(spec: str) -> tuple[str, dict[str, Any]]:
    """``label=path[+path...]`` -> (label, the evaluate file's contents; several files of
    the same split on other seeds are concatenated seed-wise)."""
    label, sep, paths = spec.partition("=")
    if not sep or not label or not paths:
        raise SystemExit(f"expected label=path, got {spec!r}")
    data: dict[str, Any] = {}
    for path in paths.split("+"):
        more = json.loads(Path(path).read_text())
        if "rows" not in more:
            raise SystemExit(f"{path}: not an agents.generalist evaluate file (no 'rows')")
        if not data:
            data = more
            continue
        if sorted(more["rows"]) != sorted(data["rows"]) or more["split"] != data["split"]:
            raise SystemExit(f"{path}: other families or split than {paths.split('+')[0]}")
        data["seeds"] = list(data["seeds"]) + list(more["seeds"])
        for fam, res in more["rows"].items():
            for p, vals in res.items():
                data["rows"][fam][p] = list(data["rows"][fam][p]) + list(vals)
    return label, data


def ratios(rows: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per family: the agent's mean over the best heuristic's and over SINGLE's."""
    out = {}
    for fam, res in rows.items():
        heur = {p: float(np.mean(v)) for p, v in res.items() if p != "agent"}
        best = min(heur, key=lambda p: heur[p])
        agent = float(np.mean(res["agent"]))
        out[fam] = {"best": agent / heur[best], "single": agent / heur[SINGLE], "name": best}
    return out


def paired(base: dict[str, Any], cand: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """Per-seed log ratios candidate / baseline per family, with bootstrap intervals."""
    logs = {f: np.log(np.asarray(cand[f]["agent"]) / np.asarray(base[f]["agent"])) for f in base}
    per: dict[str, Any] = {}
    boots = []
    for f, lr in logs.items():
        b = np.array([lr[rng.integers(0, len(lr), len(lr))].mean() for _ in range(DRAWS)])
        boots.append(b)
        per[f] = (float(np.exp(lr.mean())), *np.exp(np.quantile(b, [0.025, 0.975])).tolist())
    overall = np.exp(np.mean(boots, axis=0))
    geo = float(np.exp(np.mean([lr.mean() for lr in logs.values()])))
    return {"families": per, "geo": geo, "ci": np.quantile(overall, [0.025, 0.975]).tolist()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="label=evaluate.json; the first is the baseline")
    ap.add_argument("--out", default="", help="also write the markdown here")
    ap.add_argument("--command", default="", help="the command line to print on top")
    args = ap.parse_args(argv)
    runs = [load(s) for s in args.files]
    keys = [(d["env"], d["split"], d["quick"], d["seeds"], sorted(d["rows"])) for _, d in runs]
    if any(k != keys[0] for k in keys):
        raise SystemExit("the files differ in env, split, quick, seeds or families")
    rng = np.random.default_rng(0)
    base_label, base = runs[0]
    table = {label: ratios(d["rows"]) for label, d in runs}
    fams = list(base["rows"])
    env, split, quick, seeds, _ = keys[0]
    lines = [f"Command: `{args.command}`", ""] if args.command else []
    lines += [f"{split} splits, seeds {seeds[0]}-{seeds[-1]}, "
              f"{'12 jobs per episode' if quick else 'full-length episodes'}; "
              f"cells: agent mean JCT / best heuristic's (by mean) | / {SINGLE}'s.", "",
              "| family | best | " + " | ".join(label for label, _ in runs) + " |",
              "|---|---|" + "---|" * len(runs)]  # fmt: skip
    for f in fams:
        cells = [f"{table[label][f]['best']:.3f} \\| {table[label][f]['single']:.3f}"
                 for label, _ in runs]  # fmt: skip
        lines.append(f"| {f} | {table[base_label][f]['name']} | " + " | ".join(cells) + " |")

    def geo(label: str, key: str) -> float:
        return float(np.exp(np.mean([np.log(table[label][f][key]) for f in fams])))

    def worst(label: str, key: str) -> str:
        f = max(fams, key=lambda g: table[label][g][key])
        return f"{table[label][f][key]:.3f} ({f})"

    lines.append(
        "| **geomean** | | "
        + " | ".join(f"**{geo(lb, 'best'):.3f} \\| {geo(lb, 'single'):.3f}**" for lb, _ in runs)
        + " |"
    )
    lines.append("| worst / best | | " + " | ".join(worst(lb, "best") for lb, _ in runs) + " |")
    lines.append(f"| worst / {SINGLE} | | " + " | ".join(worst(lb, "single") for lb, _ in runs)
                 + " |")  # fmt: skip
    lines += ["", f"Paired by seed against {base_label} (geometric mean of per-seed JCT ratios, "
              "[95% bootstrap over seeds]; < 1: the candidate is faster):", ""]  # fmt: skip
    lines += ["| family | " + " | ".join(lb for lb, _ in runs[1:]) + " |",
              "|---|" + "---|" * (len(runs) - 1)]  # fmt: skip
    comps = [paired(base["rows"], d["rows"], rng) for _, d in runs[1:]]
    for f in fams:
        lines.append(
            f"| {f} | "
            + " | ".join("{:.3f} [{:.3f}, {:.3f}]".format(*c["families"][f]) for c in comps)
            + " |"
        )
    lines.append(
        "| **all families** | "
        + " | ".join(f"**{c['geo']:.3f}** [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]" for c in comps)
        + " |"
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
