"""The ``cluster-envs`` command.

Subcommands are ``(help, add_arguments, run)`` triples: the core's own (:data:`COMMANDS`)
plus those other packages declare in the ``cluster_envs.commands`` entry-point group
(training, tuning, placement), so the core never names them. Registration modules import
only argparse-level code; heavy libraries (torch, SB3, scipy, matplotlib, skopt, ray) are
imported inside the ``run`` function that needs them, so ``--help`` and argument errors
answer at once. Every user error is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from cluster_envs.cli_util import comma_list
from cluster_envs.errors import ClusterEnvsError
from cluster_envs.policies import plugins

#: Exit status of a user error (as argparse uses for its own).
USAGE_ERROR = 2
#: Exit status after Ctrl-C (128 + SIGINT).
INTERRUPTED = 130

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


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _add_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="philly-sample", help="preset name or trace file")
    p.add_argument("--format", default=None, help="trace format (None: detect)")
    p.add_argument("--cluster", default="pollux-testbed", help="cluster preset")
    p.add_argument("--policies", default=DEFAULT_POLICIES, help="comma-separated names")
    p.add_argument("--seed", type=non_negative_int, default=0, help="episode seed")
    p.add_argument("--num-jobs", type=positive_int, default=None, help="keep the first N jobs")
    p.add_argument("--time-slice-s", type=float, default=None, help="round-based scheduling")
    p.add_argument("--json", action="store_true", help="print metrics as JSON instead")
    p.add_argument(
        "--pollux-artifact",
        action="store_true",
        help="Pollux artifact semantics: per-policy jobs (rigid / malleable / adaptive "
        "batch), measured step times, 60 s rounds, 30 s per allocation",
    )


def _run_simulate(args: argparse.Namespace) -> int:
    from cluster_envs.policies.registry import check_policy_name

    names = [check_policy_name(p) for p in comma_list(args.policies, "--policies")]
    from cluster_envs.runner import run_episode
    from cluster_envs.workload import load_workload

    options: dict[str, Any] = {"seed": args.seed}
    if args.num_jobs is not None:
        options["num_jobs"] = args.num_jobs
    workload = load_workload(args.workload, format=args.format, **options)
    config: dict[str, Any] = {"time_slice_s": args.time_slice_s}
    if args.pollux_artifact:
        from cluster_envs.workload.pollux_artifact import ARTIFACT_SIM_CONFIG

        config = {**ARTIFACT_SIM_CONFIG}
        if args.time_slice_s is not None:
            config["time_slice_s"] = args.time_slice_s
    rows = []
    for name in names:
        start = time.perf_counter()
        if args.pollux_artifact:
            from cluster_envs.workload.pollux_artifact import artifact_load_options

            opts = {**options, **artifact_load_options(name)}
            workload = load_workload(args.workload, format=args.format, **opts)
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

#: The core's own subcommands; other packages add theirs through entry points.
COMMANDS: dict[str, Command] = {"simulate": SIMULATE}


def commands() -> dict[str, Command]:
    """Every subcommand: the core's, the harness's and the installed plug-ins'."""
    from cluster_envs.harness.command import BENCHMARK

    found: dict[str, Command] = {**COMMANDS, "benchmark": BENCHMARK}
    for name in sorted(plugins.entry_points(plugins.COMMAND_GROUP)):
        found.setdefault(name, plugins.load(plugins.COMMAND_GROUP, name))
    return found


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``prog: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand (defaults shown in --help)."""
    parser = _Parser(prog="cluster-envs", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _) in commands().items():
        # argparse %-formats help strings: a literal '%' (as in "95% CI") must be doubled.
        add_arguments(
            sub.add_parser(
                name,
                help=help_text.replace("%", "%%"),
                description=help_text,
                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
            )
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cluster-envs`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run = commands()[args.command][2]
    try:
        return run(args)
    except (ClusterEnvsError, OSError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"cluster-envs {args.command}: error: {text}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"cluster-envs {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


__all__ = ["COMMANDS", "Command", "build_parser", "commands", "format_table", "main"]


if __name__ == "__main__":
    sys.exit(main())
