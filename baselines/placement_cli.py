"""``cluster-envs place``: search a batch placement with one method and report it.

Example::

    cluster-envs place --method gp-ei --calls 30 --instance small --seed 0 --out runs/place

prints the best placement and its total JCT (estimated and true lengths) and writes the
search trace (JSON) and the search-cost curve (PNG) into ``--out`` (existing files are
kept unless ``--force``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from cluster_envs.cli_util import check_out_folder, heartbeat
from cluster_envs.errors import ConfigError

if TYPE_CHECKING:
    from baselines.placement.problem import PlacementInstance

HELP = "search a batch job placement (Bayesian optimisation, random, exhaustive, greedy)"
SECONDS_PER_HOUR = 3600.0


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--method",
        default="gp-ei",
        help="gp-ei, gp-pi, gp-lcb, gp-hedge, rf, et, random, exhaustive, "
        "greedy-consolidate, greedy-spread, greedy-tetris, greedy-optimus",
    )
    p.add_argument("--calls", type=int, default=30, help="evaluation budget of a search")
    p.add_argument(
        "--instance", default="small", help="preset (small, medium, large) or an instance JSON file"
    )
    p.add_argument("--seed", type=int, default=0, help="seeds the preset and the search")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--out", default=None, help="folder for the trace JSON and the PNG plot")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")


def resolve_instance(value: str, seed: int) -> PlacementInstance:
    """A preset name or a JSON file path -> PlacementInstance."""
    from baselines.placement.instance_json import load_instance
    from baselines.placement.presets import PRESETS, make_instance

    if value in PRESETS:
        return make_instance(value, seed)
    if value.endswith(".json") or Path(value).exists() or "/" in value:
        return load_instance(value)
    return make_instance(value, seed)  # raises with the closest preset name


def _run(args: argparse.Namespace) -> int:
    from baselines.placement.methods import check_method, run_method
    from baselines.placement.report import write_search_outputs

    if args.out is not None:
        check_out_folder(args.out)
    if args.calls < 1:
        raise ConfigError(f"--calls must be >= 1, got {args.calls}")
    check_method(args.method)
    instance = resolve_instance(args.instance, args.seed)
    with heartbeat(f"place: {args.method}, {args.calls} evaluations on {instance.name!r}"):
        result = run_method(args.method, instance, args.calls, args.seed)
    paths = []
    if args.out is not None:
        paths = write_search_outputs(
            args.out,
            instance,
            result,
            force=args.force,
            extra={"command": {"calls": args.calls, "instance": args.instance}},
        )
    if args.json:
        record = result.to_dict()
        record.pop("trace")
        record["instance"] = instance.name
        record["outputs"] = [str(p) for p in paths]
        print(json.dumps(record, indent=2))
        return 0
    print(
        f"instance {instance.name!r}: {len(instance.batch)} jobs, "
        f"{len(instance.existing)} existing, cluster {instance.cluster.name!r}"
    )
    print(
        f"method {result.method}, seed {result.seed}: {len(result.costs_s)} evaluations "
        f"in {result.wall_s:.2f} s"
    )
    for job, placement in zip(instance.batch, result.configuration, strict=True):
        nodes = ", ".join(f"node {n} x{g}" for n, g in placement)
        print(f"  {job.name:<16} {job.num_gpus} GPU(s): {nodes}")
    print(
        f"total JCT: {result.cost_estimated_s / SECONDS_PER_HOUR:.3f} h with estimated "
        f"lengths, {result.cost_true_s / SECONDS_PER_HOUR:.3f} h with true lengths"
    )
    for path in paths:
        print(f"wrote {path}")
    return 0


PLACE = (HELP, _add_arguments, _run)
