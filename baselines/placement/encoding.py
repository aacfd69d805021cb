"""Placements as a small integer search space, with a deterministic repair rule.

**Node order.** The nodes with free GPUs are ranked once per instance by (GPU speed,
fastest first; existing jobs on the node, fewest first; free GPUs, most first; node id).
Neighbouring ranks are therefore similar nodes, which gives the surrogate models a smooth
axis to learn along.

**Dimensions (two per job, in batch order).**

* ``anchor_j`` -- ``Integer(0, N - 1)``: the rank of the first node of job ``j``. Its GPU
  type is the type the job runs on.
* ``spread_j`` -- ``Integer(1, S_j)``, ``S_j = min(num_gpus_j, MAX_SPREAD, N)``: how many
  nodes the job spans. Omitted when ``S_j = 1``; the anchor is omitted when ``N = 1``.

**Decoding and repair (deterministic, never infeasible).** Jobs are decoded in batch
order against the free GPUs left by existing jobs and by the jobs decoded before them.
Job ``j`` takes the first ``spread_j`` nodes *with free GPUs* among the nodes of the
anchor's GPU type, in rank order starting at the anchor and wrapping around within that
type, and deals its GPUs one at a time round-robin over them, skipping full nodes. GPUs
still unplaced (the chosen nodes are full) go to the next nodes of that type in the same
cyclic order, filling each before moving on; then to the other GPU types, nearest speed
rank first, in rank order. Configurations are thus repaired, never penalised: every point
of the space decodes to a feasible configuration (the instance guarantees the batch
fits), and points that collide decode to a shared or displaced placement whose cost the
optimiser sees.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.types import Placement

#: Largest number of nodes one job may be spread over by the encoding.
MAX_SPREAD = 4


@dataclass(frozen=True)
class Dimension:
    """One integer dimension: ``(job index, "anchor" | "spread", low, high)``."""

    job: int
    kind: str
    low: int
    high: int


def _check_space(
    num_gpus: tuple[int, ...],
    free: np.ndarray,
    speed: np.ndarray,
    load: np.ndarray,
    max_spread: int,
) -> None:
    """ConfigError naming what makes the search space ill-defined."""
    if not num_gpus:
        raise ConfigError("placement space: no jobs to place")
    if min(num_gpus) < 1:
        raise ConfigError(f"placement space: every job needs >= 1 GPU, got {list(num_gpus)}")
    if free.ndim != 1 or len(free) == 0:
        raise ConfigError(f"placement space: free GPUs must be one count per node, got {free}")
    if (free < 0).any():
        raise ConfigError(f"placement space: negative free GPUs {free.tolist()}")
    if len(speed) != len(free) or len(load) != len(free):
        raise ConfigError(
            f"placement space: {len(free)} nodes of free GPUs but {len(speed)} speeds "
            f"and {len(load)} loads"
        )
    if isinstance(max_spread, bool) or not isinstance(max_spread, (int, np.integer)):
        raise ConfigError(f"placement space: max_spread must be an integer, got {max_spread!r}")
    if max_spread < 1:
        raise ConfigError(f"placement space: max_spread must be >= 1, got {max_spread}")


class PlacementEncoding:
    """The search space of one placement problem (see the module docstring).

    Args:
        num_gpus: GPUs of each job to place, in decoding order.
        free: Free GPUs per node before any of these jobs.
        node_speed: GPU speed per node.
        node_load: Jobs already on each node (ranking tie-break).
        max_spread: Largest number of nodes one job may span.
    """

    def __init__(
        self,
        num_gpus: Sequence[int],
        free: np.ndarray,
        node_speed: np.ndarray,
        node_load: np.ndarray | None = None,
        max_spread: int = MAX_SPREAD,
    ) -> None:
        self.num_gpus = tuple(int(g) for g in num_gpus)
        self.free = np.asarray(free, dtype=np.int64).copy()
        self.node_speed = np.asarray(node_speed, dtype=float)
        self.max_spread = max_spread
        load = np.zeros(len(self.free), dtype=np.int64) if node_load is None else node_load
        _check_space(self.num_gpus, self.free, self.node_speed, np.asarray(load), max_spread)
        if sum(self.num_gpus) > self.free.sum():
            raise ConfigError(
                f"jobs need {sum(self.num_gpus)} GPUs but only {int(self.free.sum())} are free"
            )
        nodes = np.flatnonzero(self.free > 0)
        keys = sorted(
            nodes.tolist(), key=lambda n: (-self.node_speed[n], load[n], -self.free[n], n)
        )
        self.order = np.asarray(keys, dtype=np.int64)
        speeds = sorted(set(self.node_speed[self.order].tolist()), reverse=True)
        self._type_rank = {s: i for i, s in enumerate(speeds)}
        self._rank_of = {int(n): i for i, n in enumerate(self.order)}
        n = len(self.order)
        dims: list[Dimension] = []
        for j, g in enumerate(self.num_gpus):
            if n > 1:
                dims.append(Dimension(j, "anchor", 0, n - 1))
            spread = min(g, max_spread, n)
            if spread > 1:
                dims.append(Dimension(j, "spread", 1, spread))
        self.dims = tuple(dims)

    @property
    def num_dims(self) -> int:
        return len(self.dims)

    def skopt_space(self) -> list[Any]:
        """The dimensions as ``skopt.space.Integer`` objects (named ``anchor_j`` etc.)."""
        from skopt.space import Integer

        return [Integer(d.low, d.high, name=f"{d.kind}_{d.job}") for d in self.dims]

    def sample(self, rng: np.random.Generator) -> list[int]:
        """A uniformly random point of the space."""
        return [int(rng.integers(d.low, d.high + 1)) for d in self.dims]

    def grid(self) -> Iterator[list[int]]:
        """Every point of the space (use only when :meth:`size` is small)."""
        for point in itertools.product(*(range(d.low, d.high + 1) for d in self.dims)):
            yield list(point)

    def size(self) -> int:
        """Number of points of the space."""
        return int(np.prod([d.high - d.low + 1 for d in self.dims], dtype=float))

    def encode(self, configuration: Sequence[Placement]) -> list[int]:
        """The point whose job ``j`` anchors on the best-ranked node of its placement and
        spans as many nodes as it does (capped by the space): the point nearest to a
        configuration another placer made (decoding it need not give it back exactly)."""
        point = []
        for d in self.dims:
            nodes = [n for n, _ in configuration[d.job] if n in self._rank_of]
            if d.kind == "anchor":
                value = min((self._rank_of[n] for n in nodes), default=d.low)
            else:
                value = len(nodes)
            point.append(int(np.clip(value, d.low, d.high)))
        return point

    def trust_region(self, centre: Sequence[int], radius: int) -> list[Any]:
        """skopt dimensions with every anchor within ``radius`` ranks of ``centre``'s.

        Spreads keep their full range. A dimension keeps at least two values (skopt needs
        ``low < high``). Decoding still uses :meth:`decode` (the bounds are a subset).
        """
        from skopt.space import Integer

        if radius < 1:
            raise ConfigError(f"placement space: trust-region radius must be >= 1, got {radius}")
        if len(centre) != len(self.dims):
            raise ConfigError(f"centre has {len(centre)} coordinates, space has {self.num_dims}")
        dims = []
        for d, c in zip(self.dims, centre, strict=True):
            low, high = d.low, d.high
            if d.kind == "anchor":
                low, high = max(d.low, int(c) - radius), min(d.high, int(c) + radius)
                if low == high:
                    low, high = (low, high + 1) if high < d.high else (low - 1, high)
            dims.append(Integer(low, high, name=f"{d.kind}_{d.job}"))
        return dims

    def decode(self, x: Sequence[Any]) -> tuple[Placement, ...]:
        """The (repaired, always feasible) configuration of point ``x``."""
        if len(x) != len(self.dims):
            raise ConfigError(f"point has {len(x)} coordinates, space has {len(self.dims)}")
        anchor = [0] * len(self.num_gpus)
        spread = [1] * len(self.num_gpus)
        for d, v in zip(self.dims, x, strict=True):
            value = int(v)
            if not d.low <= value <= d.high:
                raise ConfigError(f"{d.kind}_{d.job}={value} outside [{d.low}, {d.high}]")
            if d.kind == "anchor":
                anchor[d.job] = value
            else:
                spread[d.job] = value
        free = self.free.copy()
        return tuple(
            self.place_one(g, anchor[j], spread[j], free) for j, g in enumerate(self.num_gpus)
        )

    def place_one(self, num_gpus: int, anchor: int, spread: int, free: np.ndarray) -> Placement:
        """Place one job by the decoding rule; takes its GPUs from ``free`` (in place)."""
        first = int(self.order[anchor])
        speed = self.node_speed[first]
        same = [int(n) for n in self.order if self.node_speed[n] == speed]
        start = same.index(first)
        ring = same[start:] + same[:start]
        taken: dict[int, int] = {}
        chosen = [n for n in ring if free[n] > 0][:spread]
        need = num_gpus
        while need and any(free[n] > 0 for n in chosen):
            for n in chosen:
                if need and free[n] > 0:
                    free[n] -= 1
                    taken[n] = taken.get(n, 0) + 1
                    need -= 1
        if need:
            rank = self._type_rank[speed]
            others = sorted(
                (int(n) for n in self.order if self.node_speed[n] != speed),
                key=lambda n: (abs(self._type_rank[self.node_speed[n]] - rank), self._rank_of[n]),
            )
            for n in ring + others:
                take = min(int(free[n]), need)
                if take:
                    free[n] -= take
                    taken[n] = taken.get(n, 0) + take
                    need -= take
                if not need:
                    break
        if need:
            raise ConfigError(f"no room for {num_gpus} GPUs (free: {free.tolist()})")
        return tuple(sorted(taken.items()))


def compositions(num_gpus: int, free: np.ndarray) -> Iterator[Placement]:
    """Every placement of ``num_gpus`` GPUs on nodes with ``free`` GPUs (any split)."""
    nodes = [int(n) for n in np.flatnonzero(free > 0)]

    def rec(i: int, need: int) -> Iterator[list[tuple[int, int]]]:
        if need == 0:
            yield []
            return
        if i == len(nodes):
            return
        node = nodes[i]
        for take in range(min(need, int(free[node])), -1, -1):
            for rest in rec(i + 1, need - take):
                yield ([(node, take)] if take else []) + rest

    for pairs in rec(0, num_gpus):
        yield tuple(pairs)


def enumerate_configurations(
    num_gpus: Sequence[int], free: np.ndarray, limit: int
) -> Iterator[tuple[Placement, ...]]:
    """Every feasible configuration (all splits, all nodes), depth first.

    Raises:
        ConfigError: once more than ``limit`` configurations have been produced.
    """
    count = 0

    def rec(j: int, left: np.ndarray) -> Iterator[tuple[Placement, ...]]:
        nonlocal count
        if j == len(num_gpus):
            count += 1
            if count > limit:
                raise ConfigError(
                    f"more than {limit} configurations: too large for exhaustive search "
                    "(use a small instance)"
                )
            yield ()
            return
        for placement in compositions(num_gpus[j], left):
            after = left.copy()
            for node, gpus in placement:
                after[node] -= gpus
            for rest in rec(j + 1, after):
                yield (placement, *rest)

    yield from rec(0, np.asarray(free, dtype=np.int64).copy())
