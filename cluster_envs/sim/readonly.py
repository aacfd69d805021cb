"""Read-only windows onto the simulator's mutable state.

The simulator owns its state and changes it in place; code outside ``sim/engine.py`` gets
these windows, which follow every change but refuse writes: numpy arrays as
non-writeable views, dicts as :class:`types.MappingProxyType`, lists as
:class:`ListView`, and the inventory and contention tracker as small facades.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig
    from cluster_envs.sim.contention import Contention
    from cluster_envs.sim.inventory import GpuInventory
    from cluster_envs.types import Placement

T = TypeVar("T")


def frozen(array: np.ndarray) -> np.ndarray:
    """A non-writeable view of 1-D ``array`` that shows its later in-place changes.

    Built on a read-only buffer, so ``view.flags.writeable = True`` raises as well.
    """
    if array.size == 0:
        view = array.view()
        view.flags.writeable = False
        return view
    return np.frombuffer(array.data.toreadonly(), dtype=array.dtype)


class ListView(Sequence[T]):
    """A read-only window onto a list: indexing, ``len``, iteration; no assignment."""

    __slots__ = ("_items",)

    def __init__(self, items: list[T]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return tuple(self._items[index])
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"ListView({self._items!r})"


class InventoryView:
    """Read-only facade of a :class:`GpuInventory` (same attribute names).

    Attributes:
        config: The cluster configuration.
        total: GPUs per node (read-only array).
        free: Free GPUs per node (read-only view, follows the simulator).
        speed: Compute speed of each node's GPU type relative to a T4 (read-only).
        gpu_type: GPU type name per node.
        network_speed: Inter-node bandwidth relative to the Pollux testbed.
        num_gpus: GPUs in the cluster.
        num_nodes: Nodes in the cluster.
    """

    __slots__ = (
        "_inv",
        "config",
        "total",
        "free",
        "speed",
        "gpu_type",
        "network_speed",
        "num_gpus",
        "num_nodes",
    )
    _inv: GpuInventory
    config: ClusterConfig
    total: np.ndarray
    free: np.ndarray
    speed: np.ndarray
    gpu_type: tuple[str, ...]
    network_speed: float
    num_gpus: int
    num_nodes: int

    def __init__(self, inventory: GpuInventory) -> None:
        fields = {
            "_inv": inventory,
            "config": inventory.config,
            "total": inventory.total,
            "free": frozen(inventory.free),
            "speed": inventory.speed,
            "gpu_type": inventory.gpu_type,
            "network_speed": inventory.network_speed,
            "num_gpus": inventory.num_gpus,
            "num_nodes": inventory.num_nodes,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the simulator's inventory is read-only (tried to set {name})")

    @property
    def num_free(self) -> int:
        """Free GPUs in the whole cluster."""
        return self._inv.num_free

    def shape_and_speed(self, placement: Placement) -> tuple[tuple[int, ...], float]:
        """The placement's shape (GPUs per node, descending) and its slowest GPU's speed."""
        return self._inv.shape_and_speed(placement)


class ContentionView:
    """Read-only facade of the simulator's :class:`Contention` tracker."""

    __slots__ = ("_c",)
    _c: Contention

    def __init__(self, contention: Contention) -> None:
        object.__setattr__(self, "_c", contention)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the simulator's contention state is read-only (tried {name})")

    @property
    def enabled(self) -> bool:
        """Whether any interference effect is on."""
        return self._c.enabled

    @property
    def link_contention(self) -> bool:
        """Whether distributed jobs split a node's link bandwidth."""
        return self._c.link_contention

    @property
    def node_interference(self) -> float:
        """Fractional compute slowdown per extra job on a shared node."""
        return self._c.node_interference

    @property
    def distributed_on(self) -> tuple[int, ...]:
        """Distributed (multi-node) jobs using each node (a copy)."""
        return tuple(self._c.distributed_on)

    @property
    def jobs_on(self) -> tuple[frozenset[int], ...]:
        """Active jobs on each node (a copy)."""
        return tuple(frozenset(s) for s in self._c.jobs_on)

    @property
    def num_jobs_on(self) -> tuple[int, ...]:
        """How many active jobs are on each node."""
        return tuple(map(len, self._c.jobs_on))

    def factors(self, j: int, placement: Placement) -> tuple[float, float]:
        """``(compute_divisor, network_divisor)`` for job ``j`` on ``placement``."""
        return self._c.factors(j, placement)


def read_only(private: str, doc: str) -> Any:
    """A property reading attribute ``private`` (C-speed getter, no setter: writes raise).

    Typed ``Any`` so that a class can annotate the public name with the value's type:
    ``state: np.ndarray = read_only("_state_ro", "...")``.
    """
    return property(attrgetter(private), doc=doc)
