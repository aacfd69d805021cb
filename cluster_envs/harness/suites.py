"""Named benchmark grids: each env with the workloads and policies that fit it.

Heuristics are env-specific (a moldable scheduler cannot allocate Metis slices), so a
suite pairs every env with its own policy list. ``default`` is the README's main job:
every env's baselines and shipped pretrained agent on its default workload.
``generalization`` runs them on every workload family's test split
(:mod:`cluster_envs.workload.families`, :mod:`cluster_envs.harness.generalization`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster_envs.names import unknown_name
from cluster_envs.workload.families import family_names


@dataclass(frozen=True)
class SuiteEntry:
    """One env of a suite, with its workloads (env presets or family splits) and policies.

    Attributes:
        env: Env id.
        workloads: Env presets (``families`` empty) or family names.
        policies: Policy names.
        split: With family workloads: the split evaluated.
    """

    env: str
    workloads: tuple[str, ...]
    policies: tuple[str, ...]
    split: str | None = None

    def env_kwargs(self, base: dict[str, Any], quick: bool = False) -> dict[str, dict[str, Any]]:
        """Workload label -> env kwargs (``quick``: the generalization suite's small runs)."""
        if self.split is None:
            return {w: {**base, "preset": w} for w in self.workloads}
        from cluster_envs.harness.generalization import QUICK_NUM_JOBS

        extra = {"num_jobs": QUICK_NUM_JOBS} if quick else {}
        return {
            f"{w}/{self.split}": {**base, "family": w, "split": self.split, **extra}
            for w in self.workloads
        }


MOLDABLE_BASELINES = (
    "fifo", "sjf", "min-parallelism", "max-parallelism", "tetris", "easy-backfill",
    "random", "threshold-eta", "threshold-queue", "best-threshold",
)  # fmt: skip
METIS_BASELINES = (
    "fair", "optimus", "slaq", "slaq-window", "fifo-rigid", "tiresias", "random-alloc",
)  # fmt: skip
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
    # Every env x every family's test split (issue 12): see harness/generalization.py.
    "generalization": tuple(
        SuiteEntry(env, tuple(family_names(short)), policies, split="test")
        for env, short, policies in (
            (
                "cluster_envs/MoldableScheduling-v0",
                "moldable",
                (*MOLDABLE_BASELINES, "pretrained:MoldableScheduling-v0"),
            ),
            (
                "cluster_envs/MetisAllocation-v0",
                "metis",
                (*METIS_BASELINES, "pretrained:MetisAllocation-v0"),
            ),
            (
                "cluster_envs/JobPlacement-v0",
                "placement",
                (*PLACEMENT_BASELINES, "pretrained:JobPlacement-v0"),
            ),
        )
    ),  # fmt: skip
}


def get_suite(name: str) -> tuple[SuiteEntry, ...]:
    """The suite ``name`` (or a clear error with the closest name)."""
    if name not in SUITES:
        raise unknown_name("suite", name, SUITES, listed="suites")
    return SUITES[name]
