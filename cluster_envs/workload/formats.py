"""Parsers of the supported trace formats into columnar :class:`Records`.

Each parser reads the whole file, validates every column with vectorised checks
(``TraceFormatError`` with ``file:line: reason`` on the first bad value) and only then
creates records. Records come back in file order; the loader sorts them. CSV formats go
through the chunked columnar reader (:mod:`cluster_envs.workload.columnar`) first; any
file or check it declines is parsed again line by line, and that reader's error is the
one raised.

Formats:

* ``canonical``: ``job_id,submit_time_s,num_gpus,duration_s`` (+ optional ``model``,
  ``user``); ``job_id`` becomes the job name, an empty ``model`` is drawn from GPU time.
* ``philly``: ``timestamp,duration,num_gpus[,gpu_time,cluster]`` (Pollux's flattening of
  the Philly trace); submit times are seconds after the first submission that passes
  ``cluster_filter``; job names are ``<cluster>:<line>``.
* ``pollux``: ``name,time,application,num_replicas,batch_size``; work = the model's full
  run at that batch size (Pollux's semantics).
* ``swf``: Standard Workload Format (18 whitespace-separated fields, ``;`` comments,
  ``-1`` unknown); see :func:`parse_swf`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pandas as pd

from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError, TraceFormatError
from cluster_envs.perf import zoo
from cluster_envs.workload.columnar import arrow_on_malloc, read_csv_columns
from cluster_envs.workload.jobs import HPC_MODEL
from cluster_envs.workload.records import Records
from cluster_envs.workload.table import Retry, Table, read_csv_table, read_whitespace_table

CANONICAL_COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s")
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus")
POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
SWF_FIELDS = (
    "job", "submit", "wait", "run_time", "procs", "cpu_time", "memory", "req_procs",
    "req_time", "req_memory", "status", "user", "group", "executable", "queue",
    "partition", "preceding_job", "think_time",
)  # fmt: skip
#: SWF status of a job cancelled by its user (skipped: its runtime is not its work).
SWF_CANCELLED = 5
#: Timestamp format of the Philly CSV.
PHILLY_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: Largest job duration accepted, s (about 3.2 years; the longest Philly job ran ~60 days).
MAX_DURATION_S = 1e8
#: Largest submit time accepted, s after the trace's start (about 32 years).
MAX_SUBMIT_TIME_S = 1e9
#: Largest GPU (or processor) count of one job.
MAX_GPUS_PER_JOB = 100_000
#: Largest global batch size accepted (the zoo profiles up to tens of thousands).
MAX_BATCH_SIZE = 1_000_000


def _gpu_counts(table: Table, column: str) -> np.ndarray:
    counts = table.numbers(column, integer=True)
    table.check(counts >= 1, column, ">= 1", problem="no GPUs")
    table.check(
        counts <= MAX_GPUS_PER_JOB,
        column,
        f"<= {MAX_GPUS_PER_JOB:,} (MAX_GPUS_PER_JOB)",
        problem="too many GPUs",
    )
    return counts


def _durations(table: Table, column: str) -> np.ndarray:
    durations = table.numbers(column)
    table.check(durations >= 0, column, "> 0 s", problem="negative duration")
    table.check(durations > 0, column, "> 0 s", problem="zero duration")
    table.check(
        durations <= MAX_DURATION_S,
        column,
        f"<= {MAX_DURATION_S:.0e} s (MAX_DURATION_S)",
        problem="duration too long",
    )
    return durations


def _submit_times(table: Table, column: str) -> np.ndarray:
    times = table.numbers(column)
    table.check(times >= 0, column, ">= 0 s", problem="negative submit time")
    _check_submit_limit(table, column, times)
    return times


def _check_submit_limit(table: Table, column: str, times: np.ndarray) -> None:
    table.check(
        times <= MAX_SUBMIT_TIME_S,
        column,
        f"<= {MAX_SUBMIT_TIME_S:.0e} s (MAX_SUBMIT_TIME_S)",
        problem="submit time too late",
    )


def _check_models(table: Table, column: str, allowed: tuple[str, ...]) -> None:
    names = table.text(column)
    bad = ~np.isin(names, np.asarray(allowed + ("",), dtype=object))
    if bad.any():
        row = int(np.argmax(bad))
        name = str(names[row])
        raise table.fail(
            row,
            f"column {column!r} has unknown model {name!r}{suggest(name, allowed)}; "
            f"models: {', '.join(allowed)}",
        )


def _optional(values: np.ndarray) -> np.ndarray:
    """Text column with ``None`` where a field is empty."""
    out = values.copy()
    out[values == ""] = None
    return out


def _columnar(
    path: str | os.PathLike[str], numeric: tuple[str, ...], body: Callable[[Table], Records]
) -> Records:
    """``body`` of the fast columnar table, or of the line-by-line one if that declines."""
    with arrow_on_malloc():
        table = read_csv_columns(path, numeric)
        if table is not None:
            try:
                return body(table)
            except Retry:
                pass  # the line-by-line reader reports the problem, file:line and all
        return body(read_csv_table(path))


def parse_canonical(path: str | os.PathLike[str]) -> Records:
    """Records of a canonical job CSV (see the module docstring)."""
    return _columnar(path, ("submit_time_s", "num_gpus", "duration_s"), _canonical)


def _canonical(table: Table) -> Records:
    table.require(CANONICAL_COLUMNS)
    submit = _submit_times(table, "submit_time_s")
    gpus = _gpu_counts(table, "num_gpus")
    durations = _durations(table, "duration_s")
    models = table.text("model") if "model" in table.columns else None
    if models is not None:
        _check_models(table, "model", zoo.ZOO_MODELS + (HPC_MODEL,))
    users = table.text("user") if "user" in table.columns else None
    names = table.check_ids("job_id")
    return Records(
        names,
        submit,
        gpus,
        durations,
        None if models is None else _optional(models),
        user=None if users is None else _optional(users),
    )


def parse_philly(path: str | os.PathLike[str], cluster_filter: str | None = None) -> Records:
    """Records of a Philly CSV, optionally of one virtual cluster only.

    Raises:
        TraceFormatError: Bad file.
        ConfigError: ``cluster_filter`` names no cluster of the file.
    """
    numeric = ("duration", "num_gpus", "gpu_time")
    return _columnar(path, numeric, lambda table: _philly(table, cluster_filter))


def _philly(table: Table, cluster_filter: str | None) -> Records:
    table.require(PHILLY_COLUMNS)
    if cluster_filter is not None:
        table.require(("cluster",), why=" (needed by cluster_filter)")
    raw_times = table.text("timestamp")
    stamps = pd.to_datetime(pd.Series(raw_times), format=PHILLY_TIME_FORMAT, errors="coerce")
    bad = stamps.isna().to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise table.fail(
            row, f"column 'timestamp' has {raw_times[row]!r}, expected 'YYYY-MM-DD HH:MM:SS'"
        )
    durations = _durations(table, "duration")
    gpus = _gpu_counts(table, "num_gpus")
    if "gpu_time" in table.columns:
        table.numbers("gpu_time")
    clusters = table.text("cluster") if "cluster" in table.columns else None
    keep = np.ones(len(table), dtype=bool)
    if cluster_filter is not None and clusters is not None:
        keep = clusters == cluster_filter
        if not keep.any():
            known = sorted(set(clusters.tolist()))
            raise ConfigError(
                f"cluster_filter {cluster_filter!r} matches no job of {table.path}"
                f"{suggest(cluster_filter, known)}; clusters: {', '.join(known)}"
            )
    rows = np.flatnonzero(keep)
    seconds = stamps.to_numpy(dtype="datetime64[ns]")[rows].astype(np.int64) / 1e9
    seconds -= seconds.min()
    prefix = clusters[rows].tolist() if clusters is not None else ["philly"] * len(rows)
    names = [f"{p}:{line}" for p, line in zip(prefix, table.lines[rows].tolist(), strict=True)]
    return Records(np.asarray(names, dtype=object), seconds, gpus[rows], durations[rows])


def parse_pollux(path: str | os.PathLike[str]) -> Records:
    """Records of a Pollux workload CSV (work = the model's full run at its batch size)."""
    return _columnar(path, ("time", "num_replicas", "batch_size"), _pollux)


def _pollux(table: Table) -> Records:
    table.require(POLLUX_COLUMNS)
    submit = _submit_times(table, "time")
    gpus = _gpu_counts(table, "num_replicas")
    batches = table.numbers("batch_size", integer=True)
    table.check(batches >= 1, "batch_size", ">= 1", problem="bad batch size")
    table.check(
        batches <= MAX_BATCH_SIZE,
        "batch_size",
        f"<= {MAX_BATCH_SIZE:,} (MAX_BATCH_SIZE)",
        problem="batch size too large",
    )
    _check_models(table, "application", zoo.ZOO_MODELS)
    apps = table.text("application")
    table.check(apps != "", "application", "a model name", problem="missing model")
    pairs = pd.DataFrame({"app": apps, "batch": batches}).drop_duplicates()
    for row, app, batch in zip(  # few distinct pairs, first rows first: check with the zoo
        pairs.index.tolist(), pairs["app"].tolist(), pairs["batch"].tolist(), strict=True
    ):
        try:
            zoo.iterations_to_complete(str(app), int(batch))
        except (ValueError, KeyError) as err:
            raise table.fail(row, f"{app} at batch_size {batch}: {err}") from None
    names = table.check_ids("name")
    return Records(names, submit, gpus, model=apps, batch_size=batches)


def parse_swf(path: str | os.PathLike[str]) -> Records:
    """Records of a Standard Workload Format log, as HPC jobs (model ``"hpc"``).

    Kept: jobs with a known run time > 0 and a processor count > 0 (allocated
    processors, or the requested count where the allocation is unknown) that were not
    cancelled (status 5) -- a cancelled job's runtime says nothing about its work.
    Processors are treated as GPUs. Submit times are rebased to the first kept job;
    ``user`` is the user id (``None`` if -1).
    """
    table = read_whitespace_table(path, SWF_FIELDS)
    submit = table.numbers("submit")
    run_time = table.numbers("run_time")
    procs = table.numbers("procs", integer=True)
    requested = table.numbers("req_procs", integer=True)
    status = table.numbers("status", integer=True)
    procs = np.where(procs > 0, procs, requested)
    keep = (run_time > 0) & (procs > 0) & (status != SWF_CANCELLED)
    if not keep.any():
        raise TraceFormatError(table.path, None, "no job with a run time > 0 and processors > 0")
    table.check(~keep | (submit >= 0), "submit", ">= 0 s", problem="negative submit time")
    _check_submit_limit(table, "submit", np.where(keep, submit, 0.0))
    too_long = keep & (run_time > MAX_DURATION_S)
    table.check(
        ~too_long,
        "run_time",
        f"<= {MAX_DURATION_S:.0e} s (MAX_DURATION_S)",
        problem="duration too long",
    )
    table.check(
        ~keep | (procs <= MAX_GPUS_PER_JOB),
        "procs",
        f"<= {MAX_GPUS_PER_JOB:,} (MAX_GPUS_PER_JOB)",
        problem="too many processors",
    )
    rows = np.flatnonzero(keep)
    start = submit[rows].min()
    names, users = table.check_ids("job"), table.text("user")
    users = users[rows].copy()
    users[users == "-1"] = None
    models = np.full(len(rows), HPC_MODEL, dtype=object)
    return Records(
        names[rows], submit[rows] - start, procs[rows], run_time[rows], models, user=users
    )
