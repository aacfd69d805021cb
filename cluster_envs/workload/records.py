"""Trace records as columns (:class:`Records`), their selection, and jobs built from them.

The parsers of :mod:`cluster_envs.workload.formats` return :class:`Records`: one numpy
array per :class:`~cluster_envs.workload.jobs.TraceRecord` field, no per-row objects.
:func:`select_records` is :func:`cluster_envs.workload.loaders.select` on columns (the
same float operations, elementwise), and :func:`make_jobs` gives exactly the jobs of
``JobFactory.make_all(records.rows())`` (it shares the factory's private caches and RNG
streams, drawn in the same order): where it cannot vectorise (HPC records, the
``sampled`` batch rule, adaptive batch sizes, records without duration and model) it
takes that very path. Vectorised, a large trace's jobs stay a lazy columnar table
(:class:`~cluster_envs.workload.lazy.LazyJobs`): each job is built when first indexed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.types import JobKind, JobSpec
from cluster_envs.workload import lazy
from cluster_envs.workload.jobs import HPC_MODEL, JobFactory, TraceRecord
from cluster_envs.workload.lazy import LazyJobs, Shape


class Selection(Protocol):
    """The selection options (``loaders.LoadOptions``)."""

    @property
    def window_s(self) -> tuple[float, float] | None: ...
    @property
    def num_jobs(self) -> int | None: ...
    @property
    def time_scale(self) -> float: ...


@dataclass(frozen=True)
class Records:
    """Columns of trace records (``None`` for a field no record has).

    Attributes:
        name: Job names (object array of str).
        submit_time_s: Submit times (float64).
        num_gpus: GPU counts (int64).
        duration_s: Durations (float64), or ``None``.
        model: Models (object array; ``None`` entries where a record has none), or ``None``.
        batch_size: Batch sizes (int64), or ``None``.
        user: Users (object array; ``None`` entries where unknown), or ``None``.
    """

    name: np.ndarray
    submit_time_s: np.ndarray
    num_gpus: np.ndarray
    duration_s: np.ndarray | None = None
    model: np.ndarray | None = None
    batch_size: np.ndarray | None = None
    user: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.name)

    def __iter__(self) -> Iterator[TraceRecord]:
        return iter(self.rows())

    def take(self, rows: np.ndarray, submit_time_s: np.ndarray | None = None) -> Records:
        """The records at ``rows`` (in that order), optionally with new submit times."""

        def pick(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[rows]

        submit = self.submit_time_s[rows] if submit_time_s is None else submit_time_s
        return Records(
            self.name[rows],
            submit,
            self.num_gpus[rows],
            pick(self.duration_s),
            pick(self.model),
            pick(self.batch_size),
            pick(self.user),
        )

    def rows(self) -> list[TraceRecord]:
        """The records as :class:`TraceRecord` objects (the per-row path)."""
        n = len(self)

        def column(values: np.ndarray | None) -> list:
            return [None] * n if values is None else values.tolist()

        return [
            TraceRecord(name, float(submit), int(gpus), duration, model, batch, user)
            for name, submit, gpus, duration, model, batch, user in zip(
                self.name.tolist(),
                self.submit_time_s.tolist(),
                self.num_gpus.tolist(),
                column(self.duration_s),
                column(self.model),
                column(self.batch_size),
                column(self.user),
                strict=True,
            )
        ]


def select_records(records: Records, options: Selection) -> Records:
    """Sort by submit time (stable) and apply ``window_s``, ``num_jobs``, ``time_scale``."""
    order = np.argsort(records.submit_time_s, kind="stable")
    chosen = records.take(order)
    if options.window_s is not None and len(chosen):
        start, end = options.window_s
        since = chosen.submit_time_s - chosen.submit_time_s[0]
        keep = np.flatnonzero((start <= since) & (since < end))
        if not len(keep):
            raise ConfigError(f"window_s {options.window_s} contains no job")
        chosen = chosen.take(keep, since[keep] - start)
    if options.num_jobs is not None:
        chosen = chosen.take(np.arange(min(options.num_jobs, len(chosen))))
    if options.time_scale != 1.0 and len(chosen):
        submit = chosen.submit_time_s
        first = submit[0]
        scaled = first + (submit - first) * options.time_scale
        chosen = chosen.take(np.arange(len(chosen)), scaled)
    return chosen


def _vectorisable(factory: JobFactory, records: Records) -> bool:
    opts = factory.options
    if opts.adaptive_batch or opts.batch_sizes == "sampled" or not len(records):
        return False
    if records.model is not None and (records.model == HPC_MODEL).any():
        return False
    if records.duration_s is None:
        return records.model is not None and not (records.model == None).any()  # noqa: E711
    return True


def _models(factory: JobFactory, records: Records) -> list[str]:
    """Each record's model; missing ones drawn as ``zoo.model_for_gpu_time`` does."""
    n = len(records)
    models = np.full(n, None, dtype=object) if records.model is None else records.model.copy()
    missing = models == None  # noqa: E711
    if missing.any():
        assert records.duration_s is not None
        gpu_time = records.duration_s[missing] * records.num_gpus[missing]
        drawn = np.full(len(gpu_time), "imagenet", dtype=object)
        drawn[gpu_time < zoo.GPU_TIME_LARGE_S] = "yolov3"
        small = gpu_time < zoo.GPU_TIME_SMALL_S
        two_way = gpu_time < zoo.GPU_TIME_MEDIUM_S
        # One draw per two-way record, in record order: the stream of the per-row calls.
        coins = factory._model_rng.integers(2, size=int(two_way.sum()))
        choices = np.asarray(("cifar10", "ncf", "deepspeech2", "bert"), dtype=object)
        drawn[two_way] = choices[np.where(small[two_way], coins, 2 + coins)]  # shared strs
        models[missing] = drawn
    unknown = ~np.isin(models, np.asarray(zoo.ZOO_MODELS, dtype=object))
    if unknown.any():
        row = int(np.argmax(unknown))
        factory.make(records.take(np.array([row])).rows()[0], row)  # raises its error
    return models.tolist()


def make_jobs(factory: JobFactory, records: Records) -> Sequence[JobSpec]:
    """``factory.make_all(records.rows())``, vectorised where that gives the same jobs.

    Vectorised, the jobs come as a :class:`~cluster_envs.workload.lazy.LazyJobs` (built
    when indexed) from :data:`~cluster_envs.workload.lazy.LAZY_MIN_JOBS` jobs on, else
    built at once into a tuple. A job its spec rejects is reported here, at load time.
    """
    if not _vectorisable(factory, records):
        return factory.make_all(records.rows())
    table = _lazy_jobs(factory, records)
    _check_jobs(table)
    return table if len(table) >= lazy.LAZY_MIN_JOBS else tuple(table)


def _lazy_jobs(factory: JobFactory, records: Records) -> LazyJobs:
    models = _models(factory, records)
    n = len(records)
    batches = [None] * n if records.batch_size is None else records.batch_size.tolist()
    has_duration = records.duration_s is not None
    # Per distinct (model, GPUs, recorded batch): batch size, speed model, GPU range and
    # the reference rate (or the full run's iterations) -- what factory.make looks up per
    # record, looked up once here, in the same order.
    index: dict[tuple[str, int, int | None], int] = {}
    shapes: list[Shape] = []
    per_shape: list[float] = []

    def new_shape(key: tuple[str, int, int | None]) -> int:
        model, count, given = key
        batch = given or factory._batch(model, count)
        low, high = factory.options.gpu_range(count)
        if has_duration:
            per_shape.append(factory._rate(model, batch, count))
        else:
            per_shape.append(zoo.iterations_to_complete(model, batch))
        shapes.append(Shape(model, count, low, high, batch, factory._speed(model, batch)))
        index[key] = len(shapes) - 1
        return index[key]

    keys = zip(models, records.num_gpus.tolist(), batches, strict=True)
    shape_of = np.array([index[k] if k in index else new_shape(k) for k in keys], np.int32)
    total = np.asarray(per_shape, dtype=np.float64)[shape_of]
    if records.duration_s is not None:
        total = records.duration_s * total  # duration * rate, as the per-row path
    return LazyJobs(
        factory.options.kind,  # type: ignore[arg-type]
        shapes,
        shape_of,
        np.ascontiguousarray(records.submit_time_s, dtype=np.float64),
        total,
        records.name,
        records.duration_s,
        records.user,
    )


def _check_jobs(table: LazyJobs) -> None:
    """Build the first job that ``JobSpec`` or its loss curve rejects (it raises)."""
    gpus, low, high = (table.column(f) for f in ("num_gpus", "min_gpus", "max_gpus"))
    total = table.column("total_iterations")
    bad = (gpus < 1) | (low < 1) | (low > gpus) | (gpus > high) | ~np.isfinite(total)
    bad |= ~(total > 0) | ~(table.column("submit_time_s") >= 0)
    if table[0].kind is JobKind.RIGID:
        bad |= low != high
    if bad.any():
        table[int(np.argmax(bad))]
