"""A lazy, columnar job table: :class:`LazyJobs`, a ``Sequence[JobSpec]`` of large traces.

A million eager :class:`~cluster_envs.types.JobSpec` objects (with their loss curves, names
and floats) cost about 360 bytes a job. :class:`LazyJobs` keeps per job only a few
columns (submit time, shape index, total iterations, the recorded duration, name and
user) and per distinct *shape* -- ``(model, GPUs, batch size)``, a few hundred in a trace --
one speed model and GPU range; ``table[j]`` builds job ``j``'s ``JobSpec`` when first
asked (a simulator asks when the job arrives) and keeps the last :data:`CACHE_JOBS` built.
Every value is the one the eager per-row path gives (``tests/test_workload_lazy.py``);
objects built twice are equal, not identical.

Consumers that need one field of every job read :meth:`LazyJobs.column` (and
:meth:`LazyJobs.groups`) instead of iterating: see :func:`cluster_envs.sim.columns`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

from cluster_envs.perf import zoo
from cluster_envs.perf.speed import SpeedModel
from cluster_envs.types import JobKind, JobSpec

#: Traces of at least this many jobs load into a :class:`LazyJobs`; smaller ones are
#: materialised into a tuple (the same jobs) at load time.
LAZY_MIN_JOBS = 10_000
#: Jobs a :class:`LazyJobs` keeps once built (the oldest built is dropped first).
CACHE_JOBS = 1 << 16
#: Integer fields served as columns (gathered from the shapes).
_SHAPE_INTS = ("num_gpus", "min_gpus", "max_gpus", "batch_size")


class Shape(NamedTuple):
    """What jobs of one ``(model, GPUs, batch size)`` share."""

    model: str
    num_gpus: int
    min_gpus: int
    max_gpus: int
    batch_size: int
    speed: SpeedModel


class LazyJobs(Sequence[JobSpec]):
    """Jobs ``0..n-1`` as columns, each :class:`JobSpec` built when first indexed.

    Args:
        kind: Every job's kind.
        shapes: The distinct shapes.
        shape_of: Index into ``shapes`` of each job (int array).
        submit_time_s: Submit times (float64).
        total_iterations: Ground-truth iterations (float64).
        names: Names from the trace (object array; a falsy name becomes ``model-j``), or
            ``None`` for none.
        durations: Recorded durations (float64), or ``None``.
        users: Users (object array), or ``None``.
        replaced: Jobs that replace the built ones (a what-if fork's frozen estimates).
    """

    def __init__(
        self,
        kind: JobKind,
        shapes: Sequence[Shape],
        shape_of: np.ndarray,
        submit_time_s: np.ndarray,
        total_iterations: np.ndarray,
        names: np.ndarray | None = None,
        durations: np.ndarray | None = None,
        users: np.ndarray | None = None,
        replaced: Mapping[int, JobSpec] | None = None,
    ) -> None:
        self._kind = kind
        self._shapes = tuple(shapes)
        self._shape_of = shape_of
        self._submit = submit_time_s
        self._total = total_iterations
        self._names = names
        self._durations = durations
        self._users = users
        self._replaced = dict(replaced or {})
        self._targets = {s.model: zoo.loss_curve_for(s.model, 1.0)[1] for s in self._shapes}
        self._columns: dict[str, np.ndarray] = {}
        self._cache: dict[int, JobSpec] = {}

    def __len__(self) -> int:
        return len(self._submit)

    def _build(self, j: int) -> JobSpec:
        """Job ``j``'s spec (no cache)."""
        if self._replaced:
            found = self._replaced.get(j)
            if found is not None:
                return found
        shape = self._shapes[self._shape_of[j]]
        model, total = shape.model, float(self._total[j])
        curve, _ = zoo.loss_curve_for(model, total)
        name = None if self._names is None else self._names[j]
        return JobSpec(
            j,
            name or f"{model}-{j}",
            float(self._submit[j]),
            model,
            shape.num_gpus,
            shape.min_gpus,
            shape.max_gpus,
            self._kind,
            shape.batch_size,
            total,
            shape.speed,
            curve,
            self._targets[model],
            None if self._users is None else self._users[j],
            None if self._durations is None else float(self._durations[j]),
        )

    @overload
    def __getitem__(self, index: int) -> JobSpec: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[JobSpec, ...]: ...
    def __getitem__(self, index: int | slice) -> JobSpec | tuple[JobSpec, ...]:
        try:
            return self._cache[index]  # type: ignore[index]
        except (KeyError, TypeError):  # not built yet, or a slice
            pass
        if isinstance(index, slice):
            return tuple(self._build(j) for j in range(*index.indices(len(self))))
        j = operator.index(index)
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(f"job index {index} out of range ({n} jobs)")
        spec = self._build(j)
        cache = self._cache
        if len(cache) >= CACHE_JOBS:
            del cache[next(iter(cache))]
        cache[j] = spec
        return spec

    def __iter__(self) -> Iterator[JobSpec]:  # builds each job, keeps none
        return map(self._build, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LazyJobs({len(self)} jobs, {len(self._shapes)} shapes)"

    def __getstate__(self) -> dict[str, Any]:  # copies and pickles drop the built jobs
        return {**self.__dict__, "_cache": {}, "_columns": {}}

    def column(self, name: str) -> np.ndarray:
        """Field ``name`` of every job (``job_id``, ``submit_time_s``, ``total_iterations``,
        ``num_gpus``, ``min_gpus``, ``max_gpus``, ``batch_size``): a read-only array."""
        found = self._columns.get(name)
        if found is not None:
            return found
        if name == "job_id":
            values = np.arange(len(self))
        elif name == "submit_time_s":
            values = self._submit.copy()
        elif name == "total_iterations":
            values = self._total.copy()
        elif name in _SHAPE_INTS:
            per_shape = np.array([getattr(s, name) for s in self._shapes], dtype=np.int64)
            values = per_shape[self._shape_of]
        else:
            raise KeyError(f"no column {name!r}")
        for j, spec in self._replaced.items():
            values[j] = getattr(spec, name)
        values.flags.writeable = False
        self._columns[name] = values
        return values

    def groups(self) -> tuple[np.ndarray, tuple[JobSpec, ...]] | None:
        """``(group of each job, one job of each group)``: jobs of a group share model,
        kind, GPU counts, batch size and speed model. ``None`` once jobs are replaced."""
        if self._replaced:
            return None
        first = np.zeros(len(self._shapes), dtype=np.int64)
        seen, where = np.unique(self._shape_of, return_index=True)
        first[seen] = where  # every shape is some job's
        return self._shape_of, tuple(self._build(int(j)) for j in first)

    def replace_jobs(self, specs: Mapping[int, JobSpec]) -> LazyJobs:
        """A table where ``specs[j]`` is job ``j`` (the columns follow)."""
        return LazyJobs(
            self._kind,
            self._shapes,
            self._shape_of,
            self._submit,
            self._total,
            self._names,
            self._durations,
            self._users,
            {**self._replaced, **specs},
        )

    def check_order(self) -> int | None:
        """The first job submitted before the job before it, or ``None``."""
        submit = self.column("submit_time_s")
        early = np.flatnonzero(submit[1:] < submit[:-1])
        return int(early[0]) + 1 if len(early) else None
