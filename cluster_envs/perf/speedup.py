"""Moldable speedup curves ``S(n)`` with ``S(1) = 1``.

* :class:`Amdahl` -- ``S(n) = 1 / ((1 - f) + f / n)`` for parallel fraction ``f``.
* :class:`PowerLaw` -- ``S(n) = n ** p``.
* :class:`Downey` -- Downey's two-regime model (A. B. Downey, "A model for speedup of
  parallel programs", UC Berkeley TR CSD-97-933, 1997) with average parallelism ``A``
  and variance in parallelism ``sigma``.
* :class:`TabulatedSpeedup` -- measured points, log-linear interpolation.
* :func:`speedup_from_speed_model` -- the tabulated curve of any SpeedModel on packed
  placements.

All satisfy :class:`cluster_envs.perf.speed.Speedup`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from cluster_envs.perf.speed import SpeedModel, packed_shape
from cluster_envs.types import Immutable


def _check_n(n: float) -> None:
    if not n >= 1:
        raise ValueError(f"speedup needs n >= 1 GPUs, got {n}")


@dataclass(frozen=True)
class Amdahl(Immutable):
    """Amdahl's law with parallel fraction ``f`` in [0, 1]."""

    f: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.f <= 1.0:
            raise ValueError(f"Amdahl parameter f must lie in [0, 1], got {self.f}")

    def speedup(self, n: int) -> float:
        """``1 / ((1 - f) + f / n)``."""
        _check_n(n)
        return 1.0 / ((1.0 - self.f) + self.f / n)


@dataclass(frozen=True)
class PowerLaw(Immutable):
    """``S(n) = n ** p`` with exponent ``p`` in [0, 1]."""

    p: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"PowerLaw parameter p must lie in [0, 1], got {self.p}")

    def speedup(self, n: int) -> float:
        """``n ** p``."""
        _check_n(n)
        return float(n) ** self.p


@dataclass(frozen=True)
class Downey(Immutable):
    """Downey's speedup model with average parallelism ``A >= 1`` and ``sigma >= 0``.

    Low variance (``sigma <= 1``)::

        S(n) = A n / (A + sigma (n - 1) / 2)            for 1 <= n <= A
        S(n) = A n / (sigma (A - 1/2) + n (1 - sigma/2)) for A <= n <= 2A - 1
        S(n) = A                                         for n >= 2A - 1

    High variance (``sigma >= 1``)::

        S(n) = n A (sigma + 1) / (sigma (n + A - 1) + A)  for 1 <= n <= A + A sigma - sigma
        S(n) = A                                           beyond

    Both branches agree at ``sigma = 1``; ``sigma = 0`` is linear speedup up to ``A``.
    """

    A: float
    sigma: float

    def __post_init__(self) -> None:
        if not (self.A >= 1 and math.isfinite(self.A)):
            raise ValueError(f"Downey parameter A must be finite and >= 1, got {self.A}")
        if not (self.sigma >= 0 and math.isfinite(self.sigma)):
            raise ValueError(f"Downey parameter sigma must be finite and >= 0, got {self.sigma}")

    def speedup(self, n: int) -> float:
        """Downey's ``S(n)`` (see the class docstring)."""
        _check_n(n)
        a, s = self.A, self.sigma
        if s <= 1.0:
            if n <= a:
                return a * n / (a + s * (n - 1) / 2.0)
            if n <= 2 * a - 1:
                return a * n / (s * (a - 0.5) + n * (1.0 - s / 2.0))
            return a
        if n <= a + a * s - s:
            return n * a * (s + 1.0) / (s * (n + a - 1.0) + a)
        return a


@dataclass(frozen=True)
class TabulatedSpeedup(Immutable):
    """Speedup measured at some GPU counts, interpolated linearly in ``log(n)``.

    Beyond the largest measured count the curve stays flat. ``(1, 1.0)`` is added when
    the table does not start at ``n = 1``.

    Attributes:
        points: ``((n, S(n)), ...)`` with strictly increasing ``n >= 1`` and ``S > 0``.
    """

    points: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        pts = tuple((float(n), float(s)) for n, s in self.points)
        if not pts:
            raise ValueError("TabulatedSpeedup needs at least one point")
        if pts[0][0] > 1:
            pts = ((1.0, 1.0), *pts)
        ns = [n for n, _ in pts]
        if ns[0] != 1 or any(b <= a for a, b in zip(ns, ns[1:], strict=False)):
            raise ValueError(f"TabulatedSpeedup points need strictly increasing n >= 1, got {ns}")
        if not math.isclose(pts[0][1], 1.0, rel_tol=1e-9):
            raise ValueError(f"TabulatedSpeedup points need S(1) == 1, got {pts[0][1]}")
        if any(not (s > 0 and math.isfinite(s)) for _, s in pts):
            raise ValueError("TabulatedSpeedup points need finite S > 0")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "_log_n", tuple(math.log(n) for n in ns))

    def speedup(self, n: int) -> float:
        """Interpolated ``S(n)``: linear in ``log n`` between points, flat beyond."""
        _check_n(n)
        pts = self.points
        if n >= pts[-1][0]:
            return pts[-1][1]
        log_n: tuple[float, ...] = self._log_n  # type: ignore[attr-defined]
        x = math.log(n)
        i = bisect.bisect_right(log_n, x) - 1
        x0, x1 = log_n[i], log_n[i + 1]
        s0, s1 = pts[i][1], pts[i + 1][1]
        return s0 + (s1 - s0) * (x - x0) / (x1 - x0)


def speedup_from_speed_model(
    model: SpeedModel, gpus_per_node: int, max_gpus: int
) -> TabulatedSpeedup:
    """``S(n) = thr(packed n) / thr(1 GPU)`` for ``n = 1..max_gpus``.

    Args:
        model: Any SpeedModel (e.g. a fitted PolluxThroughput).
        gpus_per_node: Node size used to pack ``n`` GPUs (``packed_shape``).
        max_gpus: Largest GPU count tabulated; the curve is flat beyond.
    """
    if max_gpus < 1:
        raise ValueError(f"max_gpus must be >= 1, got {max_gpus}")
    base = model.throughput((1,))
    points: Sequence[tuple[float, float]] = [
        (float(n), model.throughput(packed_shape(n, gpus_per_node)) / base)
        for n in range(1, max_gpus + 1)
    ]
    return TabulatedSpeedup(tuple(points))


__all__ = ["Amdahl", "Downey", "PowerLaw", "TabulatedSpeedup", "speedup_from_speed_model"]
