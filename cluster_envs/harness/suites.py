"""Named benchmark grids: each env with the workloads and policies that fit it.

Heuristics are env-specific (a moldable scheduler cannot allocate Metis slices), so a
suite pairs every env with its own policy list. ``default`` is the README's main job:
every env's baselines and shipped pretrained agent on its default workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster_envs.names import unknown_name


@dataclass(frozen=True)
class SuiteEntry:
    """One env of a suite, with its workloads (env presets) and policies."""

    env: str
    workloads: tuple[str, ...]
    policies: tuple[str, ...]


MOLDABLE_BASELINES = (
    "fifo", "sjf", "min-parallelism", "max-parallelism", "tetris", "easy-backfill",
    "random", "threshold-eta", "threshold-queue", "best-threshold",
)  # fmt: skip
METIS_BASELINES = ("fair", "optimus", "slaq", "fifo-rigid", "tiresias", "random-alloc")
PLACEMENT_BASELINES = ("fifo", "fifo-best-fit", "fifo-spread")

SUITES: dict[str, tuple[SuiteEntry, ...]] = {
    "default": (
        SuiteEntry(
            "cluster_envs/MoldableScheduling-v0",
            ("default",),
            (*MOLDABLE_BASELINES, "pretrained:MoldableScheduling-v0"),
        ),
        SuiteEntry(
            "cluster_envs/MetisAllocation-v0",
            ("default",),
            (*METIS_BASELINES, "pretrained:MetisAllocation-v0"),
        ),
        SuiteEntry(
            "cluster_envs/JobPlacement-v0",
            ("default",),
            (*PLACEMENT_BASELINES, "pretrained:JobPlacement-v0"),
        ),
    ),
    "moldable": (
        SuiteEntry(
            "cluster_envs/MoldableScheduling-v0",
            ("default", "pollux-test"),
            (*MOLDABLE_BASELINES, "best-threshold-pollux", "pretrained:MoldableScheduling-v0"),
        ),
    ),
}


def get_suite(name: str) -> tuple[SuiteEntry, ...]:
    """The suite ``name`` (or a clear error with the closest name)."""
    if name not in SUITES:
        raise unknown_name("suite", name, SUITES, listed="suites")
    return SUITES[name]
