"""The ``cluster-envs`` command.

Subcommands register themselves in :data:`COMMANDS` (name -> (help, add_arguments, run)),
so later layers (training, benchmarking, placement) plug in without an if/elif chain.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from cluster_envs.errors import ClusterEnvsError

DEFAULT_POLICIES = "fifo,fifo-skip,fifo-best-fit,fifo-spread"
TABLE_METRICS = (
    "avg_jct_s",
    "p95_jct_s",
    "avg_queue_s",
    "bounded_slowdown",
    "gpu_utilization",
    "makespan_s",
    "jct_ratio_to_lower_bound",
)


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain-text table (no dependency; stays readable in CI logs)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            if math.isnan(v):
                return "nan"
            return f"{v:,.3f}" if abs(v) < 100 else f"{v:,.0f}"
        return str(v)

    text = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(t[i].rjust(w) for i, w in enumerate(widths)) for t in text]
    return "\n".join([line, sep, *body])


def _add_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="philly-sample", help="preset name or trace file")
    p.add_argument("--format", default=None, help="trace format (default: detect)")
    p.add_argument("--cluster", default="pollux-testbed", help="cluster preset")
    p.add_argument("--policies", default=DEFAULT_POLICIES, help="comma-separated names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-jobs", type=int, default=None, help="keep the first N jobs")
    p.add_argument("--time-slice-s", type=float, default=None, help="round-based scheduling")
    p.add_argument("--json", action="store_true", help="print metrics as JSON instead")


def _run_simulate(args: argparse.Namespace) -> int:
    from cluster_envs.runner import run_episode
    from cluster_envs.workload import load_workload

    options: dict[str, Any] = {"seed": args.seed}
    if args.num_jobs is not None:
        options["num_jobs"] = args.num_jobs
    workload = load_workload(args.workload, format=args.format, **options)
    config = {"time_slice_s": args.time_slice_s}
    rows = []
    for name in [p.strip() for p in args.policies.split(",") if p.strip()]:
        start = time.perf_counter()
        result = run_episode(workload, name, args.cluster, config, seed=args.seed)
        rows.append({"policy": name, **result.metrics, "wall_s": time.perf_counter() - start})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"workload {workload.name!r}: {len(workload)} jobs on cluster {args.cluster!r}, "
        f"seed {args.seed}"
    )
    print(format_table(rows, ("policy", *TABLE_METRICS, "wall_s")))
    return 0


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

SIMULATE: Command = (
    "run heuristic policies on a workload (no gym) and print a table of metrics",
    _add_simulate,
    _run_simulate,
)

#: Subcommand name -> Command, or "module:attr" of one (imported when the parser is
#: built; keep heavy imports inside the run function).
COMMANDS: dict[str, Command | str] = {
    "simulate": SIMULATE,
    "benchmark": "cluster_envs.harness.command:BENCHMARK",
    "train": "agents.cli:TRAIN",
    "evaluate": "agents.cli:EVALUATE",
    "tune": "agents.tune:TUNE",
    "place": "baselines.placement_cli:PLACE",
}


def _command(entry: Command | str) -> Command:
    if not isinstance(entry, str):
        return entry
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="cluster-envs", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, entry in COMMANDS.items():
        help_text, add_arguments, _ = _command(entry)
        # argparse %-formats help strings: a literal '%' (as in "95% CI") must be doubled.
        add_arguments(
            sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cluster-envs`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return _command(COMMANDS[args.command])[2](args)
    except (ClusterEnvsError, FileNotFoundError) as exc:
        print(f"cluster-envs {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
