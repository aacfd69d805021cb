"""``generalization.md`` / ``generalization.json``: the tables of the generalization suite."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster_envs.harness.generalization import PROFILE_TAUS, analyze


def _f(x: float, digits: int = 2) -> str:
    return "nan" if x != x else f"{x:.{digits}f}"


def _env_section(env: str, data: dict[str, Any]) -> list[str]:
    families = data["families"]
    policies = list(data["overall"])
    lines = [f"## {env}", ""]
    metric = families[0]["metric"] if families else "avg_jct_s"
    lines += [
        f"Ratio to the best heuristic per family in hindsight ({metric}; 1.00 = that "
        "heuristic, larger is worse), mean ± 95% Student-t half-width over seeds.",
        "",
        "| family | best heuristic (mean) | " + " | ".join(policies) + " |",
        "|---|---|" + "---|" * len(policies),
    ]
    for fam in families:
        cells = []
        for p in policies:
            r = fam["ratios"].get(p)
            note = data["incompatible"].get(f"{fam['family']}: {p}")
            cells.append(
                "incompatible" if note else (f"{_f(r['mean'])} ± {_f(r['ci95'])}" if r else "-")
            )
        lines.append(
            f"| {fam['family']} | {fam['best_heuristic']} ({fam['best_mean']:.4g}) | "
            + " | ".join(cells) + " |"
        )  # fmt: skip
    lines += [
        "",
        "Across families: geometric mean and worst family of the per-family mean ratios; "
        "IQM of all runs' ratios with a 95% stratified-bootstrap interval (seeds resampled "
        "within each family); P(better than the best single heuristic) (Mann-Whitney, "
        "averaged over families); performance profile = fraction of runs with ratio <= tau.",
        "",
        "| policy | families | geomean | worst (family) | IQM [95% CI] | P(improve) | "
        + " | ".join(f"<= {t}" for t in PROFILE_TAUS) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(PROFILE_TAUS),
    ]  # fmt: skip
    for p, o in data["overall"].items():
        low, high = o["iqm_ci95"]
        prof = " | ".join(_f(o["profile"][str(t)]) for t in PROFILE_TAUS)
        lines.append(
            f"| {p} | {o['families']} | {_f(o['geomean'])} | {_f(o['worst'])} ({o['worst_family']}) | "
            f"{_f(o['iqm'])} [{_f(low)}, {_f(high)}] | {_f(o['prob_improvement_vs_best_single'])} | {prof} |"
        )  # fmt: skip
    single = data["best_single_heuristic"]
    wins: dict[str, list[str]] = {}
    for fam in families:
        wins.setdefault(fam["best_heuristic"], []).append(fam["family"])
    lines += [
        "",
        "Which heuristic wins where: "
        + "; ".join(f"**{h}** on {', '.join(fs)}" for h, fs in wins.items()) + ".",
        f"Best single heuristic across families: **{single}**, geometric-mean ratio "
        f"{_f(data['room_geomean'], 3)} to the best-per-family one (the room a learned "
        "policy has on average; its worst family: "
        + (f"{_f(data['overall'][single]['worst'], 3)} on {data['overall'][single]['worst_family']})."
           if single else "n/a)."),
        "",
    ]  # fmt: skip
    if data["incompatible"]:
        lines += ["Agents that cannot run on a family's cluster shape:", ""]
        lines += [f"- {k}: {v}" for k, v in data["incompatible"].items()] + [""]
    return lines


def write_generalization(rows: Sequence[dict[str, Any]], meta: dict[str, Any], out: Path) -> str:
    """Write ``generalization.md`` and ``.json`` into ``out``; returns the markdown."""
    report = analyze(rows, meta.get("seeds", []))
    report["command"] = meta.get("command", [])
    report["seeds"] = meta.get("seeds", [])
    report["wall_s"] = meta.get("wall_s")
    (out / "generalization.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        "# Generalization suite: every env x every family's test split",
        "",
        f"Command: `{' '.join(meta.get('command', []))}` ({len(report['seeds'])} seeds, "
        f"{_f(meta.get('wall_s') or float('nan'), 0)} s wall).",
        "",
    ]
    for env, data in report["envs"].items():
        lines += _env_section(env, data)
    text = "\n".join(lines)
    (out / "generalization.md").write_text(text)
    return text
