"""Trace loaders and the front door :func:`load_workload` (format detection, presets).

Every loader parses the whole file (:mod:`cluster_envs.workload.formats`, into columns),
sorts the records by submit time (stable), applies the selection options (``window_s``, then
``num_jobs``, then ``time_scale``) and only then builds the jobs through one
:class:`~cluster_envs.workload.jobs.JobFactory`.

Shared keyword options (:class:`LoadOptions`): ``window_s=(start, end)`` keeps jobs
submitted in ``[start, end)`` seconds after the first submission and shifts times so the
window starts at 0; ``num_jobs`` keeps the first jobs; ``time_scale`` multiplies every
inter-arrival time (< 1 packs arrivals closer: more load); ``kind``, ``seed``,
``reference_gpu_type``, ``ref_gpus_per_node``, ``min_gpus``, ``max_gpus_cap`` as in
:class:`~cluster_envs.workload.jobs.JobOptions`. The Philly loader also takes
``cluster_filter`` (one virtual cluster).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from cluster_envs.config import check_keys, suggest, unknown_name
from cluster_envs.errors import ConfigError, TraceFormatError
from cluster_envs.types import JobKind
from cluster_envs.workload import formats, synthetic
from cluster_envs.workload.jobs import JobFactory, JobOptions, TraceRecord
from cluster_envs.workload.records import Records, make_jobs, select_records
from cluster_envs.workload.table import read_text
from cluster_envs.workload.workload import Workload

Parser = Callable[[str], Records]
FORMATS: dict[str, Parser] = {
    "canonical": formats.parse_canonical,
    "philly": formats.parse_philly,
    "pollux": formats.parse_pollux,
    "swf": formats.parse_swf,
}
#: Pollux evaluation workloads shipped with the package (``pollux-1`` .. ``pollux-8``).
NUM_POLLUX_WORKLOADS = 8
PRESETS: tuple[str, ...] = ("philly-sample", "synthetic") + tuple(
    f"pollux-{i}" for i in range(1, NUM_POLLUX_WORKLOADS + 1)
)
#: Header columns that identify each CSV format (any one suffices).
_MARKERS: dict[str, tuple[str, ...]] = {
    "canonical": ("submit_time_s", "duration_s", "job_id"),
    "philly": ("timestamp", "gpu_time", "cluster"),
    "pollux": ("application", "num_replicas"),
}


@dataclass(frozen=True)
class LoadOptions(JobOptions):
    """Selection options on top of :class:`JobOptions` (see the module docstring).

    Attributes:
        window_s: ``(start, end)`` seconds after the first submission, or ``None``.
        num_jobs: Keep only the first ``num_jobs`` jobs (after the window), or ``None``.
        time_scale: Factor on every inter-arrival time (> 0).
        cluster_filter: Philly virtual cluster to keep, or ``None`` for all.
    """

    window_s: tuple[float, float] | None = None
    num_jobs: int | None = None
    time_scale: float = 1.0
    cluster_filter: str | None = None

    def __post_init__(self) -> None:
        JobOptions.__post_init__(self)
        if self.window_s is not None:
            start, end = (float(v) for v in self.window_s)
            if not 0 <= start < end:
                raise ConfigError(
                    f"window_s must be (start, end) with 0 <= start < end, got {self.window_s}"
                )
            object.__setattr__(self, "window_s", (start, end))
        if self.num_jobs is not None and not self.num_jobs >= 1:
            raise ConfigError(f"num_jobs must be >= 1 or None, got {self.num_jobs}")
        if not (self.time_scale > 0 and np.isfinite(self.time_scale)):
            raise ConfigError(f"time_scale must be > 0, got {self.time_scale}")

    @classmethod
    def make(cls, options: dict[str, Any]) -> LoadOptions:
        """Build from keyword options, naming any unknown key with a suggestion."""
        check_keys(cls, options)
        return cls(**options)

    def job_options(self) -> JobOptions:
        """The :class:`JobOptions` part."""
        names = [f.name for f in dataclasses.fields(JobOptions)]
        return JobOptions(**{name: getattr(self, name) for name in names})


def select(records: Sequence[TraceRecord], options: LoadOptions) -> list[TraceRecord]:
    """Sort ``records`` by submit time (stable) and apply window, num_jobs and time_scale."""
    chosen = sorted(records, key=lambda r: r.submit_time_s)
    if options.window_s is not None and chosen:
        first = chosen[0].submit_time_s
        start, end = options.window_s
        chosen = [
            dataclasses.replace(r, submit_time_s=r.submit_time_s - first - start)
            for r in chosen
            if start <= r.submit_time_s - first < end
        ]
        if not chosen:
            raise ConfigError(f"window_s {options.window_s} contains no job")
    if options.num_jobs is not None:
        chosen = chosen[: options.num_jobs]
    if options.time_scale != 1.0 and chosen:
        first = chosen[0].submit_time_s
        scale = options.time_scale
        chosen = [
            dataclasses.replace(r, submit_time_s=first + (r.submit_time_s - first) * scale)
            for r in chosen
        ]
    return chosen


def _build(
    name: str,
    source: str,
    records: Sequence[TraceRecord] | Records,
    options: LoadOptions,
    seed: np.random.SeedSequence | None = None,
) -> Workload:
    factory = JobFactory(options.job_options(), seed=seed)
    if isinstance(records, Records):
        jobs = make_jobs(factory, select_records(records, options))
    else:
        jobs = factory.make_all(select(records, options))
    return Workload(name, jobs, source, options.reference_gpu_type, options.ref_gpus_per_node)


def _load(fmt: str, path: str | os.PathLike[str], options: dict[str, Any]) -> Workload:
    opts = LoadOptions.make(options)
    if opts.cluster_filter is not None and fmt != "philly":
        raise ConfigError(f"cluster_filter applies to the philly format only, not {fmt!r}")
    path = str(path)
    if fmt == "philly":
        records = formats.parse_philly(path, cluster_filter=opts.cluster_filter)
    else:
        records = FORMATS[fmt](path)
    return _build(Path(path).stem, path, records, opts)


def load_canonical(path: str | os.PathLike[str], **options: Any) -> Workload:
    """Load a canonical job CSV (``job_id,submit_time_s,num_gpus,duration_s[,model,user]``)."""
    return _load("canonical", path, options)


def load_philly(path: str | os.PathLike[str], **options: Any) -> Workload:
    """Load a Philly CSV (``timestamp,duration,num_gpus,gpu_time,cluster``)."""
    return _load("philly", path, options)


def load_pollux(path: str | os.PathLike[str], **options: Any) -> Workload:
    """Load a Pollux workload CSV (``name,time,application,num_replicas,batch_size``)."""
    return _load("pollux", path, options)


def load_swf(path: str | os.PathLike[str], **options: Any) -> Workload:
    """Load a Standard Workload Format log as HPC jobs (see ``formats.parse_swf``)."""
    return _load("swf", path, options)


#: Characters read to find a trace's first non-blank line (the whole file if none there).
_HEAD_CHARS = 1 << 16


def _head_lines(path: str) -> list[str]:
    """The first complete lines of ``path`` (all of them for a short file)."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            head = handle.read(_HEAD_CHARS)
            more = bool(handle.read(1))
    except UnicodeDecodeError:
        return read_text(path)  # raises with its message, as on the whole file
    if not more:
        return head.splitlines()
    lines = head.splitlines()[:-1]  # the last may be cut
    return lines if any(line.strip() for line in lines) else read_text(path)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the format of the trace at ``path``, from its extension or header line."""
    path = str(path)
    if path.lower().endswith(".swf"):
        return "swf"
    for number, line in enumerate(_head_lines(path), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith(";"):
            return "swf"
        header = {field.strip().strip('"') for field in line.split(",")}
        for fmt, markers in _MARKERS.items():
            if header.intersection(markers):
                return fmt
        if len(line.split()) == len(formats.SWF_FIELDS):
            return "swf"
        raise TraceFormatError(
            path,
            number,
            f"cannot detect the trace format from {line.strip()[:80]!r}; "
            f"pass format= one of {', '.join(FORMATS)}",
        )
    raise TraceFormatError(path, None, "empty file: cannot detect the trace format")


def data_path(name: str) -> str:
    """Path of a file shipped in ``cluster_envs/data``."""
    return str(resources.files("cluster_envs").joinpath("data", name))


def _preset(name: str, options: dict[str, Any]) -> Workload:
    if name == "philly-sample":
        return _build(
            name,
            name,
            formats.parse_philly(data_path("philly_sample.csv")),
            LoadOptions.make(options),
        )
    if name == "synthetic":
        opts = LoadOptions.make(options)
        records_seed, jobs_seed = np.random.SeedSequence(opts.seed).spawn(2)
        count = opts.num_jobs or synthetic.DEFAULT_NUM_JOBS
        records = synthetic.synthetic_records(num_jobs=count, seed=records_seed)
        return _build(name, name, records, opts, seed=jobs_seed)
    number = name.removeprefix("pollux-")
    path = data_path(f"pollux_workloads/workload-{number}.csv")
    return _build(name, name, formats.parse_pollux(path), LoadOptions.make(options))


def load_workload(
    path_or_preset: str | os.PathLike[str],
    format: str | None = None,  # noqa: A002 - the user-facing name
    *,
    window_s: tuple[float, float] | None = None,
    num_jobs: int | None = None,
    time_scale: float = 1.0,
    cluster_filter: str | None = None,
    kind: JobKind | str = JobKind.RIGID,
    seed: int = 0,
    reference_gpu_type: str = "T4",
    ref_gpus_per_node: int = 4,
    min_gpus: int = 1,
    max_gpus_cap: int = 16,
    batch_sizes: str = "scaled",
    adaptive_batch: bool = False,
    throughput: str = "fitted",
) -> Workload:
    """Load a trace file (format detected or given) or a named preset.

    Args:
        path_or_preset: A trace file, or one of :data:`PRESETS` (``"philly-sample"``:
            500 real Philly jobs shipped with the package; ``"synthetic"``: a Philly-like
            160-job workload at 80% load on the Pollux testbed, ``num_jobs`` jobs if
            given; ``"pollux-1"`` .. ``"pollux-8"``: Pollux's evaluation workloads).
        format: ``"canonical"``, ``"philly"``, ``"pollux"`` or ``"swf"``; ``None`` detects.
        window_s: Keep jobs submitted in ``[start, end)`` s after the first submission.
        num_jobs: Keep the first ``num_jobs`` jobs.
        time_scale: Multiply inter-arrival times by this (< 1: more load).
        cluster_filter: Philly virtual cluster to keep.
        kind: ``"rigid"``, ``"moldable"`` or ``"malleable"``.
        seed: Seed of every random choice (model assignment, HPC speedups, synthetic).
        reference_gpu_type: GPU type recorded durations refer to.
        ref_gpus_per_node: Node size of the packed reference placement.
        min_gpus: Smallest GPU count of moldable/malleable jobs.
        max_gpus_cap: Largest GPU count of moldable/malleable jobs.
        batch_sizes: Batch sizes of jobs whose record gives none: ``"scaled"`` (weak
            scaling with the recorded GPUs), ``"default"`` or ``"sampled"``.
        adaptive_batch: Pollux's artifact semantics for model records: the work is the
            model's total statistical progress and the rate is goodput at the batch the
            scheduler picks (``Allocate.batch_size``; :mod:`cluster_envs.perf.goodput`).
        throughput: True speed of zoo-model jobs: ``"fitted"`` (the zoo's all-reduce
            model) or ``"measured"`` (the Pollux testbed's measured step times,
            interpolated as Pollux's artifact does; :mod:`cluster_envs.perf.measured`).

    Raises:
        TraceFormatError: A malformed file (``file:line: reason``).
        ConfigError: Unknown preset, format or option value.
    """
    options = {
        "window_s": window_s,
        "num_jobs": num_jobs,
        "time_scale": time_scale,
        "cluster_filter": cluster_filter,
        "kind": kind,
        "seed": seed,
        "reference_gpu_type": reference_gpu_type,
        "ref_gpus_per_node": ref_gpus_per_node,
        "min_gpus": min_gpus,
        "max_gpus_cap": max_gpus_cap,
        "batch_sizes": batch_sizes,
        "adaptive_batch": adaptive_batch,
        "throughput": throughput,
    }
    target = os.fspath(path_or_preset)
    if format is not None and format not in FORMATS:
        raise unknown_name("format", format, FORMATS, listed="formats")
    if not os.path.isfile(target):
        if target in PRESETS and format is None:
            return _preset(target, options)
        raise ConfigError(
            f"{target!r} is neither a file nor a workload preset{suggest(target, PRESETS)}; "
            f"presets: {', '.join(PRESETS)}"
        )
    return _load(format or detect_format(target), target, options)
