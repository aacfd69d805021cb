"""Piecewise-linear quality curves with their exact antiderivative (plain Python).

:class:`CurveIntegral` evaluates ``Q(f)``, ``integral of Q over [0, f]`` and the time
integral of ``Q`` along a linear progress; :func:`curve_integral` builds (and caches) a
model's. :mod:`cluster_envs.sim.quality` integrates every job's quality with them.
"""

from __future__ import annotations

import bisect
from functools import lru_cache

from cluster_envs.perf.quality import QualityCurve
from cluster_envs.types import Immutable

#: Fraction spans shorter than this are integrated at their midpoint (float safety).
MIN_FRACTION_SPAN = 1e-12
#: Quality curve of jobs whose model has none (quality = fraction of training done).
LINEAR_QUALITY = QualityCurve((0.0, 1.0), (0.0, 1.0))


class CurveIntegral(Immutable):
    """A piecewise-linear quality curve with its exact antiderivative and inverse.

    Scalar evaluation in plain Python (bisection over the breakpoints): this runs for
    every job at every simulator event, where numpy's per-call overhead would dominate.
    """

    def __init__(self, curve: QualityCurve) -> None:
        self.f = [float(x) for x in curve.fractions]
        self.q = [float(x) for x in curve.qualities]
        self.cum = [0.0]
        for k in range(len(self.f) - 1):
            self.cum.append(
                self.cum[-1] + (self.f[k + 1] - self.f[k]) * (self.q[k + 1] + self.q[k]) / 2
            )
        self.final = self.q[-1]
        self._last = len(self.f) - 2

    def _segment(self, x: float) -> int:
        return min(bisect.bisect_right(self.f, x) - 1, self._last)

    def quality(self, fraction: float) -> float:
        """``Q(f)`` with ``f`` clamped to [0, 1]."""
        x = 0.0 if fraction <= 0.0 else (1.0 if fraction >= 1.0 else fraction)
        fs, qs = self.f, self.q
        k = bisect.bisect_right(fs, x) - 1  # _segment(x), inlined (a hot path)
        if k > self._last:
            k = self._last
        f0 = fs[k]
        return qs[k] + (qs[k + 1] - qs[k]) * (x - f0) / (fs[k + 1] - f0)

    def area(self, fraction: float) -> float:
        """``integral of Q over [0, f]`` (exact trapezoids), ``f`` clamped to [0, 1]."""
        x = 0.0 if fraction <= 0.0 else (1.0 if fraction >= 1.0 else fraction)
        fs, qs = self.f, self.q
        k = bisect.bisect_right(fs, x) - 1  # _segment(x), inlined
        if k > self._last:
            k = self._last
        f0, q0 = fs[k], qs[k]
        qx = q0 + (qs[k + 1] - q0) * (x - f0) / (fs[k + 1] - f0)
        return self.cum[k] + (x - f0) * (q0 + qx) / 2.0

    def time_integral(self, f0: float, f1: float, dt: float) -> float:
        """``integral of Q(f(t)) dt`` over ``dt`` seconds with ``f`` linear from f0 to f1."""
        if abs(f1 - f0) < MIN_FRACTION_SPAN:
            return dt * self.quality((f0 + f1) / 2.0)
        return dt * (self.area(f1) - self.area(f0)) / (f1 - f0)

    def first_fraction(self, quality: float) -> float:
        """The smallest fraction with ``Q(f) >= quality`` (1.0 if none reaches it)."""
        for k, q in enumerate(self.q):
            if q >= quality:
                if k == 0:
                    return 0.0
                f0, f1, q0 = self.f[k - 1], self.f[k], self.q[k - 1]
                return f0 + (f1 - f0) * (quality - q0) / (q - q0)
        return 1.0


@lru_cache(maxsize=64)
def curve_integral(model: str) -> CurveIntegral:
    """The :class:`CurveIntegral` of a zoo model (``Q(f) = f`` for other models)."""
    from cluster_envs.perf import zoo

    curve = zoo.quality_curve(model) if model in zoo.ZOO_MODELS else LINEAR_QUALITY
    return CurveIntegral(curve)


__all__ = ["LINEAR_QUALITY", "MIN_FRACTION_SPAN", "CurveIntegral", "curve_integral"]
