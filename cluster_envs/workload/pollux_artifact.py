"""Pollux's artifact semantics in one place: how its simulator builds jobs and runs rounds.

The Pollux artifact (petuum/adaptdl branch ``osdi21-artifact``, ``simulator/``) builds a
workload's jobs differently per policy and runs 60 s rounds on a 16 x 4 T4 testbed:

* Tiresias jobs are rigid at their requested GPUs and batch size;
* Optimus+Oracle jobs are malleable (up to 64 GPUs) at their fixed batch size, and last
  the model's full epochs at that batch;
* Pollux jobs are malleable with an adaptive batch size: their length is the model's
  statistical progress over all epochs, their rate goodput
  (:mod:`cluster_envs.perf.goodput`);
* every job's true speed is the testbed's measured step times, interpolated per placement
  (:mod:`cluster_envs.perf.measured`);
* every allocation costs 30 s, the first one included, and jobs sharing a node do not
  slow each other (the artifact's ``--interference 0.0``).

``artifact_workload(source, policy)`` and :data:`ARTIFACT_SIM_CONFIG` reproduce that for
any Pollux-format file or preset (``cluster-envs simulate --pollux-artifact``;
``benchmarks/bench_pollux_fidelity.py``). Policies other than the three get the
Optimus+Oracle jobs if they allocate (their name is listed in ``MALLEABLE_POLICIES``)
and the Tiresias jobs otherwise.
"""

from __future__ import annotations

import os
from typing import Any

from cluster_envs.workload.loaders import load_workload
from cluster_envs.workload.workload import Workload

#: The artifact's round length, allocation costs and interference.
ARTIFACT_SIM_CONFIG: dict[str, Any] = {
    "time_slice_s": 60.0,
    "rescale_cost_s": 30.0,
    "restart_cost_s": 30.0,
    "start_cost_s": 30.0,
    "link_contention": False,
}
#: Largest GPU count of the artifact's malleable jobs (the whole testbed).
ARTIFACT_MAX_GPUS = 64
#: Policies whose jobs are adaptive-batch (goodput) jobs.
ADAPTIVE_POLICIES = ("pollux",)
#: Policies whose jobs are malleable at a fixed batch size (the allocators).
MALLEABLE_POLICIES = ("optimus-oracle", "optimus", "fair", "slaq", "random-alloc")


def artifact_load_options(policy: str, throughput: str = "measured") -> dict[str, Any]:
    """The :func:`~cluster_envs.workload.load_workload` options of ``policy``'s jobs."""
    if policy in ADAPTIVE_POLICIES:
        return {
            "kind": "malleable",
            "max_gpus_cap": ARTIFACT_MAX_GPUS,
            "adaptive_batch": True,
            "throughput": throughput,
        }
    if policy in MALLEABLE_POLICIES:
        return {"kind": "malleable", "max_gpus_cap": ARTIFACT_MAX_GPUS, "throughput": throughput}
    return {"kind": "rigid", "throughput": throughput}


def artifact_workload(
    source: str | os.PathLike[str], policy: str, throughput: str = "measured", **options: Any
) -> Workload:
    """``source`` (a Pollux-format file or a ``pollux-N`` preset) with ``policy``'s jobs.

    Args:
        source: Workload file or preset.
        policy: The policy that will schedule it (picks the job semantics).
        throughput: ``"measured"`` (the artifact's truth) or ``"fitted"``.
        options: More :func:`~cluster_envs.workload.load_workload` options
            (``num_jobs``, ``time_scale``, ...).
    """
    return load_workload(source, **{**artifact_load_options(policy, throughput), **options})


__all__ = [
    "ADAPTIVE_POLICIES",
    "ARTIFACT_MAX_GPUS",
    "ARTIFACT_SIM_CONFIG",
    "MALLEABLE_POLICIES",
    "artifact_load_options",
    "artifact_workload",
]
