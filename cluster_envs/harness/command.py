"""``cluster-envs benchmark``: run a grid, write results.json, summary.md and plots."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from cluster_envs.errors import ConfigError
from cluster_envs.harness.backends import BACKENDS, run_grid
from cluster_envs.harness.grid import (
    check_policy_name,
    make_cells,
    parse_seeds,
    resolve_env_id,
)
from cluster_envs.harness.report import write_outputs

RESULTS_SCHEMA_VERSION = 1


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True, help="env id(s), comma-separated")
    p.add_argument("--policies", required=True, help="policy names, comma-separated")
    p.add_argument(
        "--workload",
        default="default",
        help="env presets, comma-separated (default, toy, pollux, philly, ...)",
    )
    p.add_argument("--trace", action="append", default=[], help="a trace file (repeatable)")
    p.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 100,101,105")
    p.add_argument("--env-kwargs", default="{}", help="JSON kwargs for every env")
    p.add_argument("--baselines", default=None, help="policies counted as baselines")
    p.add_argument("--runs", action="append", default=[], help="TensorBoard run dirs to plot")
    p.add_argument("--search-traces", action="append", default=[], help="place --json outputs")
    p.add_argument("--out", required=True, help="output folder (must not hold results)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output folder")
    p.add_argument("--backend", default="local", choices=sorted(BACKENDS))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--address", default=None, help="Ray cluster address (ray backend)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-plots", action="store_true")


def _workloads(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    try:
        base = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--env-kwargs is not valid JSON: {exc}") from None
    if not isinstance(base, dict):
        raise ConfigError("--env-kwargs must be a JSON object")
    workloads = {}
    for name in [w.strip() for w in args.workload.split(",") if w.strip()]:
        workloads[name] = {**base, "preset": name}
    for trace in args.trace:
        if not Path(trace).exists():
            raise ConfigError(f"trace file {trace!r} does not exist")
        workloads[f"trace:{Path(trace).name}"] = {**base, "trace": trace, "num_jobs": None}
    if not workloads:
        raise ConfigError("no workload: give --workload and/or --trace")
    return workloads


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} already holds files; pass --force to overwrite them")
    out.mkdir(parents=True, exist_ok=True)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args``."""
    envs = [resolve_env_id(e.strip()) for e in args.env.split(",") if e.strip()]
    policies = [check_policy_name(p.strip()) for p in args.policies.split(",") if p.strip()]
    baselines = (
        [p.strip() for p in args.baselines.split(",")]
        if args.baselines
        else [p for p in policies if ":" not in p]
    )
    seeds = parse_seeds(args.seeds)
    workloads = _workloads(args)
    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    out = Path(args.out)
    _check_out(out, args.force)
    cells = make_cells(envs, workloads, policies, seeds)
    start = time.perf_counter()
    rows = run_grid(
        cells, args.backend, args.workers, progress=not args.no_progress, address=args.address
    )
    meta = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "command": ["cluster-envs", *sys.argv[1:]] if sys.argv else [],
        "envs": envs,
        "policies": policies,
        "baselines": baselines,
        "workloads": workloads,
        "seeds": seeds,
        "backend": args.backend,
        "wall_s": time.perf_counter() - start,
    }
    table = write_outputs(
        rows,
        meta,
        out,
        baselines,
        plots_enabled=not args.no_plots,
        run_dirs=[Path(r) for r in args.runs],
        search_traces=[Path(t) for t in args.search_traces],
    )
    print(table)
    errors = [r for r in rows if r["status"] != "ok"]
    for r in errors:
        print(f"error: {r['policy']} on {r['env']}/{r['workload']} seed {r['seed']}: {r['error']}")
    return 1 if errors else 0


BENCHMARK = (
    "run every policy on every env, workload and seed; write results.json, summary.md, plots",
    _add,
    run,
)
