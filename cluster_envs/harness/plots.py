"""Benchmark plots (matplotlib, Agg backend): CDFs, timelines, Gantt, learning curves.

Each function writes one PNG and returns its path. Inputs are the rows of the grid
(with their ``details``), so plots never re-run anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cluster_envs.harness.stats import group_rows  # noqa: E402

DPI = 110


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def jct_cdf(rows: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """One JCT CDF per (env, workload), a curve per policy (all seeds pooled)."""
    paths = []
    for (env, workload), cell in group_rows(rows, ("env", "workload")).items():
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for (policy,), prow in group_rows(cell, ("policy",)).items():
            jcts = np.sort(
                np.concatenate([r["details"]["jct_s"] for r in prow if r.get("details")])
            )
            if len(jcts):
                ax.step(jcts, np.arange(1, len(jcts) + 1) / len(jcts), where="post", label=policy)
        ax.set_xscale("log")
        ax.set_xlabel("job completion time (s)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(f"JCT CDF: {env.split('/')[-1]} / {workload}")
        ax.legend(fontsize=7)
        paths.append(_save(fig, out / f"jct_cdf_{_safe(env.split('/')[-1])}_{_safe(workload)}.png"))
    return paths


def timelines(rows: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """Queue length and GPU utilisation over time for the first seed of each policy."""
    paths = []
    for (env, workload), cell in group_rows(rows, ("env", "workload")).items():
        fig, (ax_q, ax_u) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        for (policy,), prow in group_rows(cell, ("policy",)).items():
            first = min(prow, key=lambda r: r["seed"])
            tl = first.get("details", {}).get("timeline")
            if not tl or not tl["time_s"]:
                continue
            t = np.asarray(tl["time_s"]) / 3600.0
            ax_q.step(t, tl["num_queued"], where="post", label=policy)
            util = np.asarray(tl["busy_gpus"]) / first["details"]["num_gpus"]
            ax_u.step(t, util, where="post", label=policy)
        ax_q.set_ylabel("queued jobs")
        ax_u.set_ylabel("GPU utilisation")
        ax_u.set_xlabel("time (h)")
        ax_q.set_title(f"{env.split('/')[-1]} / {workload} (first seed)")
        ax_q.legend(fontsize=7)
        paths.append(
            _save(fig, out / f"timeline_{_safe(env.split('/')[-1])}_{_safe(workload)}.png")
        )
    return paths


def gantt(row: dict[str, Any], out: Path) -> Path:
    """GPU occupancy of one episode: one lane per GPU, a bar per job holding it."""
    details = row["details"]
    node_gpus = details["node_gpus"]
    offsets = np.concatenate([[0], np.cumsum(node_gpus)[:-1]])
    used = [0] * len(node_gpus)
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.08 * sum(node_gpus) + 1.5)))
    cmap = plt.get_cmap("tab20")
    # Lanes are assigned greedily per node in time order, like a real GPU allocator.
    lane_free_at: dict[tuple[int, int], float] = {}
    for job, t0, t1, placement in sorted(details["segments"], key=lambda s: (s[1], s[0])):
        for node, gpus in placement:
            lanes = [g for g in range(node_gpus[node]) if lane_free_at.get((node, g), -1.0) <= t0]
            for g in lanes[:gpus]:
                lane_free_at[(node, g)] = t1
                y = offsets[node] + g
                ax.broken_barh([(t0 / 3600, (t1 - t0) / 3600)], (y, 0.9), color=cmap(job % 20))
            used[node] = max(used[node], gpus)
    for off in offsets[1:]:
        ax.axhline(off - 0.05, color="grey", lw=0.3)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPU (grouped by node)")
    ax.set_title(f"GPU occupancy: {row['policy']} seed {row['seed']}")
    name = f"gantt_{_safe(row['env'].split('/')[-1])}_{_safe(row['workload'])}_{_safe(row['policy'])}.png"
    return _save(fig, out / name)


def learning_curves(
    run_dirs: Sequence[Path], out: Path, tag: str = "cluster/avg_jct_s"
) -> Path | None:
    """``tag`` against training steps for every TensorBoard run found under ``run_dirs``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = 0
    for run in run_dirs:
        for events in sorted(Path(run).rglob("events.out.tfevents.*")):
            acc = EventAccumulator(str(events.parent), size_guidance={"scalars": 0})
            acc.Reload()
            if tag not in acc.Tags().get("scalars", []):
                continue
            scalars = acc.Scalars(tag)
            ax.plot([s.step for s in scalars], [s.value for s in scalars], label=str(events.parent))
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("training steps")
    ax.set_ylabel(tag)
    ax.legend(fontsize=6)
    return _save(fig, out / f"learning_curves_{_safe(tag)}.png")


def search_cost_curves(traces: Sequence[dict[str, Any]], out: Path) -> Path | None:
    """Best-so-far cost against evaluations of search traces (``place --out`` JSON)."""
    if not traces:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for trace in traces:
        best = [step["best_so_far_s"] for step in trace.get("trace", [])]
        ax.plot(
            range(1, len(best) + 1),
            best,
            label=f"{trace.get('method', '?')} seed {trace.get('seed', '?')}",
        )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best total JCT found (s)")
    ax.legend(fontsize=7)
    return _save(fig, out / "search_cost_curves.png")
