"""MetisAllocation observations: each job by its fitted curves, plus the cluster.

Every value lies in [0, 1] (durations on the log scale of
:func:`cluster_envs.envs.normalise.norm_time`); :func:`metis_layout` declares every index. A job is described only by what a
scheduler can learn: its *fitted* loss curve (refitted as noisy loss observations
arrive; the model's prior curve before that), the *estimated* fraction of training done
and the quality that implies, and a throughput model fitted on arrival to a few noisy
small-scale profiling runs (:class:`ThroughputProfile`) -- never the true job length.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.config import ClusterConfig
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.metis_fresh import OBS_NORM, PENDING_INDEX, fill_slots
from cluster_envs.envs.metis_fresh import QUALITY_INDEX as QUALITY_INDEX
from cluster_envs.envs.metis_profile import ThroughputProfile, profile_job
from cluster_envs.envs.normalise import MODEL_NAMES, norm_time, prior_curve_features, squash
from cluster_envs.perf import zoo
from cluster_envs.sim.quality import curve_integral

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import LossCurveParams

#: Counts at which the fitted parallel efficiency ``S(n) / n`` is shown (and the
#: predicted quality gain over one slice).
FEATURE_GPUS = (1, 2, 4, 8, 16)
#: Efficiencies above this (super-linear, from gradient accumulation) are clipped.
MAX_EFFICIENCY = 2.0
#: Slot fields that follow from the job's state, allocation, age and service (the rest
#: are static or follow from its progress and length estimate): queued, rescaling,
#: running, gpus, pending_gpus, age, attained_service, num_loss_observations.
STATE_FIELDS = (1, 2, 3, 4, 5, 9, 13, 18)


def slot_names(levels: tuple[int, ...] = FEATURE_GPUS) -> list[str]:
    """Names of the per-slot features, in order."""
    names = ["present", "queued", "rescaling", "running", "gpus", "pending_gpus"]
    names += ["requested_gpus", "min_gpus", "max_gpus", "age", "est_progress"]
    names += ["est_quality", "est_remaining@1", "attained_service", "curve_fitted"]
    names += ["curve_c0", "curve_b1", "curve_b2", "num_loss_observations"]
    names += ["profile_theta0", "profile_theta1", "profile_theta2"]
    names += [f"efficiency@{n}" for n in levels]
    names += [f"quality_gain@{n}" for n in levels]
    names += [f"model={m}" for m in MODEL_NAMES]
    return names


CLUSTER_NAMES = [
    "free_gpu_fraction",
    "pending_free_fraction",
    "jobs_in_system",
    "waiting_beyond_slots",
    "running_jobs",
    "mean_est_quality",
    "time",
]


#: Slot fields that come from the job's loss curve (its fit, or the length estimated from
#: it): ``no_curve`` zeroes them, leaving state, sizes, age, attained service, the
#: throughput profile and the model id.
CURVE_DERIVED = (
    "est_progress",
    "est_quality",
    "est_remaining@1",
    "curve_fitted",
    "curve_c0",
    "curve_b1",
    "curve_b2",
    "num_loss_observations",
    *(f"quality_gain@{n}" for n in FEATURE_GPUS),
)
#: Cluster fields computed from curve-derived slot fields (the mean of ``est_quality``).
CURVE_DERIVED_CLUSTER = ("mean_est_quality",)
#: Slot fields whose value ``oracle`` replaces by the hidden truth (the true length and
#: loss curve instead of the estimates); every other field is the same as ``fitted``.
ORACLE_REPLACED = tuple(n for n in CURVE_DERIVED if n != "num_loss_observations")
#: What the per-job curve features show, by ``job_features`` value: ``(fields replaced
#: by the truth, fields zeroed)``. fitted is the real setting, oracle (ablation) shows the
#: hidden truth, no_curve (ablation) zeroes every field derived from the loss curve.
JOB_FEATURE_ABLATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fitted": ((), ()),
    "oracle": (ORACLE_REPLACED, ()),
    "no_curve": ((), CURVE_DERIVED),
}
JOB_FEATURES = tuple(JOB_FEATURE_ABLATIONS)


def metis_layout(num_slots: int) -> ObsLayout:
    """The MetisAllocation observation: ``num_slots`` job slots, then the cluster."""
    return ObsLayout(tuple(slot_names()), num_slots, tuple(CLUSTER_NAMES))


class MetisEncoder:
    """Encodes the MetisAllocation state; :meth:`describe` names every index.

    Per slot (``num_slots`` of them, a job keeps its slot until it finishes): the fields
    of :func:`slot_names`; then the cluster fields of ``CLUSTER_NAMES``. GPU counts are
    over ``max_gpus_per_job``; ``est_quality`` and ``quality_gain@n`` use the model's
    normalised quality curve at the *estimated* fraction done; ``curve_*`` is the fitted
    loss curve in fraction-of-estimated-training units (``c0 = b0 * est_total``),
    squashed by ``x / (1 + x)``; ``profile_theta*`` the fitted throughput model over its
    1-GPU time.
    """

    def __init__(
        self,
        num_slots: int,
        max_gpus: int,
        cluster: ClusterConfig,
        slice_s: float,
        job_features: str = "fitted",
    ) -> None:
        self.job_features = job_features
        self.num_slots = num_slots
        self.max_gpus = float(max_gpus)
        self.cluster = cluster
        self.slice_s = slice_s
        self.layout = metis_layout(num_slots)
        self.slot_size = self.layout.slot_size
        self.size = self.layout.size
        self.space = self.layout.space()
        self._static: dict[int, np.ndarray] = {}
        self._profiles: dict[int, ThroughputProfile] = {}
        self._seed = 0
        self._keep = self.layout.slot_mask(JOB_FEATURE_ABLATIONS[job_features][1])
        self._keep_all = bool(np.all(self._keep == 1))
        self._rate_cache: dict[int, tuple[float, list[float | None]]] = {}
        self._rows: dict[tuple[int, int], np.ndarray] = {}
        self._rows_sim: Simulator | None = None
        self._rows_version = -1
        self._job_rows: dict[int, np.ndarray] = {}
        self._curve_rows: dict[
            int, tuple[float, float, LossCurveParams | None, Simulator, np.ndarray]
        ] = {}
        self._block: tuple[list[int | None], list[int], np.ndarray, float, int] | None = None
        #: A new state's slots in one pass (metis_fresh): the default rows, none zeroed.
        self.one_pass = self._keep_all and type(self).encode_slot is MetisEncoder.encode_slot

    def reset(self, seed: int) -> None:
        """Forget per-episode caches; profiles of this episode come from ``seed``."""
        self._static, self._profiles, self._seed = {}, {}, seed
        self._rate_cache, self._rows, self._rows_sim = {}, {}, None
        self._curve_rows = {}

    def describe(self) -> list[str]:
        """The name of every observation index."""
        return self.layout.describe()

    def profile(self, sim: Simulator, j: int) -> ThroughputProfile:
        """The fitted throughput profile of job ``j`` (measured on first use)."""
        prof = self._profiles.get(j)
        if prof is None:
            prof = self._profiles[j] = profile_job(sim.jobs[j], self.cluster, self._seed)
        return prof

    def _static_part(self, sim: Simulator, j: int) -> np.ndarray:
        out = self._static.get(j)
        if out is not None:
            return out
        spec = sim.jobs[j]
        prof = self.profile(sim, j)
        out = np.zeros(self.slot_size, dtype=np.float32)
        out[0] = 1.0
        out[6] = min(spec.num_gpus / self.max_gpus, 1.0)
        out[7] = min(spec.min_gpus / self.max_gpus, 1.0)
        out[8] = min(spec.max_gpus / self.max_gpus, 1.0)
        t1 = prof.iteration_time(1)
        out[19:22] = [squash(x / t1) for x in prof.theta]
        for i, n in enumerate(FEATURE_GPUS):
            out[22 + i] = min(prof.efficiency(n), MAX_EFFICIENCY) / MAX_EFFICIENCY
        model = spec.model if spec.model in zoo.ZOO_MODELS else "other"
        out[22 + 2 * len(FEATURE_GPUS) + MODEL_NAMES.index(model)] = 1.0
        self._static[j] = out
        return out

    def encode_slot(self, sim: Simulator, j: int, pending: int) -> np.ndarray:
        """The features of job ``j`` with ``pending`` GPUs tentatively allocated."""
        spec = sim.jobs[j]
        state = int(sim.state[j])
        estimator = sim.estimator
        est_total = estimator.total_iterations(j)
        done = sim.iterations_done(j)
        out = self._curve_row(sim, j, est_total, done, estimator.fitted(j))
        # the fields of STATE_FIELDS, one write each
        out[1] = state == 1
        out[2] = state == 2
        out[3] = state == 3
        out[4] = min(int(sim.num_gpus_held[j]) / self.max_gpus, 1.0)
        out[5] = min(pending / self.max_gpus, 1.0)
        out[9] = norm_time(sim.now_s - spec.submit_time_s)
        out[13] = norm_time(float(sim.attained_gpu_s[j]))
        out[18] = squash(estimator.num_observations(j) / OBS_NORM)
        return out if self._keep_all else out * self._keep

    def _curve_row(
        self, sim: Simulator, j: int, est_total: float, done: float, fit: LossCurveParams | None
    ) -> np.ndarray:
        """A fresh copy of :meth:`curve_base`."""
        return self.curve_base(sim, j, est_total, done, fit).copy()

    def curve_base(
        self, sim: Simulator, j: int, est_total: float, done: float, fit: LossCurveParams | None
    ) -> np.ndarray:
        """Job ``j``'s row holding its static fields and those that follow from its
        progress and length estimate (cached while ``done``, the estimate and the fit
        stay: a queued job's across slices). Read-only: the cache's own array."""
        cached = self._curve_rows.get(j)
        if (
            cached is not None
            and cached[0] == done
            and cached[1] == est_total
            and cached[2] is fit
            and cached[3] is sim
        ):
            return cached[4]
        spec, cached_fit = sim.jobs[j], fit
        out = self._static_part(sim, j).copy()
        total = max(est_total, 1e-9)
        remaining = max(est_total - done, 0.0)
        if self.job_features == "oracle":  # ablation only: the hidden truth
            total = spec.total_iterations
            remaining = max(total - done, 0.0)
            fit = spec.loss_curve
        frac = min(done / total, 1.0)
        curve = curve_integral(spec.model)
        q_now = curve.quality(frac)
        rate1, gain_rates = self._rates(sim, j)
        if fit is not None:
            curve_feats = (1.0, squash(fit.b0 * total), squash(fit.b1), squash(fit.b2))
        else:
            curve_feats = (0.0, *prior_curve_features(spec.model))
        # one scalar write per field (a sequence written to a slice costs more)
        out[10], out[11], out[12] = frac, q_now, norm_time(remaining / rate1)
        out[14], out[15], out[16], out[17] = curve_feats
        step = self.slice_s / total
        quality = curve.quality
        base = 22 + len(FEATURE_GPUS)
        for i, r in enumerate(gain_rates):
            out[base + i] = 0.0 if r is None else quality(frac + r * step) - q_now
        self._curve_rows[j] = (done, est_total, cached_fit, sim, out)
        return out

    def _pending_feature(self, pending: int) -> float:
        """Slot field ``pending_gpus`` (the only one that depends on ``pending``)."""
        return min(pending / self.max_gpus, 1.0)

    def _sync_rows(self, sim: Simulator) -> None:
        """Drop the cached rows (and slot block) when the simulator's state moved on."""
        if sim is not self._rows_sim or sim.state_version != self._rows_version:
            self._rows, self._rows_sim, self._rows_version = {}, sim, sim.state_version
            self._job_rows, self._block = {}, None

    def slot_row(self, sim: Simulator, j: int, pending: int) -> np.ndarray:
        """:meth:`encode_slot`, cached while the simulator's state version stays (the
        Discrete variant's steps change one slot's pending count and nothing else: a
        job's row at another count is its cached row with ``pending_gpus`` rewritten)."""
        self._sync_rows(sim)
        row = self._rows.get((j, pending))
        if row is None:
            other = self._job_rows.get(j)
            if other is None:
                row = self._job_rows[j] = self.encode_slot(sim, j, pending)
            else:
                row = other.copy()
                row[PENDING_INDEX] = self._pending_feature(pending) * self._keep[PENDING_INDEX]
            self._rows[(j, pending)] = row
        return row

    def _rates(self, sim: Simulator, j: int) -> tuple[float, list[float | None]]:
        """Job ``j``'s profiled rate on 1 GPU and on each FEATURE_GPUS count it allows."""
        cached = self._rate_cache.get(j)
        if cached is None:
            prof, top = self.profile(sim, j), sim.jobs[j].max_gpus
            gains = [prof.rate(n) if n <= top else None for n in FEATURE_GPUS]
            cached = self._rate_cache[j] = (prof.rate(1), gains)
        return cached

    def encode(
        self,
        sim: Simulator,
        slots: list[int | None],
        pending: np.ndarray,
        changed: int | None = None,
    ) -> np.ndarray:
        """The observation: every slot (``None`` = empty), then the cluster (the cluster
        fields but ``pending_free_fraction`` kept with the slot rows per state version).
        ``changed``: a hint, the one slot whose pending count may differ from the
        previous call's (checked; any other difference is found as without it)."""
        counts = pending.tolist()  # integer counts: their sum is exact in any order
        obs, quality_sum, present, fresh = fill_slots(self, sim, slots, counts, changed)
        inv, c = sim.inventory, self.num_slots * self.slot_size
        pending_free = max(inv.num_gpus - float(sum(counts)), 0.0) / inv.num_gpus
        if fresh:
            num_active = len(sim.active)
            in_system = len(sim.queue) + num_active
            beyond = max(in_system - present, 0)
            obs[c:] = (
                inv.num_free / inv.num_gpus,
                pending_free,
                min(in_system / self.num_slots, 1.0),
                min(math.log1p(beyond) / math.log1p(10.0 * self.num_slots), 1.0),
                min(num_active / self.num_slots, 1.0),
                quality_sum / present if present else 0.0,
                norm_time(sim.now_s),
            )
        else:
            obs[c + 1] = pending_free
        return obs.copy()
