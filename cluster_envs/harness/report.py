"""Benchmark outputs: ``results.json``, ``summary.md`` (and the terminal table), plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster_envs.harness import plots
from cluster_envs.harness.stats import SUMMARY_METRICS, group_rows, summarize


def results_document(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: metadata plus one row per env x policy x workload x seed."""
    clean = [{k: v for k, v in r.items() if k != "details"} for r in rows]
    return {**meta, "rows": clean}


def summary_table(summary: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: mean ± 95% CI per metric, improvement over the best baseline."""
    metrics = [m for m in SUMMARY_METRICS if any(m in s["metrics"] for s in summary)]
    header = ["env", "workload", "policy", "seeds", *metrics, "vs best baseline"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in summary:
        cells = [s["env"].split("/")[-1], s["workload"], s["policy"], str(s["num_seeds"])]
        cells += [s["metrics"][m].format() if m in s["metrics"] else "" for m in metrics]
        imp = s.get("improvement_vs_best_baseline_pct")
        cells.append("" if imp is None else f"{imp:+.1f}% ({s['best_baseline']})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(
    rows: Sequence[dict[str, Any]],
    meta: dict[str, Any],
    out: Path,
    baselines: Sequence[str],
    plots_enabled: bool = True,
    run_dirs: Sequence[Path] = (),
    search_traces: Sequence[Path] = (),
) -> str:
    """Write every output into ``out``; returns the summary table."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results_document(rows, meta), indent=1) + "\n")
    summary = summarize(rows, baselines)
    table = summary_table(summary)
    text = [
        "# Benchmark summary",
        "",
        f"Command: `{' '.join(meta.get('command', []))}`",
        "",
        "Mean ± 95% confidence half-width (Student t over seeds). "
        "'vs best baseline' compares avg_jct_s (lower is better) or quality_auc (higher is "
        "better) with the best baseline's mean: positive means better.",
        "",
        table,
        "",
    ]
    ok = [r for r in rows if r.get("status") == "ok" and r.get("details")]
    if plots_enabled and ok:
        made = plots.jct_cdf(ok, out) + plots.timelines(ok, out)
        for cell in group_rows(ok, ("env", "workload")).values():
            first_policy = cell[0]["policy"]  # the grid's first policy, lowest seed
            made.append(plots.gantt(min((r for r in cell if r["policy"] == first_policy),
                                        key=lambda r: r["seed"]), out))  # fmt: skip
        curves = plots.learning_curves(run_dirs, out) if run_dirs else None
        traces = [json.loads(Path(t).read_text()) for t in search_traces]
        cost = plots.search_cost_curves(traces, out)
        made += [p for p in (curves, cost) if p is not None]
        text += ["## Plots", ""] + [f"- `{p.name}`" for p in made] + [""]
    (out / "summary.md").write_text("\n".join(text))
    return table
