"""What if MetisAllocation were work-conserving? The shipped agent with idle GPUs filled.

Issue 13 asks for no family where the agent leaves GPUs idle while jobs wait. This plays
``python -m agents.generalist evaluate --env metis`` with one change to the env, and only to
the env: after the projection of the agent's request, the GPUs left free go to the eligible
jobs holding none, oldest first, each at its minimum count if it fits (``min``); with
``share``, what is still left is then spread over those jobs up to their maximum by the
projection's own water-filling. The idle probe sees the same filled allocation. The
heuristics are not changed (their rows come from ``--heuristics-from``).

    python benchmarks/diag_metis_fill_idle.py min evaluate --env metis \\
        --model agents/pretrained/MetisAllocation-v0.zip --split validation --seeds 500 507 \\
        --baselines slaq,optimus,tiresias,fair,slaq-window \\
        --heuristics-from benchmarks/results/generalist_metis_val_heuristics.json \\
        --out benchmarks/results/generalist_metis_val_fill_min.json

Results: benchmarks/results/generalist_metis.md ("A work-conserving fill").
"""

from __future__ import annotations

import sys
from typing import Any

import agents.generalist as generalist
from cluster_envs.envs.metis import MetisAllocationEnv
from cluster_envs.policies import projection
from cluster_envs.policies.projection import AllocationState, project_counts

MODES = ("min", "share")
_project = AllocationState.project
_filling = [False]
_mode = ["min"]


def fill(state: AllocationState, counts: dict[int, int]) -> dict[int, int]:
    """``counts`` with the free GPUs handed to eligible jobs at 0 (see the module)."""
    left = state.capacity - sum(counts.values())
    if left <= 0:
        return counts
    low, high = state._bounds
    out = dict(counts)
    took = []
    for k, j in enumerate(state.ids):
        if out[j] == 0 and low[k] <= left:
            out[j] = low[k]
            left -= low[k]
            took.append(k)
    if _mode[0] == "share" and left > 0 and took:
        wants = [high[k] for k in took]
        mins = [low[k] for k in took]
        spread = project_counts(wants, mins, wants, left + sum(mins))
        for k, c in zip(took, spread, strict=True):
            if c >= low[k]:
                out[state.ids[k]] = c
    return out


def _filled_project(self: AllocationState, requests: Any) -> dict[int, int]:
    counts = _project(self, requests)
    return fill(self, counts) if _filling[0] else counts


def _filled_commit(self: MetisAllocationEnv, requests: dict[int, int]) -> Any:
    _filling[0] = True  # only the env's own projection fills, not the hints' heuristics
    try:
        return _commit(self, requests)
    finally:
        _filling[0] = False


def _probe_allocation(state: AllocationState, requests: dict[int, int]) -> dict[int, int]:
    return fill(state, _project(state, requests))


_commit = MetisAllocationEnv._commit


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in MODES:
        raise SystemExit(f"usage: diag_metis_fill_idle.py {{{','.join(MODES)}}} evaluate ...")
    _mode[0] = argv[0]
    projection.AllocationState.project = _filled_project  # type: ignore[method-assign]
    MetisAllocationEnv._commit = _filled_commit  # type: ignore[method-assign]
    generalist.IdleProbe.allocation = staticmethod(_probe_allocation)  # type: ignore[method-assign,assignment]
    generalist.main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
