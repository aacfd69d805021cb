"""Normalised model-quality curves from the real Pollux validation runs.

A :class:`QualityCurve` maps the fraction of training done (0 = untrained, 1 = the
model's full number of epochs) to a normalised quality in [0, 1]: 0 is the metric of
an untrained model (chance accuracy, WER 100 %, the worst observed YOLOv3 loss), 1 the
best metric the real runs reached. It is built by ``scripts/fit_model_zoo.py`` from
``traces/<model>/validation-*.csv`` (direction-aware, running best so quality never
decreases, averaged over the profiled batch sizes) and shipped in the model-zoo JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from cluster_envs.types import Immutable

#: Tolerance when checking that table values lie in [0, 1] and never decrease.
TABLE_TOL = 1e-9


@dataclass(frozen=True)
class QualityCurve(Immutable):
    """Piecewise-linear, non-decreasing quality vs fraction of training.

    Attributes:
        fractions: Fractions of training, strictly increasing, from 0 to 1.
        qualities: Normalised quality at each fraction, non-decreasing, in [0, 1].
    """

    fractions: tuple[float, ...]
    qualities: tuple[float, ...]

    def __post_init__(self) -> None:
        f = tuple(float(x) for x in self.fractions)
        q = tuple(float(x) for x in self.qualities)
        if len(f) != len(q) or len(f) < 2:
            raise ValueError("QualityCurve needs >= 2 (fraction, quality) pairs of equal length")
        if f[0] != 0.0 or f[-1] != 1.0 or any(b <= a for a, b in zip(f, f[1:], strict=False)):
            raise ValueError("QualityCurve fractions must increase strictly from 0 to 1")
        if any(not (-TABLE_TOL <= x <= 1 + TABLE_TOL) for x in q):
            raise ValueError("QualityCurve qualities must lie in [0, 1]")
        if any(b < a - TABLE_TOL for a, b in zip(q, q[1:], strict=False)):
            raise ValueError("QualityCurve qualities must never decrease")
        object.__setattr__(self, "fractions", f)
        object.__setattr__(self, "qualities", q)

    @classmethod
    def from_points(
        cls, fractions: Sequence[float] | np.ndarray, qualities: Sequence[float] | np.ndarray
    ) -> QualityCurve:
        """Build from raw points: clip to [0, 1] and apply a running max."""
        q = np.maximum.accumulate(np.clip(np.asarray(qualities, dtype=float), 0.0, 1.0))
        return cls(tuple(float(x) for x in fractions), tuple(float(x) for x in q))

    @overload
    def quality(self, fraction: float) -> float: ...
    @overload
    def quality(self, fraction: np.ndarray) -> np.ndarray: ...

    def quality(self, fraction: ArrayLike) -> float | np.ndarray:
        """Normalised quality after ``fraction`` of training (clamped to [0, 1]).

        Accepts a scalar (returns a float) or an array (returns an array).
        """
        value = np.interp(
            np.clip(np.asarray(fraction, dtype=float), 0.0, 1.0), self.fractions, self.qualities
        )
        return float(value) if np.ndim(value) == 0 else value

    def to_dict(self) -> dict[str, list[float]]:
        """JSON-ready form (rounded to 6 decimals)."""
        return {
            "fractions": [round(x, 6) for x in self.fractions],
            "qualities": [round(x, 6) for x in self.qualities],
        }

    @classmethod
    def from_dict(cls, data: dict[str, list[float]]) -> QualityCurve:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(data["fractions"]), tuple(data["qualities"]))


__all__ = ["QualityCurve"]
