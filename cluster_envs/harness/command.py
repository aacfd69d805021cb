"""``cluster-envs benchmark``: run a grid, write results.json, summary.md and plots."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster_envs.cli_util import check_out_folder, comma_list, comma_lists
from cluster_envs.errors import ConfigError
from cluster_envs.seeds import parse_seeds

if TYPE_CHECKING:
    from cluster_envs.harness.grid import Cell

#: Backends of ``--backend`` (the functions live in ``harness.backends``, imported on use).
BACKEND_NAMES = ("local", "ray")

RESULTS_SCHEMA_VERSION = 1


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=None, help="a named grid instead of --env/--policies")
    p.add_argument("--env", default=None, help="env id(s), comma-separated")
    p.add_argument("--policies", default=None, help="policy names, comma-separated")
    p.add_argument(
        "--workload",
        default="default",
        help="env presets or FAMILY/SPLIT workload families (e.g. synthetic-256/test), "
        "comma-separated (default, toy, pollux, philly, ...)",
    )
    p.add_argument(
        "--trace", action="append", default=[], help="trace file(s): repeat or comma-separate"
    )
    p.add_argument(
        "--seeds", default=None,
        help="e.g. 100-109 or 100,101,105 (default 100-104; generalization suite 100-109)",
    )  # fmt: skip
    p.add_argument("--quick", action="store_true", help="generalization suite: 12 jobs/episode")
    p.add_argument("--no-agents", action="store_true", help="--suite: heuristics only")
    p.add_argument("--env-kwargs", default="{}", help="JSON kwargs for every env")
    p.add_argument(
        "--baselines", dest="reference_policies", default=None,
        help="policies counted as baselines, comma-separated (default: every heuristic)",
    )  # fmt: skip
    p.add_argument(
        "--runs", action="append", default=[],
        help="TensorBoard run dirs to plot: repeat or comma-separate (a,b)",
    )  # fmt: skip
    p.add_argument(
        "--search-traces", action="append", default=[],
        help="place --out trace JSON files: repeat or comma-separate",
    )  # fmt: skip
    p.add_argument(
        "--out", default=None, help="output folder (default: results/<suite>-<UTC time>)"
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing output folder")
    p.add_argument("--backend", default="local", choices=BACKEND_NAMES)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--address", default=None, help="Ray cluster address (ray backend)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-plots", action="store_true")


def _base_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``--env-kwargs``, parsed and checked."""
    try:
        base = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--env-kwargs is not valid JSON: {exc}") from None
    if not isinstance(base, dict):
        raise ConfigError("--env-kwargs must be a JSON object")
    return base


def _workload_kwargs(name: str) -> dict[str, Any]:
    """``preset=name``, or for ``FAMILY/SPLIT`` (``synthetic-256/test``) the family's split."""
    if "/" not in name:
        return {"preset": name}
    from cluster_envs.workload.families import check_split, get_family

    family, _, split = name.partition("/")
    return {"family": get_family(family).name, "split": check_split(split)}


def _workloads(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Workload name -> env kwargs, from ``--workload`` presets and ``--trace`` files."""
    base = _base_kwargs(args)
    workloads = {}
    for name in comma_list(args.workload, "--workload"):
        workloads[name] = {**base, **_workload_kwargs(name)}
    for trace in comma_lists(args.trace, "--trace"):
        if not Path(trace).exists():
            raise ConfigError(f"trace file {trace!r} does not exist")
        workloads[f"trace:{Path(trace).name}"] = {**base, "trace": trace, "num_jobs": None}
    if not workloads:
        raise ConfigError("no workload: give --workload and/or --trace")
    return workloads


def _check_out(out: Path, force: bool) -> None:
    check_out_folder(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} already holds files; pass --force to overwrite them")
    out.mkdir(parents=True, exist_ok=True)


def _check_envs(cells: list[Cell]) -> None:
    """Build each (env, workload) once, so bad presets or kwargs fail before any output."""
    import gymnasium as gym

    seen: set[tuple[str, str]] = set()
    for cell in cells:
        if (cell.env_id, cell.workload) not in seen:
            seen.add((cell.env_id, cell.workload))
            try:
                gym.make(cell.env_id, **cell.env_kwargs).close()
            except TypeError as exc:
                raise ConfigError(f"{cell.env_id} / {cell.workload}: {exc}") from None


def _cells(args: argparse.Namespace, seeds: list[int]) -> tuple[list[Cell], dict[str, Any]]:
    """The grid of ``--suite`` or of ``--env`` x ``--workload``/``--trace`` x ``--policies``.

    Names are checked (with suggestions) before the simulator is imported, so a typo
    answers at once.
    """
    described = _grid(args)
    from cluster_envs.harness.grid import make_cells

    cells: list[Cell] = []
    for env_id, entry in described.items():
        cells += make_cells([env_id], entry["workloads"], entry["policies"], seeds)
    return cells, described


def _grid(args: argparse.Namespace) -> dict[str, Any]:
    """Env id -> its workloads (name -> env kwargs) and policies, every name checked."""
    from cluster_envs.envs.registration import resolve_env_id
    from cluster_envs.harness.suites import get_suite
    from cluster_envs.policies.trained import check_actor_name, is_agent_spec

    if args.suite is not None:
        if args.env or args.policies:
            raise ConfigError("give either --suite or --env/--policies, not both")
        base = _base_kwargs(args)
        described: dict[str, Any] = {}
        for entry in get_suite(args.suite):
            env_id = resolve_env_id(entry.env)
            policies = [check_actor_name(p) for p in entry.policies]
            if args.no_agents:
                policies = [p for p in policies if not is_agent_spec(p)]
            workloads = entry.env_kwargs(base, quick=args.quick)
            described[env_id] = {"workloads": workloads, "policies": policies}
        return described
    if not args.env or not args.policies:
        raise ConfigError("give --suite NAME, or --env and --policies")
    envs = [resolve_env_id(e) for e in comma_list(args.env, "--env")]
    policies = [check_actor_name(p) for p in comma_list(args.policies, "--policies")]
    workloads = _workloads(args)
    return {env: {"workloads": workloads, "policies": policies} for env in envs}


def run(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args``."""
    from cluster_envs.harness.generalization import DEFAULT_SEEDS

    default_seeds = DEFAULT_SEEDS if args.suite == "generalization" else "100-104"
    seeds = parse_seeds(args.seeds or default_seeds)
    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    if args.out:
        check_out_folder(args.out)
    cells, described = _cells(args, seeds)
    import cluster_envs  # noqa: F401  (registers the env ids)
    from cluster_envs.harness.backends import run_grid
    from cluster_envs.harness.generalization import split_incompatible
    from cluster_envs.harness.generalization_report import write_generalization
    from cluster_envs.harness.report import write_outputs
    from cluster_envs.policies.trained import is_agent_spec

    _check_envs(cells)
    policies = list(dict.fromkeys(c.policy for c in cells))
    envs = list(dict.fromkeys(c.env_id for c in cells))
    counted = args.reference_policies and comma_list(args.reference_policies, "--baselines")
    reference = counted or [p for p in policies if not is_agent_spec(p)]
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = Path(args.out) if args.out else Path("results") / f"{args.suite or 'benchmark'}-{stamp}"
    _check_out(out, args.force)
    start = time.perf_counter()
    cells, incompatible = (
        split_incompatible(cells) if args.suite == "generalization" else (cells, [])
    )
    rows = run_grid(
        cells, args.backend, args.workers, progress=not args.no_progress, address=args.address
    )
    rows += incompatible
    meta = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "command": ["cluster-envs", *sys.argv[1:]] if sys.argv else [],
        "suite": args.suite,
        "envs": envs,
        "grid": described,
        "policies": policies,
        "baselines": reference,
        "seeds": seeds,
        "quick": args.quick,
        "backend": args.backend,
        "wall_s": time.perf_counter() - start,
    }
    table = write_outputs(
        rows,
        meta,
        out,
        reference,
        plots_enabled=not args.no_plots,
        run_dirs=[Path(r) for r in comma_lists(args.runs, "--runs")],
        search_traces=[Path(t) for t in comma_lists(args.search_traces, "--search-traces")],
    )
    print(table)
    if args.suite == "generalization":
        print(write_generalization(rows, meta, out))
    print(f"\nresults, summary and plots: {out}/")
    errors = [r for r in rows if r["status"] not in ("ok", "incompatible")]
    for r in errors:
        print(f"error: {r['policy']} on {r['env']}/{r['workload']} seed {r['seed']}: {r['error']}")
    return 1 if errors else 0


BENCHMARK = (
    "run every policy on every env, workload and seed; write results.json, summary.md, plots",
    _add,
    run,
)
