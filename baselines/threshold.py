"""Threshold-based scaling of moldable jobs, and the tuned ``best-threshold`` policy.

Both rules take jobs in queue order (strict FIFO) and differ in how many GPUs each gets:

* **Efficiency threshold** (``threshold-eta``): the largest level ``n`` whose parallel
  efficiency ``S(n) / n`` is at least ``eta``, with ``S(n)`` the job's own throughput
  model on ``n`` packed GPUs over one GPU (fastest GPU type, the cluster's network). If
  that many GPUs are not free, the largest smaller level that fits starts now.
* **Queue-length threshold** (``threshold-queue``): the largest level that fits while
  fewer than ``q`` other jobs wait, else the smallest level (many short-queue systems
  scale out when idle and in when busy).

``best-threshold`` is whichever of the two, with its parameter, gave the lowest mean
average JCT on the *training* seeds of an env preset. ``scripts/tune_thresholds.py``
makes that choice and writes ``baselines/data/best_threshold.json`` (with the sweep
table); this module only reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baselines.moldable import (
    DEFAULT_LEVELS,
    FifoSizingScheduler,
    MoldableScheduler,
    Plan,
    packed_rate,
)
from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError
from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.sim.view import ClusterView, JobStatus

#: Default parallel-efficiency threshold.
DEFAULT_ETA = 0.5
#: Default queue-length threshold (other waiting jobs).
DEFAULT_QUEUE_THRESHOLD = 4
#: Where ``scripts/tune_thresholds.py`` writes the tuned choice.
BEST_THRESHOLD_FILE = Path(__file__).resolve().parent / "data" / "best_threshold.json"


class EfficiencyThresholdScheduler(FifoSizingScheduler):
    """FIFO; each job gets the largest level with parallel efficiency ``>= eta``.

    Args:
        eta: Efficiency threshold in ``(0, 1]``.
        levels: Allowed GPU counts (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """

    name = "threshold-eta"

    def __init__(
        self,
        eta: float = DEFAULT_ETA,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        super().__init__(levels, window, placement)
        if not 0.0 < eta <= 1.0:
            raise ConfigError(f"threshold-eta needs 0 < eta <= 1, got {eta}")
        self.eta = float(eta)

    def efficiency(self, view: ClusterView, job: JobStatus, num_gpus: int) -> float:
        """``S(n) / n`` of ``job`` on ``num_gpus`` packed GPUs (1 at one GPU)."""
        return packed_rate(view, job, num_gpus) / (num_gpus * packed_rate(view, job, 1))

    def target_level(self, view: ClusterView, job: JobStatus) -> int:
        """The largest level with efficiency ``>= eta`` (the smallest level if none)."""
        levels = self._levels(job)
        good = [n for n in levels if self.efficiency(view, job, n) >= self.eta]
        return max(good, default=levels[0])

    def _preferences(self, view: ClusterView, plan: Plan, job: JobStatus) -> Sequence[int]:
        target = self.target_level(view, job)
        return [n for n in self._levels(job)[::-1] if n <= target]


class QueueThresholdScheduler(FifoSizingScheduler):
    """FIFO; maximum parallelism while fewer than ``q`` other jobs wait, else minimum.

    Args:
        q: Queue-length threshold (other queued jobs), ``>= 1``.
        levels: Allowed GPU counts (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """

    name = "threshold-queue"

    def __init__(
        self,
        q: int = DEFAULT_QUEUE_THRESHOLD,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
    ) -> None:
        super().__init__(levels, window, placement)
        if int(q) != q or q < 1:
            raise ConfigError(f"threshold-queue needs an integer q >= 1, got {q}")
        self.q = int(q)

    def _preferences(self, view: ClusterView, plan: Plan, job: JobStatus) -> Sequence[int]:
        levels = self._levels(job)
        others = plan.num_queued - 1  # the whole queue, not only the window
        return levels[::-1] if others < self.q else levels[:1]


#: Rule names in the tuning file -> class.
THRESHOLD_RULES: dict[str, Callable[..., FifoSizingScheduler]] = {
    "threshold-eta": EfficiencyThresholdScheduler,
    "threshold-queue": QueueThresholdScheduler,
}


def load_best_threshold(path: str | Path | None = None) -> dict[str, Any]:
    """The tuning file written by ``scripts/tune_thresholds.py``."""
    file = Path(path) if path is not None else BEST_THRESHOLD_FILE
    if not file.is_file():
        raise ConfigError(
            f"no threshold tuning file at {file}; create it with "
            "`python scripts/tune_thresholds.py`"
        )
    return json.loads(file.read_text())


def best_threshold(
    preset: str = "default",
    path: str | Path | None = None,
    levels: Sequence[int] = DEFAULT_LEVELS,
    window: int | None = None,
    placement: PlacementPolicy | None = None,
) -> MoldableScheduler:
    """The threshold rule tuned for an env preset (see the module docstring).

    Args:
        preset: MoldableScheduling-v0 preset the choice was tuned on.
        path: Tuning file (default: the shipped ``baselines/data/best_threshold.json``).
        levels: Allowed GPU counts (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit).
    """
    presets = load_best_threshold(path)["presets"]
    if preset not in presets:
        raise ConfigError(
            f"best-threshold was not tuned for preset {preset!r}{suggest(preset, presets)}; "
            f"tuned: {', '.join(sorted(presets))}"
        )
    best = presets[preset]["best"]
    rule = best["policy"]
    if rule not in THRESHOLD_RULES:
        raise ConfigError(
            f"unknown threshold rule {rule!r} in the tuning file{suggest(rule, THRESHOLD_RULES)}"
        )
    param = float(best["value"])
    value: float | int = int(param) if rule == "threshold-queue" else param
    policy = THRESHOLD_RULES[rule](value, levels, window, placement)
    policy.name = "best-threshold" if preset == "default" else f"best-threshold-{preset}"
    return policy


def best_threshold_pollux(**kwargs: Any) -> MoldableScheduler:
    """``best-threshold`` as tuned on the ``pollux`` preset."""
    return best_threshold("pollux", **kwargs)


__all__ = [
    "BEST_THRESHOLD_FILE",
    "EfficiencyThresholdScheduler",
    "QueueThresholdScheduler",
    "best_threshold",
    "best_threshold_pollux",
    "load_best_threshold",
]
