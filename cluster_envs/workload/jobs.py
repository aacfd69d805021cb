"""Turn trace records into :class:`~cluster_envs.types.JobSpec` objects, one rule for all.

Every loader and the synthetic generator parse their input into :class:`TraceRecord`
rows and hand them to one :class:`JobFactory`, so a job means the same thing whatever
file it came from:

* **Duration-only records** (Philly, canonical CSV, synthetic): a record with a duration
  and a GPU count but no model gets a zoo model by ``model_for_gpu_time(duration *
  num_gpus, rng)`` (Pollux's Philly-to-model mapping) and a batch size by the
  ``batch_sizes`` rule (below). Its work is ``total_iterations = duration_s * throughput(packed_shape(num_gpus,
  ref_gpus_per_node), compute_speed=GPU_SPEED[reference_gpu_type])``, so at the recorded
  GPU count on a packed placement of the reference GPU type it runs exactly
  ``duration_s``; any other size, placement or GPU type changes the runtime through the
  speed model.
* **Model + batch records without duration** (Pollux workloads): ``total_iterations =
  iterations_to_complete(model, batch_size)`` -- the model's full number of epochs.
* **Adaptive-batch records** (``adaptive_batch=True``, Pollux's artifact semantics): the
  work is the model's total statistical progress and the speed is goodput
  (:mod:`cluster_envs.perf.goodput`), so the scheduler's batch choice changes the rate.
* **HPC records** (SWF, model ``"hpc"``): speed ``SpeedupThroughput(rate_1=1,
  Downey(A, sigma))`` with per-job parameters drawn from the seeded RNG (see
  :func:`draw_downey`); work from the duration as above; no loss curve.

Batch sizes of records without one (``JobOptions.batch_sizes``):

* ``"scaled"`` (default): weak scaling, as users do -- the smallest profiled batch size
  of the model that is at least ``default_batch_size * num_gpus`` (capped at the
  largest profiled). A 1-GPU job keeps the default; an 8-GPU job gets a batch that
  scales to 8 GPUs instead of one that runs slower there than on one GPU.
* ``"default"``: the model's default (smallest profiled) batch size for every job.
* ``"sampled"``: log-uniform over the model's profiled batch sizes (seeded), so some
  jobs scale well and others do not -- what a moldable scheduler has to tell apart.

Kinds: ``rigid`` jobs have ``min_gpus == max_gpus == num_gpus``; ``moldable`` and
``malleable`` jobs may use ``[min_gpus, max(max_gpus_cap, num_gpus)]`` GPUs (defaults
``1`` and ``16``), ``num_gpus`` (the user's request) staying the recorded count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from cluster_envs.config import GPU_SPEED, unknown_name
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.perf.goodput import GoodputSpeed, get_goodput_model
from cluster_envs.perf.measured import get_table, measured_speed_model
from cluster_envs.perf.speed import SpeedModel, SpeedupThroughput, packed_shape
from cluster_envs.perf.speedup import Downey
from cluster_envs.types import JobKind, JobSpec, LossCurveParams

#: Model name of SWF (HPC) jobs; they have no loss curve.
HPC_MODEL = "hpc"
#: Batch size recorded for HPC jobs (they have none; 1 keeps ``JobSpec`` well-formed).
HPC_BATCH_SIZE = 1
#: Range of Downey's variance-of-parallelism parameter sigma for HPC jobs.
DOWNEY_SIGMA_RANGE = (0.0, 2.0)
#: Average parallelism A is drawn log-uniformly in [n / F, n * F] (n = allocated procs).
DOWNEY_A_SPREAD = 2.0
#: Batch-size rules for records that give none.
BATCH_RULES = ("scaled", "default", "sampled")
#: Where zoo-model jobs' true speeds come from (``JobOptions.throughput``).
THROUGHPUT_SOURCES = ("fitted", "measured")


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One job as a trace describes it, before it becomes a :class:`JobSpec`.

    Attributes:
        name: Job name (``""``: named ``<model>-<job_id>``).
        submit_time_s: Arrival time in seconds from the start of the workload.
        num_gpus: GPUs the job asked for (recorded allocation).
        duration_s: Runtime at ``num_gpus`` on a packed placement of the reference GPU
            type (``None``: derive the work from ``model`` and ``batch_size``).
        model: Zoo model, ``"hpc"``, or ``None`` to draw one from the job's GPU time.
        batch_size: Global batch size (``None``: the model's default).
        user: Submitting user, if known.
    """

    name: str
    submit_time_s: float
    num_gpus: int
    duration_s: float | None = None
    model: str | None = None
    batch_size: int | None = None
    user: str | None = None


@dataclass(frozen=True)
class JobOptions:
    """How records become jobs.

    Attributes:
        kind: ``"rigid"``, ``"moldable"`` or ``"malleable"`` (or a :class:`JobKind`).
        seed: Seed of the model assignment and HPC speedup draws.
        reference_gpu_type: GPU type the recorded durations were measured on.
        ref_gpus_per_node: Node size of the packed reference placement.
        min_gpus: Smallest GPU count of moldable/malleable jobs.
        max_gpus_cap: Largest GPU count of moldable/malleable jobs (a job that asked
            for more may use up to its request).
        batch_sizes: Batch-size rule for records without one (see the module docstring).
        adaptive_batch: Pollux-artifact jobs whose batch size the scheduler may change:
            work is the model's total statistical progress (all its epochs) and the
            speed a :class:`~cluster_envs.perf.goodput.GoodputSpeed` (rate = goodput at
            the batch the scheduler sets, starting from the model's initial batch).
        throughput: True speed of zoo-model jobs: ``"fitted"`` (the zoo's all-reduce
            model) or ``"measured"`` (the Pollux testbed's measured step times,
            interpolated as the Pollux artifact does; :mod:`cluster_envs.perf.measured`).
            Schedulers that model goodput still believe the fitted model.
    """

    kind: JobKind | str = JobKind.RIGID
    seed: int = 0
    reference_gpu_type: str = "T4"
    ref_gpus_per_node: int = 4
    min_gpus: int = 1
    max_gpus_cap: int = 16
    batch_sizes: str = "scaled"
    adaptive_batch: bool = False
    throughput: str = "fitted"

    def __post_init__(self) -> None:
        if self.throughput not in THROUGHPUT_SOURCES:
            raise unknown_name("throughput", self.throughput, THROUGHPUT_SOURCES, listed="valid")
        if self.batch_sizes not in BATCH_RULES:
            raise unknown_name("batch_sizes rule", self.batch_sizes, BATCH_RULES, listed="rules")
        if not isinstance(self.kind, JobKind):
            kinds = [k.value for k in JobKind]
            if self.kind not in kinds:
                raise unknown_name("job kind", self.kind, kinds, listed="kinds")
            object.__setattr__(self, "kind", JobKind(self.kind))
        if self.reference_gpu_type not in GPU_SPEED:
            raise unknown_name(
                "reference_gpu_type", self.reference_gpu_type, GPU_SPEED, listed="known"
            )
        if self.ref_gpus_per_node < 1:
            raise ConfigError(f"ref_gpus_per_node must be >= 1, got {self.ref_gpus_per_node}")
        if not 1 <= self.min_gpus <= self.max_gpus_cap:
            raise ConfigError(
                f"need 1 <= min_gpus <= max_gpus_cap, got {self.min_gpus}, {self.max_gpus_cap}"
            )

    @property
    def compute_speed(self) -> float:
        """Speed of the reference GPU type relative to a T4."""
        return GPU_SPEED[self.reference_gpu_type]

    def gpu_range(self, num_gpus: int) -> tuple[int, int]:
        """``(min_gpus, max_gpus)`` of a job that asked for ``num_gpus``."""
        if self.kind is JobKind.RIGID:
            return num_gpus, num_gpus
        return min(self.min_gpus, num_gpus), max(self.max_gpus_cap, num_gpus)


def reference_runtime_s(
    job: JobSpec,
    num_gpus: int | None = None,
    gpu_type: str = "T4",
    gpus_per_node: int = 4,
) -> float:
    """Runtime (s) of ``job`` alone on a packed placement of ``num_gpus`` ``gpu_type`` GPUs.

    Args:
        job: The job.
        num_gpus: GPU count (default: the job's request).
        gpu_type: GPU type of every node.
        gpus_per_node: Node size of the packed placement.
    """
    shape = packed_shape(job.num_gpus if num_gpus is None else num_gpus, gpus_per_node)
    return job.total_iterations / job.speed.throughput(shape, compute_speed=GPU_SPEED[gpu_type])


def draw_downey(num_procs: int, rng: np.random.Generator) -> Downey:
    """Downey speedup parameters for an HPC job that ran on ``num_procs`` processors.

    Downey (1997) characterises a program by its average parallelism ``A`` and the
    variance of its parallelism ``sigma``. Logs record only the allocation, so we assume
    users ask for about what their program can use: ``A`` is log-uniform in
    ``[n / 2, 2 n]`` (at least 1) and ``sigma`` uniform in ``[0, 2]``, the range Downey
    observed.
    """
    low = math.log(max(1.0, num_procs / DOWNEY_A_SPREAD))
    high = math.log(num_procs * DOWNEY_A_SPREAD)
    average = float(math.exp(rng.uniform(low, high)))
    sigma = float(rng.uniform(*DOWNEY_SIGMA_RANGE))
    return Downey(average, sigma)


class JobFactory:
    """Builds :class:`JobSpec` objects from :class:`TraceRecord` rows (the one rule).

    One factory per workload: it owns the seeded RNG streams (model assignment, HPC
    speedups; drawn in record order, so a prefix of records always gets the same jobs)
    and caches speed models and throughputs.
    """

    def __init__(
        self, options: JobOptions | None = None, seed: np.random.SeedSequence | None = None
    ) -> None:
        """Create a factory.

        Args:
            options: How records become jobs.
            seed: Seed sequence to draw from instead of ``options.seed`` (lets a caller
                that splits one seed per concern hand the factory its own child).
        """
        self.options = options or JobOptions()
        root = np.random.SeedSequence(self.options.seed) if seed is None else seed
        model_rng, hpc_rng, batch_rng = (np.random.default_rng(s) for s in root.spawn(3))
        self._model_rng = model_rng
        self._hpc_rng = hpc_rng
        self._batch_rng = batch_rng
        self._speeds: dict[tuple[str, int], SpeedModel] = {}
        self._rates: dict[tuple[str, int, int], float] = {}
        self._curves: dict[tuple[str, float], tuple[LossCurveParams, float]] = {}

    def make(self, record: TraceRecord, job_id: int) -> JobSpec:
        """The job ``job_id`` described by ``record``."""
        opts = self.options
        model = record.model
        if model is None:
            if record.duration_s is None:
                raise ConfigError(f"record {record.name!r} needs a duration or a model")
            model = zoo.model_for_gpu_time(record.duration_s * record.num_gpus, self._model_rng)
        if model == HPC_MODEL:
            return self._make_hpc(record, job_id)
        if model not in zoo.ZOO_MODELS:
            error = unknown_name("model", model, zoo.ZOO_MODELS, listed="models")
            raise ConfigError(f"record {record.name!r}: {error}")
        batch = record.batch_size or self._batch(model, record.num_gpus)
        if opts.adaptive_batch:
            return self._make_adaptive(record, job_id, model)
        if record.duration_s is None:
            total = zoo.iterations_to_complete(model, batch)
        else:
            total = record.duration_s * self._rate(model, batch, record.num_gpus)
        return self._spec(record, job_id, model, batch, total, self._speed(model, batch))

    def _spec(
        self,
        record: TraceRecord,
        job_id: int,
        model: str,
        batch: int,
        total: float,
        speed: SpeedModel,
    ) -> JobSpec:
        """The JobSpec of ``record`` with its model, batch size, length and speed model."""
        curve, target = self._curve(model, total)
        low, high = self.options.gpu_range(record.num_gpus)
        return JobSpec(
            job_id=job_id,
            name=record.name or f"{model}-{job_id}",
            submit_time_s=record.submit_time_s,
            model=model,
            num_gpus=record.num_gpus,
            min_gpus=low,
            max_gpus=high,
            kind=self.options.kind,  # type: ignore[arg-type]
            batch_size=batch,
            total_iterations=total,
            speed=speed,
            loss_curve=curve,
            target_loss=target,
            user=record.user,
            recorded_duration_s=record.duration_s,
        )

    def make_all(self, records: Iterable[TraceRecord]) -> tuple[JobSpec, ...]:
        """Jobs for ``records`` in the given order, with ids ``0..n-1``."""
        return tuple(self.make(record, i) for i, record in enumerate(records))

    def _make_hpc(self, record: TraceRecord, job_id: int) -> JobSpec:
        if record.duration_s is None:
            raise ConfigError(f"HPC record {record.name!r} needs a duration")
        opts = self.options
        speed = SpeedupThroughput(rate_1=1.0, curve=draw_downey(record.num_gpus, self._hpc_rng))
        shape = packed_shape(record.num_gpus, opts.ref_gpus_per_node)
        rate = speed.throughput(shape, compute_speed=opts.compute_speed)
        low, high = opts.gpu_range(record.num_gpus)
        return JobSpec(
            job_id=job_id,
            name=record.name or f"{HPC_MODEL}-{job_id}",
            submit_time_s=record.submit_time_s,
            model=HPC_MODEL,
            num_gpus=record.num_gpus,
            min_gpus=low,
            max_gpus=high,
            kind=opts.kind,  # type: ignore[arg-type]
            batch_size=HPC_BATCH_SIZE,
            total_iterations=record.duration_s * rate,
            speed=speed,
            user=record.user,
            recorded_duration_s=record.duration_s,
        )

    def _make_adaptive(self, record: TraceRecord, job_id: int, model: str) -> JobSpec:
        """An adaptive-batch job (``JobOptions.adaptive_batch``), measured in progress."""
        good = get_goodput_model(model)
        truth = get_table(model) if self.options.throughput == "measured" else None
        speed = GoodputSpeed(good, good.init_batch_size, truth)
        return self._spec(record, job_id, model, good.init_batch_size, good.total_progress, speed)

    def _batch(self, model: str, num_gpus: int) -> int:
        """The batch size of a record that gives none (``options.batch_sizes`` rule)."""
        info = zoo.get_model(model)
        rule = self.options.batch_sizes
        if rule == "default":
            return info.default_batch_size
        sizes = sorted(info.batch_sizes)
        if rule == "sampled":
            return int(sizes[int(self._batch_rng.integers(len(sizes)))])
        wanted = info.default_batch_size * num_gpus
        return int(next((b for b in sizes if b >= wanted), sizes[-1]))

    def _speed(self, model: str, batch: int) -> SpeedModel:
        key = (model, batch)
        if key not in self._speeds:
            if self.options.throughput == "measured":
                self._speeds[key] = measured_speed_model(model, batch)
            else:
                self._speeds[key] = zoo.speed_model(model, batch)
        return self._speeds[key]

    def _rate(self, model: str, batch: int, num_gpus: int) -> float:
        key = (model, batch, num_gpus)
        if key not in self._rates:
            shape = packed_shape(num_gpus, self.options.ref_gpus_per_node)
            speed = self._speed(model, batch)
            self._rates[key] = speed.throughput(shape, compute_speed=self.options.compute_speed)
        return self._rates[key]

    def _curve(self, model: str, total: float) -> tuple[LossCurveParams, float]:
        key = (model, total)
        if key not in self._curves:
            self._curves[key] = zoo.loss_curve_for(model, total)
        return self._curves[key]
