"""Trace records as columns (:class:`Records`), their selection, and jobs built from them.

The parsers of :mod:`cluster_envs.workload.formats` return :class:`Records`: one numpy
array per :class:`~cluster_envs.workload.jobs.TraceRecord` field, no per-row objects.
:func:`select_records` is :func:`cluster_envs.workload.loaders.select` on columns (the
same float operations, elementwise), and :func:`make_jobs` gives exactly the jobs of
``JobFactory.make_all(records.rows())`` (it shares the factory's private caches and RNG
streams, drawn in the same order): where it cannot vectorise (HPC records, the
``sampled`` batch rule, adaptive batch sizes, records without duration and model) it
takes that very path.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import SpeedModel
from cluster_envs.types import JobSpec
from cluster_envs.workload.jobs import HPC_MODEL, JobFactory, TraceRecord


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


def make_jobs(factory: JobFactory, records: Records) -> tuple[JobSpec, ...]:
    """``factory.make_all(records.rows())``, vectorised where that gives the same jobs."""
    if not _vectorisable(factory, records):
        return factory.make_all(records.rows())
    # A million new objects without cycles: the cyclic collector would only re-scan
    # them (about a fifth of the load time at 1M jobs); refcounting still frees garbage.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _make_jobs(factory, records)
    finally:
        if collecting:
            gc.enable()


def _make_jobs(factory: JobFactory, records: Records) -> tuple[JobSpec, ...]:
    models = _models(factory, records)
    n = len(records)
    names = records.name.tolist()
    submits = records.submit_time_s.tolist()
    gpus = records.num_gpus.tolist()
    durations = [None] * n if records.duration_s is None else records.duration_s.tolist()
    batches = [None] * n if records.batch_size is None else records.batch_size.tolist()
    users = [None] * n if records.user is None else records.user.tolist()
    kind = factory.options.kind
    # Per distinct (model, GPUs, recorded batch): batch size, reference rate, speed
    # model, GPU range -- what factory.make looks up per record, looked up once here.
    shapes: dict[tuple[str, int, int | None], tuple[int, float, SpeedModel, int, int]] = {}
    targets: dict[str, float] = {}
    jobs = []
    for i in range(n):
        model, count, duration, given = models[i], gpus[i], durations[i], batches[i]
        key = (model, count, given)
        shape = shapes.get(key)
        if shape is None:
            batch = given or factory._batch(model, count)
            low, high = factory.options.gpu_range(count)
            rate = factory._rate(model, batch, count) if duration is not None else 0.0
            shape = shapes[key] = (batch, rate, factory._speed(model, batch), low, high)
        batch, rate, speed, low, high = shape
        if duration is None:
            total = zoo.iterations_to_complete(model, batch)
        else:
            total = duration * rate
        # Not cached per (model, total) as factory._curve does: a million distinct
        # totals would keep a million entries; the curve is cheap and the same.
        curve, target = zoo.loss_curve_for(model, total)
        target = targets.setdefault(model, target)  # one float per model, same value
        name = names[i] or f"{model}-{i}"
        spec = (i, name, submits[i], model, count, low, high, kind, batch, total, speed)
        jobs.append(JobSpec(*spec, curve, target, users[i], duration))  # type: ignore[arg-type]
    return tuple(jobs)
