"""Statistical efficiency, goodput and adaptive batch size (Pollux, OSDI'21).

Pollux measures training in *statistical progress*: one iteration at the initial batch
size ``m0`` is one unit, and an iteration at batch ``m`` is worth

    gain(m) = (m / m0) * E(m),    E(m) = (phi + m0) / (phi + m),

where ``phi`` is the pre-conditioned gradient noise scale, which grows as training
proceeds. ``goodput = throughput (iterations/s) * gain`` is progress per second, and a
job is done when its progress reaches the end of its model's last epoch.

``phi`` is fitted per model from the real learning runs (``scripts/fit_goodput.py`` ->
``cluster_envs/data/goodput.json``): ``log phi(x, m) = f(x) + c * log(m / m0)``, ``f``
piecewise linear in the fraction of training done ``x`` in [0, 1]. The throughput side is
the model zoo's fitted all-reduce model (:class:`~cluster_envs.perf.throughput.PolluxThroughput`).

* :class:`GoodputModel` -- efficiency, gain, goodput tables and the best batch size of an
  allocation within the model's limits.
* :class:`GoodputSpeed` -- a speed model whose rate is goodput (progress/s) at a batch
  size the scheduler picks; the simulator evaluates it with the job's current batch and
  fraction done (:meth:`GoodputSpeed.goodput_rate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.perf.measured import MeasuredTable, micro_batches
from cluster_envs.perf.speed import shape_totals
from cluster_envs.perf.throughput import CEIL_EPS, PolluxThroughput
from cluster_envs.types import Immutable

GOODPUT_FILE = "goodput.json"
#: Candidate batch sizes per allocation searched by :meth:`GoodputModel.best_batch`
#: (geometric between the limits, as Pollux does).
BATCH_CANDIDATES = 50


def goodput_data() -> dict[str, Any]:
    """The shipped fit (``cluster_envs/data/goodput.json``), loaded once."""
    return zoo.shipped_json(GOODPUT_FILE)


def iteration_times(
    perf: PolluxThroughput,
    replicas: np.ndarray,
    nodes: np.ndarray,
    batch: np.ndarray,
    compute_speed: float = 1.0,
    network_speed: float = 1.0,
) -> np.ndarray:
    """Vectorised :meth:`PolluxThroughput.iteration_time` over (replicas, nodes, batch).

    Same gradient-accumulation rule: ``s = ceil(local / max_local_bsz)`` micro-steps of
    ``ceil(local / s)`` samples, the last one overlapping the sync.
    """
    reps = np.asarray(replicas, dtype=float)
    local = np.asarray(batch, dtype=float) / reps
    steps = np.maximum(np.ceil(local / perf.max_local_bsz - CEIL_EPS), 1.0)
    atomic = np.ceil(local / steps - CEIL_EPS)
    t_grad = (perf.alpha_c + perf.beta_c * atomic) / compute_speed
    extra = np.maximum(reps - 2.0, 0.0)
    cross = (perf.alpha_n + perf.beta_n * extra) / network_speed
    t_sync = np.where(np.asarray(nodes) > 1, cross, perf.alpha_r + perf.beta_r * extra)
    t_sync = np.where(reps > 1, t_sync, 0.0)
    g = perf.gamma
    t_iter = np.where(t_sync > 0, (t_grad**g + t_sync**g) ** (1.0 / g), t_grad)
    return (steps - 1.0) * t_grad + t_iter


@dataclass(frozen=True)
class GoodputModel(Immutable):
    """The goodput of one zoo model (see the module docstring).

    Attributes:
        name: Zoo model name.
        init_batch_size: ``m0``, the smallest profiled batch (samples).
        max_batch_size: Largest batch the scheduler may pick (largest profiled run).
        min_local_bsz: Smallest per-GPU batch (samples).
        epochs: Epochs of a full run.
        epoch_progress: Progress at the end of each epoch (units of ``m0`` iterations).
        log_phi_knots: ``f`` at equally spaced fractions of training 0..1.
        phi_batch_exponent: ``c`` of ``phi ~ (m / m0)^c``.
        perf: Fitted T4 throughput model (at ``m0``).
    """

    name: str
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    epochs: int
    epoch_progress: tuple[float, ...]
    log_phi_knots: tuple[float, ...]
    phi_batch_exponent: float
    perf: PolluxThroughput

    @property
    def total_progress(self) -> float:
        """Progress of a finished job (end of the last epoch)."""
        return self.epoch_progress[-1]

    def noise_scale(self, fraction: float | np.ndarray, batch: float | np.ndarray) -> np.ndarray:
        """``phi`` (samples) at ``fraction`` of training done, measured at ``batch``."""
        knots = np.linspace(0.0, 1.0, len(self.log_phi_knots))
        x = np.clip(fraction, 0.0, 1.0)
        scale = np.log(np.asarray(batch, dtype=float) / self.init_batch_size)
        return np.exp(np.interp(x, knots, self.log_phi_knots) + self.phi_batch_exponent * scale)

    def efficiency(self, batch: float | np.ndarray, fraction: float | np.ndarray) -> np.ndarray:
        """``E(m) = (phi + m0) / (phi + m)``, in (0, 1] for ``m >= m0``."""
        phi = self.noise_scale(fraction, batch)
        return (phi + self.init_batch_size) / (phi + np.asarray(batch, dtype=float))

    def gain(self, batch: float | np.ndarray, fraction: float | np.ndarray) -> np.ndarray:
        """Progress per iteration at ``batch``: ``(m / m0) * E(m)`` (1 at ``m0``)."""
        m = np.asarray(batch, dtype=float)
        return m / self.init_batch_size * self.efficiency(m, fraction)

    def fixed_batch_iterations(self, batch: int) -> float:
        """Iterations a job needs at a fixed ``batch`` to finish all epochs."""
        if not batch >= 1:
            raise ConfigError(f"batch size must be >= 1, got {batch}")
        ends = np.asarray(self.epoch_progress)
        starts = np.concatenate([[0.0], ends[:-1]])
        mids = (starts + ends) / 2.0 / ends[-1]
        return float(np.sum((ends - starts) / self.gain(batch, mids)))

    def batch_limits(self, num_gpus: int) -> tuple[int, int] | None:
        """``(smallest, largest)`` batch on ``num_gpus`` GPUs, or ``None`` if too many GPUs."""
        low = max(self.init_batch_size, self.min_local_bsz * int(num_gpus))
        return (low, self.max_batch_size) if low <= self.max_batch_size else None

    def goodput_table(
        self,
        num_gpus: np.ndarray,
        num_nodes: np.ndarray,
        fraction: float,
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Best ``(goodput, batch)`` per allocation, ``BATCH_CANDIDATES`` batches each.

        Allocations whose smallest batch exceeds ``max_batch_size`` get goodput 0.
        """
        gpus = np.asarray(num_gpus, dtype=float)
        low = np.maximum(self.init_batch_size, self.min_local_bsz * gpus)
        ok = low <= self.max_batch_size
        low = np.minimum(low, self.max_batch_size)
        t = np.linspace(0.0, 1.0, BATCH_CANDIDATES)[:, None]
        batch = np.round(np.exp(np.log(low) * (1 - t) + math.log(self.max_batch_size) * t))
        batch = np.clip(batch, np.ceil(low), self.max_batch_size)
        times = iteration_times(self.perf, gpus, num_nodes, batch, compute_speed, network_speed)
        good = self.gain(batch, fraction) / times
        best = np.argmax(good, axis=0)
        cols = np.arange(gpus.size)
        return np.where(ok, good[best, cols], 0.0), batch[best, cols].astype(int)

    def goodput(
        self,
        gpus_per_node: tuple[int, ...],
        batch: int,
        fraction: float,
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Progress per second of a placement shape at ``batch``."""
        gpus, nodes = shape_totals(gpus_per_node, compute_speed, network_speed)
        time = iteration_times(
            self.perf,
            np.array(gpus),
            np.array(nodes),
            np.array(batch),
            compute_speed,
            network_speed,
        )
        return float(self.gain(batch, fraction) / time)

    def best_batch(
        self,
        gpus_per_node: tuple[int, ...],
        fraction: float,
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> tuple[int, float]:
        """The goodput-maximising batch of a placement shape and its goodput."""
        gpus, nodes = shape_totals(gpus_per_node, compute_speed, network_speed)
        good, batch = self.goodput_table(
            np.array([gpus]), np.array([nodes]), fraction, compute_speed, network_speed
        )
        return int(batch[0]), float(good[0])


@cache
def get_goodput_model(name: str) -> GoodputModel:
    """The goodput model of zoo model ``name``.

    Raises:
        ConfigError: Unknown model (with a close-match suggestion).
    """
    models = goodput_data()["models"]
    if name not in models:
        raise ConfigError(
            f"no goodput model for {name!r}{suggest(str(name), models)}; "
            f"models: {', '.join(sorted(models))}"
        )
    raw = models[name]
    info = zoo.get_model(name)
    return GoodputModel(
        name=name,
        init_batch_size=int(raw["init_batch_size"]),
        max_batch_size=int(raw["max_batch_size"]),
        min_local_bsz=info.min_local_bsz,
        epochs=int(raw["epochs"]),
        epoch_progress=tuple(float(v) for v in raw["epoch_progress"]),
        log_phi_knots=tuple(float(v) for v in raw["log_phi_knots"]),
        phi_batch_exponent=float(raw["phi_batch_exponent"]),
        perf=info.throughput.with_batch_size(int(raw["init_batch_size"])),
    )


@dataclass(frozen=True)
class GoodputSpeed(Immutable):
    """Speed model of an adaptive-batch job: progress per second (goodput).

    The simulator calls :meth:`goodput_rate` with the job's current batch size and the
    fraction of its progress done; the plain :meth:`throughput` (the ``SpeedModel``
    protocol, for code that knows no batch) uses ``batch_size`` at the start of training.

    Attributes:
        model: The job's goodput model: what schedulers believe (``goodput_table``,
            ``best_batch``), and the simulated truth unless ``truth`` is given.
        batch_size: Batch used when none is given (the job's initial batch).
        truth: Measured step times that set the simulated iteration time instead of
            ``model.perf`` (Pollux artifact semantics; :mod:`cluster_envs.perf.measured`).
    """

    model: GoodputModel
    batch_size: int
    truth: MeasuredTable | None = None

    def goodput_rate(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float,
        network_speed: float,
        batch_size: int,
        fraction: float,
    ) -> float:
        """Progress per second at ``batch_size`` and ``fraction`` of training done.

        With ``truth`` the iteration time is the measured one (Pollux's micro-batch rule,
        :func:`~cluster_envs.perf.measured.micro_batches`) where it was measured, the
        fitted one elsewhere.
        """
        if self.truth is not None:
            gpus, _ = shape_totals(gpus_per_node, compute_speed, network_speed)
            accum, micro = micro_batches(batch_size, gpus, self.model.perf.max_local_bsz)
            time = self.truth.iteration_time(
                gpus_per_node, micro, accum, compute_speed, network_speed
            )
            if time is not None:
                return float(self.model.gain(batch_size, fraction)) / time
        return self.model.goodput(gpus_per_node, batch_size, fraction, compute_speed, network_speed)

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Goodput at ``batch_size`` at the start of training (progress per second)."""
        return self.goodput_rate(gpus_per_node, compute_speed, network_speed, self.batch_size, 0.0)


__all__ = [
    "BATCH_CANDIDATES",
    "GoodputModel",
    "GoodputSpeed",
    "get_goodput_model",
    "goodput_data",
    "iteration_times",
]
