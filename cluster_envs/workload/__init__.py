"""Workloads: trace loaders, the synthetic generator and the :class:`Workload` type.

Quick start::

    from cluster_envs.workload import load_workload
    wl = load_workload("philly-sample")          # or a path, format detected
    wl = load_workload("trace.swf", kind="moldable", num_jobs=500, time_scale=0.5)
"""

from cluster_envs.workload.jobs import (
    HPC_MODEL,
    JobFactory,
    JobOptions,
    TraceRecord,
    reference_runtime_s,
)
from cluster_envs.workload.loaders import (
    FORMATS,
    PRESETS,
    LoadOptions,
    detect_format,
    load_canonical,
    load_philly,
    load_pollux,
    load_swf,
    load_workload,
)
from cluster_envs.workload.synthetic import PHILLY_GPU_DEMAND, synthetic_workload
from cluster_envs.workload.workload import Workload

__all__ = [
    "FORMATS",
    "HPC_MODEL",
    "PHILLY_GPU_DEMAND",
    "PRESETS",
    "JobFactory",
    "JobOptions",
    "LoadOptions",
    "TraceRecord",
    "Workload",
    "detect_format",
    "load_canonical",
    "load_philly",
    "load_pollux",
    "load_swf",
    "load_workload",
    "reference_runtime_s",
    "synthetic_workload",
]
