"""Model quality over time, integrated exactly from the jobs' progress.

The quality of job ``j`` at time ``t`` is ``q_j(t) = Q_m(f_j(t))``: the normalised
quality curve ``Q_m`` of its model (:func:`cluster_envs.perf.zoo.quality_curve`; a job
without one -- HPC or hand-made -- uses ``Q(f) = f``) at the fraction of its training
done, ``f_j = iterations done / total iterations`` (ground truth: these are metrics and
rewards, never policy inputs). Between two simulator events every job's speed is
constant, so ``f_j`` is linear in time there, and ``Q_m`` is piecewise linear in ``f``:
:class:`QualityTracker` integrates ``q_j`` over each such interval exactly through the
antiderivative of ``Q_m``. It is a simulator observer (every change of time reaches its
:meth:`QualityTracker.on_advance`), so the no-gym runner and the envs share one
integrator, and their metrics agree to the last bit.

Metrics (:func:`quality_metrics`), times from the workload's first submission:

* ``quality_auc``: the mean over jobs of ``(1/W) * integral of q_j over [s_j, s_j + W]``
  with ``s_j`` the job's submission and ``W = window_s`` (default 1 h) -- the area under
  the cluster's summed normalised-quality curve, restricted to each job's first ``W``
  seconds, per job-window. In [0, 1], higher is better. After a job leaves the system
  (finished, or unfinished when the episode stops) its quality is held constant to the
  window's end; a job never submitted counts 0.
* ``time_to_quality_s``: when the last job reached ``threshold`` (0.95) times its final
  quality ``Q_m(1)`` ("within 5 % of its final quality"; NaN if one never did).
* ``time_to_best_s``: when the first of the jobs with the highest final quality reached
  that threshold -- when a user could first pick a best model (NaN if none did).
* ``mean_final_quality``: mean of ``q_j`` at the end (1.0 when every zoo job finished).
* ``quality_gap_job_h``: ``sum_j integral over [s_j, finish_j] of (Q_m(1) - q_j)``, in
  job-hours: quality missing while jobs are in the system (window-free; lower is better).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.sim.columns import job_column, per_job
from cluster_envs.sim.copying import copy_sharing
from cluster_envs.sim.curves import (
    LINEAR_QUALITY,
    MIN_FRACTION_SPAN,
    CurveIntegral,
    curve_integral,
)
from cluster_envs.sim.observers import SimObserver
from cluster_envs.types import Immutable, JobState

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: Default window of ``quality_auc`` after each job's submission (s).
QUALITY_WINDOW_S = 3600.0
#: A job is "within 5 % of its final quality" at this fraction of it.
QUALITY_THRESHOLD = 0.95
_HOUR_S = 3600.0
_PENDING = int(JobState.PENDING)


@dataclass(frozen=True)
class QualitySettings(Immutable):
    """How quality metrics are computed.

    Attributes:
        window_s: ``W`` of ``quality_auc`` (s after each submission).
        threshold: Fraction of the final quality that counts as "reached".
    """

    window_s: float = QUALITY_WINDOW_S
    threshold: float = QUALITY_THRESHOLD

    def __post_init__(self) -> None:
        if not (self.window_s > 0 and math.isfinite(self.window_s)):
            raise ConfigError(f"quality window_s must be finite and > 0, got {self.window_s}")
        if not 0 < self.threshold <= 1:
            raise ConfigError(f"quality threshold must lie in (0, 1], got {self.threshold}")


#: The tracker's per-job containers of immutable values (curves, floats, flags, pairs).
_TRACKER_VALUES = frozenset({"curves", "_final", "_submit", "_target", "_reached", "_q_at"})


class QualityTracker(SimObserver):
    """Integrates every job's quality while it is in the system (see module docstring).

    A simulator observer: :func:`track_quality` attaches it.

    Args:
        sim: The simulator (read for progress, rates, queue and running set).
        settings: Window and threshold of the metrics.
    """

    def __init__(self, sim: Simulator, settings: QualitySettings) -> None:
        self.sim = sim
        self.settings = settings
        n = len(sim.jobs)
        self.curves = per_job(sim.jobs, lambda job: curve_integral(job.model))
        self.final = np.array([c.final for c in self.curves])
        self.target_fraction = np.array(
            [c.first_fraction(settings.threshold * c.final) for c in self.curves]
        )
        self.submit = np.array(job_column(sim.jobs, "submit_time_s"))
        self.total = np.array(job_column(sim.jobs, "total_iterations"))
        # Plain-float copies for the per-job loop of account() (numpy scalars are slow).
        self._final = self.final.tolist()
        self._submit = self.submit.tolist()
        self._target = self.target_fraction.tolist()
        self._reached = [False] * n
        self.window_area = np.zeros(n)
        self.reach_s = np.full(n, np.nan)
        self.gap_area = 0.0
        self._terms = (0.0, 0.0, 0.0)
        self._terms_version = -1
        self._q_at: dict[int, tuple[float, float]] = {}  # job -> (fraction, its quality)
        self._done = (-1, 0.0, self.window_area)  # see _out_of_system

    def __deepcopy__(self, memo: dict[int, Any]) -> QualityTracker:
        """A fork's copy: the per-job lists of floats, flags and curves copied one level
        (:mod:`cluster_envs.sim.copying`)."""
        return copy_sharing(self, memo, _TRACKER_VALUES)

    def fraction(self, j: int) -> float:
        """Fraction of job ``j``'s training done now (1 once finished)."""
        return min(self.sim.iterations_done(j) / self.total[j], 1.0)

    def quality(self, j: int) -> float:
        """Quality of job ``j`` now (0 before it is submitted)."""
        if not math.isnan(self.sim.finish_s[j]):
            return float(self.final[j])
        return self.curves[j].quality(self.fraction(j))

    def total_quality(self) -> float:
        """Summed quality of every submitted job now (finished ones at their final)."""
        sim = self.sim
        done = float(self.final[~np.isnan(sim.finish_s)].sum())
        return done + sum(self.quality(j) for j in (*sim.queue, *sim.active))

    def on_advance(self, sim: Simulator, t0: float, t1: float) -> None:
        """Observer hook: the state was constant over ``[t0, t1)``."""
        self.account(t0, t1)

    def account(self, t0: float, t1: float) -> None:
        """Integrate the interval ``[t0, t1]`` (the simulator's clock is still at t0)."""
        dt = t1 - t0
        if dt <= 0:
            return
        sim = self.sim
        ids = [*sim.queue, *sim.active]
        if not ids:
            return
        # Fractions of every job at once (the same float operations as fraction(j)),
        # then one scalar pass in plain floats: the sums keep their job order.
        idx = np.array(ids, dtype=np.int64)
        total = self.total[idx]
        rate = sim.rate[idx]
        done = sim.progress[idx] + rate * (sim.now_s - sim.last_update_s[idx])
        f0s = np.minimum(done / total, 1.0)
        f1s = np.minimum(f0s + rate * dt / total, 1.0)
        window_s = self.settings.window_s
        curves, final, submit = self.curves, self._final, self._submit
        window_area, target_fraction, reached = self.window_area, self._target, self._reached
        gap = self.gap_area
        for j, f0, f1 in zip(ids, f0s.tolist(), f1s.tolist(), strict=True):
            curve = curves[j]
            if f0 == f1:  # not running: time_integral's flat case, (f0 + f1) / 2 == f0
                area = dt * self._quality_at(j, f0)
            else:
                area = curve.time_integral(f0, f1, dt)
            gap += final[j] * dt - area
            end = submit[j] + window_s
            if t1 <= end:
                window_area[j] += area
            elif t0 < end:
                fe = f0 + (f1 - f0) * (end - t0) / dt
                window_area[j] += curve.time_integral(f0, fe, end - t0)
            target = target_fraction[j]
            if f1 >= target and not reached[j]:
                share = 0.0 if f0 >= target else (target - f0) / (f1 - f0)
                self.reach_s[j] = t0 + share * dt
                reached[j] = True
        self.gap_area = gap

    def _current(self) -> tuple[list[int], list[float]]:
        """The jobs in the system (queue, then running) and their quality now."""
        sim = self.sim
        ids = [*sim.queue, *sim.active]
        if not ids:
            return ids, []
        idx = np.array(ids, dtype=np.int64)
        done = sim.progress[idx] + sim.rate[idx] * (sim.now_s - sim.last_update_s[idx])
        fracs = np.minimum(done / self.total[idx], 1.0).tolist()
        return ids, [self._quality_at(j, f) for j, f in zip(ids, fracs, strict=True)]

    def _quality_at(self, j: int, fraction: float) -> float:
        """``curves[j].quality(fraction)``, kept per job while its fraction stays (a
        queued job's, across events)."""
        hit = self._q_at.get(j)
        if hit is not None and hit[0] == fraction:
            return hit[1]
        q = self.curves[j].quality(fraction)
        self._q_at[j] = (fraction, q)
        return q

    def _held(
        self, current: tuple[list[int], list[float]] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per job: window area with its last quality held to the window's end, that
        last quality, and the reach times (a job finished within one instant reached its
        quality at its end)."""
        sim = self.sim
        ids, q_now = current if current is not None else self._current()
        finish = sim.finish_s
        finished = ~np.isnan(finish)
        submitted = sim.state != _PENDING  # never submitted: quality 0 throughout
        last_q = np.where(finished, self.final, 0.0)
        last_q[ids] = q_now
        reach = self.reach_s.copy()
        fill = finished & np.isnan(reach)
        reach[fill] = finish[fill]
        covered = np.where(finished, finish, sim.now_s)
        held = self.submit + self.settings.window_s - np.maximum(covered, self.submit)
        area = self.window_area.copy()
        area[submitted] += (last_q * np.maximum(held, 0.0))[submitted]
        return area, last_q, reach

    def reward_terms(self) -> tuple[float, float, float]:
        """``(total_quality(), gap_area, projected_auc_job_windows())`` in one pass
        (recomputed only when the simulator's state version moved)."""
        version = self.sim.state_version
        if self._terms_version != version:
            ids, q_now = self._current()
            finished, window_s = self.sim.num_finished, self.settings.window_s
            if self._done[0] != finished or self._terms_version < 0:  # the finished set
                self._done = self._out_of_system(finished)  # only grows: its size keys it
            # _held()'s area, every job out of the system as kept, those in it now
            area = self._done[2].copy()
            window_area, submit, now = self.window_area, self._submit, self.sim.now_s
            area[ids] = [
                float(window_area[j]) + q * max(submit[j] + window_s - max(now, submit[j]), 0.0)
                for j, q in zip(ids, q_now, strict=True)
            ]
            total = self._done[1] + sum(q_now)
            auc = float(area.sum() / window_s)
            self._terms, self._terms_version = (total, self.gap_area, auc), version
        return self._terms

    def _out_of_system(self, finished: int) -> tuple[int, float, np.ndarray]:
        """``(finished, their summed final quality, _held()'s area with the finished
        jobs' entries final and the never-submitted ones 0)``."""
        finish = self.sim.finish_s
        ended = ~np.isnan(finish)
        area = self.window_area.copy()
        held = self.submit + self.settings.window_s - np.maximum(finish, self.submit)
        area[ended] += (self.final * np.maximum(held, 0.0))[ended]
        return finished, float(self.final[ended].sum()), area

    def projected_auc_job_windows(self) -> float:
        """``quality_auc * n`` if the episode stopped now (every submitted job's current
        quality held to its window's end), in job-windows.

        Its increments are the AUC reward of MetisAllocation: they telescope to
        ``n * quality_auc``, and a slice's increment is each job's quality gained times
        the share of its window still ahead, plus the exact area already accrued.
        """
        return float(self._held()[0].sum() / self.settings.window_s)

    def metrics(self) -> dict[str, float]:
        """The quality metrics of the episode so far (see the module docstring)."""
        n = len(self.sim.jobs)
        window = self.settings.window_s
        area, last_q, reach = self._held()
        start = float(self.submit.min()) if n else 0.0
        best = self.final >= self.final.max() - 1e-12 if n else np.zeros(0, bool)
        best_reach = reach[best]
        best_reach = best_reach[~np.isnan(best_reach)]
        all_reached = n > 0 and not np.isnan(reach).any()
        return {
            "quality_auc": float(area.sum() / (n * window)) if n else float("nan"),
            "time_to_quality_s": float(reach.max() - start) if all_reached else float("nan"),
            "time_to_best_s": float(best_reach.min() - start) if best_reach.size else float("nan"),
            "mean_final_quality": float(last_q.mean()) if n else float("nan"),
            "quality_gap_job_h": float(self.gap_area / _HOUR_S),
        }


def track_quality(sim: Simulator, settings: QualitySettings | None = None) -> QualityTracker:
    """Attach a quality tracker to a fresh simulator (before any time has passed).

    Raises:
        ValueError: The simulator has already run (its quality history would be lost).
    """
    if sim.now_s != 0.0 or sim.num_events or sim.record.busy_gpu_s or sim.record.times:
        raise ValueError("track_quality needs a fresh simulator (attach before running it)")
    if _tracker_of(sim) is not None:
        raise ValueError("track_quality: this simulator already has a quality tracker")
    tracker = QualityTracker(sim, settings or QualitySettings())
    sim.add_observer(tracker)
    return tracker


def _tracker_of(sim: Simulator) -> QualityTracker | None:
    for observer in sim.observers:
        if isinstance(observer, QualityTracker):
            return observer
    return None


def quality_metrics(sim: Simulator) -> dict[str, float]:
    """The quality metrics of ``sim`` (which :func:`track_quality` must have set up)."""
    tracker = _tracker_of(sim)
    if tracker is None:
        raise ValueError("quality_metrics needs a simulator set up with track_quality(sim)")
    return tracker.metrics()


__all__ = [
    "LINEAR_QUALITY",
    "MIN_FRACTION_SPAN",
    "QUALITY_THRESHOLD",
    "QUALITY_WINDOW_S",
    "CurveIntegral",
    "QualitySettings",
    "QualityTracker",
    "curve_integral",
    "quality_metrics",
    "track_quality",
]
