"""Job speeds (iterations/s) on a placement, with contention, cached per distinct input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cluster_envs.errors import ConfigError
from cluster_envs.perf.throughput import PolluxThroughput
from cluster_envs.sim.copying import copy_sharing

if TYPE_CHECKING:
    from cluster_envs.perf.speed import SpeedModel
    from cluster_envs.sim.contention import Contention
    from cluster_envs.sim.inventory import GpuInventory
    from cluster_envs.types import Placement


#: Process-wide ``(speed model, shape, compute, network) -> rate`` of the frozen Pollux
#: models: keyed by the model's value (equal models give equal rates, bit for bit), so
#: the episodes of one process share it (each episode's models are new objects).
_SHARED: dict[tuple[PolluxThroughput, tuple[int, ...], float, float], float] = {}
#: Entries kept at most (then it starts over).
SHARED_MAX = 1 << 18


def _throughput(speed: SpeedModel, shape: tuple[int, ...], compute: float, network: float) -> float:
    """``speed.throughput(shape, compute, network)``, from the shared table for a Pollux model."""
    if type(speed) is not PolluxThroughput:
        return speed.throughput(shape, compute, network)
    key = (speed, shape, compute, network)
    rate = _SHARED.get(key)
    if rate is None:
        if len(_SHARED) >= SHARED_MAX:
            _SHARED.clear()
        rate = _SHARED[key] = speed.throughput(shape, compute, network)
    return rate


class RateModel:
    """Throughput of a job on a placement given the current contention (owned by the
    simulator; reads the inventory and contention tracker it is given).

    Args:
        inventory: The cluster's GPUs.
        contention: The tracker of jobs sharing nodes and links.
    """

    def __init__(self, inventory: GpuInventory, contention: Contention) -> None:
        self.inventory = inventory
        self.contention = contention
        self._cache: dict[tuple[int, tuple[int, ...], float, float], float] = {}
        # (speed model id, placement, compute divisor, network divisor) -> rate, for
        # fixed-rate jobs: a pure function of these (shared by the jobs of one speed model,
        # so it holds no entry per job), a hit skips the shape and the key build.
        self._fast: dict[tuple[int, Placement, float, float], float] = {}
        # placement -> (shape, slowest GPU's speed): placements recur across jobs.
        self._shapes: dict[Placement, tuple[tuple[int, ...], float]] = {}

    def __getstate__(self) -> dict[str, object]:
        # Copies and pickles drop the caches keyed by speed-model ids: a copy's speed
        # models are new objects, and an id may be reused once its object is gone.
        return {**self.__dict__, "_cache": {}, "_fast": {}}

    def __deepcopy__(self, memo: dict[int, Any]) -> RateModel:
        """A fork's copy: the state above, the placement shapes (tuples) copied one level."""
        return copy_sharing(self, memo, ("_shapes",))

    def fixed_rate(self, j: int, speed: SpeedModel, placement: Placement) -> float:
        """:meth:`rate_of` for a job without ``goodput_rate`` (no progress dependence)."""
        compute_div, network_div = self.contention.factors(j, placement)
        key = (id(speed), placement, compute_div, network_div)
        rate = self._fast.get(key)
        if rate is None:
            rate = self._fast[key] = self._rate(j, speed, placement, compute_div, network_div)
        return rate

    def rate_of(
        self, j: int, speed: SpeedModel, placement: Placement, batch_size: int, done: float
    ) -> float:
        """Iterations/s of job ``j`` (speed model ``speed``) on ``placement`` right now.

        A job whose speed model has ``goodput_rate`` (adaptive batch size,
        :mod:`cluster_envs.perf.goodput`) runs at its goodput for ``batch_size`` at the
        fraction ``done`` of its training; that depends on progress, so it is not cached.

        Raises:
            ConfigError: The job's speed model gives a non-positive throughput.
        """
        compute_div, network_div = self.contention.factors(j, placement)
        if hasattr(speed, "goodput_rate"):
            shape, slowest = self._shape_and_speed(placement)
            compute = slowest / compute_div
            network = self.inventory.network_speed / network_div
            return speed.goodput_rate(shape, compute, network, batch_size, done)
        return self._rate(j, speed, placement, compute_div, network_div)

    def _shape_and_speed(self, placement: Placement) -> tuple[tuple[int, ...], float]:
        found = self._shapes.get(placement)
        if found is None:
            found = self._shapes[placement] = self.inventory.shape_and_speed(placement)
        return found

    def _rate(
        self,
        j: int,
        speed: SpeedModel,
        placement: Placement,
        compute_div: float,
        network_div: float,
    ) -> float:
        shape, slowest = self._shape_and_speed(placement)
        compute = slowest / compute_div
        network = self.inventory.network_speed / network_div
        key = (id(speed), shape, compute, network)
        rate = self._cache.get(key)
        if rate is None:
            rate = _throughput(speed, shape, compute, network)
            if not rate > 0:
                raise ConfigError(f"job {j}: speed model gave throughput {rate} for {shape}")
            self._cache[key] = rate
        return rate
