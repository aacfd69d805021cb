"""MetisAllocation, scale-free (``observation="scale_free"``; see :mod:`.scale_free`).

The slot fields are the default ones (:func:`~cluster_envs.envs.metis_features.slot_names`)
with every scale replaced: GPU counts in nodes, durations relative to ``tau`` (the median
estimated remaining runtime on one GPU of the jobs in the system), attained service in
GPU-``tau`` units and the quality gain **per hour** at n GPUs instead of per slice, so no
field depends on the slice length, the cluster size or the slot count. The cluster fields
are ``time_scale``, free and pending-free fractions, jobs in the system per GPU (squashed),
the fraction of them waiting beyond the slots, running jobs per GPU, the mean estimated
quality and the elapsed time (rel. tau). The ``job_features`` ablations apply as in the
default observation (same fields, scale-free names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.config import ClusterConfig
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.metis_features import (
    FEATURE_GPUS,
    JOB_FEATURE_ABLATIONS,
    MAX_EFFICIENCY,
    OBS_NORM,
    MetisEncoder,
    slot_names,
)
from cluster_envs.envs.normalise import model_index, norm_time, prior_curve_features, squash
from cluster_envs.envs.scale_free import in_nodes, make_encoder, median_runtime_s, rel
from cluster_envs.sim.quality import curve_integral

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: Quality gains are shown over this much time (s): one hour.
GAIN_HORIZON_S = 3600.0
GAIN = "quality_gain@"
GAIN_PER_HOUR = "quality_gain_per_hour@"
CLUSTER_FIELDS = (
    "time_scale",
    "free_gpu_fraction",
    "pending_free_fraction",
    "jobs_in_system_per_gpu",
    "waiting_beyond_slots_fraction",
    "running_jobs_per_gpu",
    "mean_est_quality",
    "elapsed",
)
#: The optional cluster field (``observe_slice=True``): ``log2(W / slice) / 8`` clipped to
#: [0, 1], W the quality window: how many decisions fit in a job's scored hour (60 s
#: slices 0.74, 300 s 0.45, 600 s 0.32). The other fields hide the slice length on
#: purpose, but the right allocation depends on it: on 60 s slices a wrong count costs a
#: minute and a rescale, on 600 s ones ten minutes.
SLICE_FIELD = "slices_per_window"


def slices_per_window(slice_s: float, window_s: float) -> float:
    """The :data:`SLICE_FIELD` value of a ``slice_s`` slice under a ``window_s`` window."""
    return float(np.clip(np.log2(max(window_s / slice_s, 1.0)) / 8.0, 0.0, 1.0))


def scale_free_slot_names() -> list[str]:
    """Names of the per-slot fields (the default ones, gains per hour)."""
    return [n.replace(GAIN, GAIN_PER_HOUR) for n in slot_names()]


class ScaleFreeMetisEncoder(MetisEncoder):
    """MetisAllocation, scale-free (see the module docstring; :meth:`describe`)."""

    def __init__(
        self,
        num_slots: int,
        max_gpus: int,
        cluster: ClusterConfig,
        slice_s: float,
        job_features: str = "fitted",
        slice_field: float | None = None,
    ) -> None:
        super().__init__(num_slots, max_gpus, cluster, slice_s, job_features)
        self.node_gpus = float(cluster.max_gpus_per_node)
        #: The :data:`SLICE_FIELD` value, or None: the field is not in the observation.
        self.slice_field = slice_field
        fields = CLUSTER_FIELDS + ((SLICE_FIELD,) if slice_field is not None else ())
        self.layout = ObsLayout(tuple(scale_free_slot_names()), num_slots, fields)
        self.size, self.space = self.layout.size, self.layout.space()
        zeroed = JOB_FEATURE_ABLATIONS[job_features][1]
        self._keep = self.layout.slot_mask(n.replace(GAIN, GAIN_PER_HOUR) for n in zeroed)
        self._tau = 0.0
        self._tau_key: tuple[int, int] | None = None
        self._profile_feats: dict[int, list[float]] = {}

    def time_scale(self, sim: Simulator) -> float:
        """``tau`` (s): median estimated remaining time on one GPU, jobs in the system."""
        ids = np.array([*sim.queue, *sim.active], dtype=np.int64)
        if not len(ids):
            return median_runtime_s(np.zeros(0), np.zeros(0))
        rates = np.array([self._rates(sim, j)[0] for j in ids.tolist()])
        return median_runtime_s(sim.estimator.remaining_many(ids), rates)

    def encode_slot(self, sim: Simulator, j: int, pending: int) -> np.ndarray:
        """The features of job ``j`` with ``pending`` GPUs tentatively allocated."""
        spec, state, tau = sim.jobs[j], int(sim.state[j]), self._tau
        estimator, done = sim.estimator, sim.iterations_done(j)
        est_total = estimator.total_iterations(j)
        total, remaining, fit = (
            max(est_total, 1e-9),
            max(est_total - done, 0.0),
            estimator.fitted(j),
        )
        if self.job_features == "oracle":  # ablation only: the hidden truth
            total = spec.total_iterations
            remaining = max(total - done, 0.0)
            fit = spec.loss_curve
        frac = min(done / total, 1.0)
        curve = curve_integral(spec.model)
        q_now = curve.quality(frac)
        if fit is not None:
            curve_feats = (1.0, squash(fit.b0 * total), squash(fit.b1), squash(fit.b2))
        else:
            curve_feats = (0.0, *prior_curve_features(spec.model))
        node = self.node_gpus
        rate1, gain_rates = self._rates(sim, j)
        step = GAIN_HORIZON_S / total
        row = [
            1.0, state == 1, state == 2, state == 3,
            in_nodes(float(sim.num_gpus_held[j]), node), in_nodes(pending, node),
            in_nodes(spec.num_gpus, node), in_nodes(spec.min_gpus, node),
            in_nodes(spec.max_gpus, node),
            rel(sim.now_s - spec.submit_time_s, tau), frac, q_now,
            rel(remaining / rate1, tau),
            squash(float(sim.attained_gpu_s[j]) / (tau * node)),
            *curve_feats, squash(estimator.num_observations(j) / OBS_NORM),
            *self._profile_features(sim, j),
            *(0.0 if r is None else curve.quality(frac + r * step) - q_now for r in gain_rates),
        ]  # fmt: skip
        out = np.zeros(self.layout.slot_size, dtype=np.float32)
        out[: len(row)] = row
        out[len(row) + model_index(spec.model)] = 1.0
        return out * self._keep

    def _pending_feature(self, pending: int) -> float:
        """Slot field ``pending_gpus``, in nodes (as :meth:`encode_slot` writes it)."""
        return in_nodes(pending, self.node_gpus)

    def _profile_features(self, sim: Simulator, j: int) -> list[float]:
        """Job ``j``'s profile thetas (over its 1-GPU time) and efficiencies (cached)."""
        feats = self._profile_feats.get(j)
        if feats is None:
            prof = self.profile(sim, j)
            t1 = prof.iteration_time(1)
            feats = [squash(x / t1) for x in prof.theta]
            feats += [
                min(prof.efficiency(n), MAX_EFFICIENCY) / MAX_EFFICIENCY for n in FEATURE_GPUS
            ]
            self._profile_feats[j] = feats
        return feats

    def reset(self, seed: int) -> None:
        """Forget per-episode caches (see MetisEncoder.reset)."""
        super().reset(seed)
        self._profile_feats = {}

    def encode(
        self,
        sim: Simulator,
        slots: list[int | None],
        pending: np.ndarray,
        changed: int | None = None,
    ) -> np.ndarray:
        """The observation: every slot (``None`` = empty), then the cluster (``changed``,
        the default encoder's hint, is not used)."""
        key = (sim.state_version, id(sim))
        if key != self._tau_key or sim is not self._rows_sim:
            self._tau, self._tau_key = self.time_scale(sim), key
        obs = np.zeros(self.layout.size, dtype=np.float32)
        rows, _ = self.layout.split(obs)
        quality = self.layout.slot_index("est_quality")
        quality_sum, present = 0.0, 0
        for k, j in enumerate(slots):
            if j is None:
                continue
            rows[k] = self.slot_row(sim, j, int(pending[k]))
            quality_sum += float(rows[k, quality])
            present += 1
        inv, c = sim.inventory, self.layout.global_offset
        in_system = len(sim.queue) + len(sim.active)
        obs[c] = norm_time(self._tau)
        obs[c + 1] = inv.num_free / inv.num_gpus
        obs[c + 2] = max(inv.num_gpus - float(pending.sum()), 0.0) / inv.num_gpus
        obs[c + 3] = squash(in_system / inv.num_gpus)
        obs[c + 4] = max(in_system - present, 0) / in_system if in_system else 0.0
        obs[c + 5] = min(len(sim.active) / inv.num_gpus, 1.0)
        obs[c + 6] = quality_sum / present if present else 0.0
        obs[c + 7] = rel(sim.now_s, self._tau)
        if self.slice_field is not None:
            obs[c + 8] = self.slice_field
        return obs


def metis_encoder(config: object, max_gpus: int, cluster: ClusterConfig, hints: Any = None) -> Any:
    """The MetisAllocation encoder ``config.observation`` names (``config``: MetisConfig;
    ``hints``: the env's MetisHints, which ``scale_free_hints`` needs)."""
    from cluster_envs.envs.metis_hints import HintsMetisEncoder

    args = (config.num_slots, max_gpus, cluster, config.time_slice_s)  # type: ignore[attr-defined]
    kw = {"job_features": config.job_features}  # type: ignore[attr-defined]
    sf_kw: dict[str, Any] = dict(kw)
    if getattr(config, "observe_slice", False):
        slice_s, window_s = config.time_slice_s, config.quality_window_s  # type: ignore[attr-defined]
        sf_kw["slice_field"] = slices_per_window(slice_s, window_s)
    return make_encoder(
        config,
        lambda: MetisEncoder(*args, **kw),
        lambda: ScaleFreeMetisEncoder(*args, **sf_kw),
        lambda: HintsMetisEncoder(
            ScaleFreeMetisEncoder(*args, **sf_kw), hints, cluster.max_gpus_per_node
        ),
    )
