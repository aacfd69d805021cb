"""The throughput interface the simulator uses, and its simplest implementations.

A :class:`SpeedModel` maps the *shape* of a placement (GPUs used on each node) plus the
hardware it runs on to training iterations per second. Concrete models:

* :class:`cluster_envs.perf.throughput.PolluxThroughput` -- the all-reduce model fitted to
  the real Pollux measurements (placement-aware),
* :class:`cluster_envs.perf.throughput.OptimusPSThroughput` -- the parameter-server model,
* :class:`SpeedupThroughput` -- a single-GPU rate times a speedup curve ``S(n)`` (Amdahl,
  Downey, power law or tabulated), for HPC and generic moldable jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cluster_envs.types import Immutable

#: Default slowdown of a placement-agnostic job's sync when it spans several nodes.
DEFAULT_CROSS_NODE_PENALTY = 0.0


@runtime_checkable
class SpeedModel(Protocol):
    """Anything that turns a placement shape into iterations per second."""

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        """Iterations per second.

        Args:
            gpus_per_node: GPUs used on each node the job spans (order irrelevant).
            compute_speed: Speed of the slowest GPU type used, relative to a T4.
            network_speed: Inter-node bandwidth relative to the 50 Gbit/s reference.
        """
        ...


@runtime_checkable
class Speedup(Protocol):
    """A speedup curve ``S(n)`` with ``S(1) == 1``."""

    def speedup(self, n: int) -> float: ...


@dataclass(frozen=True)
class SpeedupThroughput(Immutable):
    """``rate_1 * S(n)``, optionally slowed when the job spans nodes.

    Attributes:
        rate_1: Iterations per second on one reference GPU.
        curve: The speedup curve.
        cross_node_penalty: Fractional slowdown per extra node spanned, divided by the
            network speed (0 = placement-agnostic, as HPC logs record no placement).
    """

    rate_1: float
    curve: Speedup
    cross_node_penalty: float = DEFAULT_CROSS_NODE_PENALTY

    def throughput(
        self,
        gpus_per_node: tuple[int, ...],
        compute_speed: float = 1.0,
        network_speed: float = 1.0,
    ) -> float:
        n = sum(gpus_per_node)
        extra_nodes = max(len(gpus_per_node) - 1, 0)
        slowdown = 1.0 + self.cross_node_penalty * extra_nodes / network_speed
        return self.rate_1 * compute_speed * self.curve.speedup(n) / slowdown


def packed_shape(num_gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """The most consolidated shape of ``num_gpus`` on nodes of ``gpus_per_node`` GPUs.

    >>> packed_shape(10, 4)
    (4, 4, 2)
    """
    if num_gpus < 1 or gpus_per_node < 1:
        raise ValueError(f"packed_shape needs positive counts, got {num_gpus}, {gpus_per_node}")
    full, rest = divmod(num_gpus, gpus_per_node)
    return (gpus_per_node,) * full + ((rest,) if rest else ())


def shape_totals(
    gpus_per_node: tuple[int, ...], compute_speed: float, network_speed: float
) -> tuple[int, int]:
    """``(GPUs, nodes used)`` of a placement shape, after checking it and the speeds.

    Raises:
        ValueError: A negative count, no GPU at all, or a non-positive speed.
    """
    gpus = nodes = 0
    for g in gpus_per_node:
        if g < 0:
            raise ValueError(f"negative GPU count in placement {gpus_per_node}")
        if g:
            gpus += g
            nodes += 1
    if gpus == 0:
        raise ValueError(f"placement {gpus_per_node!r} has no GPUs")
    if compute_speed <= 0 or network_speed <= 0:
        raise ValueError(
            f"speeds must be > 0, got compute {compute_speed}, network {network_speed}"
        )
    return gpus, nodes
