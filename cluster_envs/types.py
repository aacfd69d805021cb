"""Core value types shared by every layer: jobs, placements and decisions.

All of them are immutable. A :class:`JobSpec` is what the workload knows about a job
(including hidden ground truth such as ``total_iterations``, which only the simulator
reads); a :class:`Decision` is what any policy -- heuristic, Bayesian optimiser or RL
action decoder -- hands back to the simulator.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cluster_envs.errors import ConfigError

if TYPE_CHECKING:
    from cluster_envs.perf.speed import SpeedModel


class Immutable:
    """Mixin of the immutable values (jobs, curves, speed models, configs, decisions):
    ``copy.deepcopy`` returns the object itself.

    A fork of a running simulation (:mod:`cluster_envs.sim.fork`) deep-copies the
    simulator and its policy; the values they hold never change, so the fork shares them
    instead of rebuilding hundreds of frozen dataclasses each time (a Metis lookahead
    teacher forks six times a decision; see benchmarks/results/envs_profile.md). A
    subclass must be immutable all the way down: a speed model a user plugs into a
    :class:`JobSpec` must not keep state that changes its answers.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


class JobKind(enum.Enum):
    """How a job's GPU count may change.

    RIGID jobs run exactly at their requested GPU count; MOLDABLE jobs may start at any
    count in ``[min_gpus, max_gpus]`` and keep it; MALLEABLE jobs may also be resized
    while running (each resize costs ``rescale_cost_s``).
    """

    RIGID = "rigid"
    MOLDABLE = "moldable"
    MALLEABLE = "malleable"


class JobState(enum.IntEnum):
    """Life cycle of a job inside the simulator."""

    PENDING = 0  # not yet submitted
    QUEUED = 1
    RESCALING = 2  # holds GPUs, pays a restart/rescale cost, makes no progress
    RUNNING = 3
    FINISHED = 4


@dataclass(frozen=True, slots=True)
class LossCurveParams(Immutable):
    """Optimus loss curve ``l(k) = 1 / (b0 * k + b1) + b2`` with ``k`` in iterations."""

    b0: float
    b1: float
    b2: float

    def loss(self, k: float) -> float:
        """Loss after ``k`` iterations."""
        return 1.0 / (self.b0 * k + self.b1) + self.b2


@dataclass(frozen=True, slots=True)
class JobSpec(Immutable):
    """Static description of one training job.

    Attributes:
        job_id: Dense index, ``0..n-1`` in submission order within a workload.
        name: Human-readable name (from the trace where there is one).
        submit_time_s: Arrival time in seconds from the start of the workload.
        model: Name of the model-zoo entry (or ``"hpc"`` for SWF jobs).
        num_gpus: GPUs requested by the user.
        min_gpus: Smallest allowed GPU count (== num_gpus for rigid jobs).
        max_gpus: Largest allowed GPU count (== num_gpus for rigid jobs).
        kind: Rigid, moldable or malleable.
        batch_size: Global (total) batch size, fixed for the job's life.
        total_iterations: Ground truth: iterations until the convergence target is met.
            Hidden from policies (they see loss observations and fitted curves).
        speed: Throughput model mapping a placement to iterations per second.
        loss_curve: Ground-truth loss curve (hidden; observations are noisy samples).
        target_loss: Convergence target of the loss curve (``loss_curve`` reaches it at
            ``total_iterations``).
        user: Submitting user, if the trace names one.
        recorded_duration_s: Duration recorded in the trace at ``num_gpus``, if any.
    """

    job_id: int
    name: str
    submit_time_s: float
    model: str
    num_gpus: int
    min_gpus: int
    max_gpus: int
    kind: JobKind
    batch_size: int
    total_iterations: float
    speed: SpeedModel = field(repr=False, compare=False)
    loss_curve: LossCurveParams | None = None
    target_loss: float | None = None
    user: str | None = None
    recorded_duration_s: float | None = None

    def __post_init__(self) -> None:
        if self.num_gpus < 1:
            raise ConfigError(f"job {self.name!r}: num_gpus must be >= 1, got {self.num_gpus}")
        if not (1 <= self.min_gpus <= self.num_gpus <= self.max_gpus):
            raise ConfigError(
                f"job {self.name!r}: need 1 <= min_gpus <= num_gpus <= max_gpus, got "
                f"{self.min_gpus} <= {self.num_gpus} <= {self.max_gpus}"
            )
        if self.kind is JobKind.RIGID and self.min_gpus != self.max_gpus:
            raise ConfigError(f"job {self.name!r}: a rigid job needs min_gpus == max_gpus")
        if not self.total_iterations > 0:
            raise ConfigError(f"job {self.name!r}: total_iterations must be > 0")
        if self.submit_time_s < 0:
            raise ConfigError(f"job {self.name!r}: submit_time_s must be >= 0")


Placement = tuple[tuple[int, int], ...]
"""A placement: ``((node_id, num_gpus), ...)`` sorted by node id, no zero counts."""


def make_placement(pairs: Iterable[tuple[int, int]]) -> Placement:
    """Normalise ``(node, gpus)`` pairs: merge duplicates, drop zeros, sort by node."""
    merged: dict[int, int] = {}
    for node, gpus in pairs:
        node, gpus = int(node), int(gpus)
        if gpus < 0:
            raise ConfigError(f"placement has a negative GPU count {gpus} on node {node}")
        if gpus:
            merged[node] = merged.get(node, 0) + gpus
    return tuple(sorted(merged.items()))


def placement_gpus(placement: Placement) -> int:
    """Total number of GPUs in a placement."""
    return sum(g for _, g in placement)


@dataclass(frozen=True, slots=True)
class Allocate(Immutable):
    """Give ``job_id`` exactly the GPUs of ``placement``.

    For a queued job this starts it; for a running job it resizes or migrates it (a
    malleable job pays the rescale cost; other kinds are rejected). An empty placement
    for a running job is a preemption: the job keeps its progress and returns to the
    queue.

    ``batch_size`` (optional) sets the job's global batch size from now on (adaptive-batch
    jobs, :class:`~cluster_envs.perf.goodput.GoodputSpeed`); changing only the batch of a
    running job costs no restart. ``None`` keeps the current batch.
    """

    job_id: int
    placement: Placement
    batch_size: int | None = None


@dataclass(frozen=True, slots=True)
class Preempt(Immutable):
    """Stop ``job_id``; it keeps its progress and returns to the queue."""

    job_id: int


Action = Allocate | Preempt


@dataclass(frozen=True, slots=True)
class Decision(Immutable):
    """What a policy asks the simulator to do now, applied in order."""

    actions: tuple[Action, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.actions)


NO_DECISION = Decision()
