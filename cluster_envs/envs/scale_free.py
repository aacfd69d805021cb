"""Scale-free observations (``observation="scale_free"``): the same numbers at every scale.

The default observations normalise by constants of one setting (GPU counts over the
largest level, queue lengths over 200 jobs, quality gain per slice, the time since the
episode began), so an agent trained on one cluster, queue or slice length sees other
settings through a distorted lens. The scale-free encoders express the state in units
that do not move when the cluster doubles together with its load, or the slice halves:

* **cluster quantities as fractions** of the cluster (free GPUs, GPUs released soon,
  queued demand), job counts **per GPU**;
* **job sizes in nodes** (``x / (1 + x)`` of GPUs over the largest node's GPUs: the
  hardware unit, not the cluster's size);
* **times relative to a scale the state carries**: ``tau``, the median estimated
  remaining runtime of the jobs in the system (:func:`median_runtime_s`; 1 h when there
  are none), shown itself as ``time_scale`` on the log scale of
  :func:`~cluster_envs.envs.normalise.norm_time`; a duration ``t`` is ``t / (t + tau)``;
* **rates per hour** instead of per slice (Metis' quality gain);
* **per-job sets with a padding mask**: every slot block starts with ``present``, so one
  set encoder pooling over ``present`` serves any window, slot count or node count.

Doubling the cluster (every node group twice) with every job duplicated and mirrored
gives the same global block and each slot row twice (tests/test_obs_scale_free.py):
a mean-pooling set encoder sees the same input. :func:`make_encoder` picks the encoder
from the env config's ``observation`` field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.config import ClusterConfig, suggest
from cluster_envs.envs.features import MODEL_NAMES, MoldableEncoder
from cluster_envs.envs.layout import ObsLayout
from cluster_envs.envs.moldable_hints import GLOBAL_FIELDS, MoldableHints, slot_fields
from cluster_envs.envs.normalise import model_index, norm_time, prior_curve_features, squash
from cluster_envs.envs.placement_features import NODE_FIELDS, PlacementEncoder
from cluster_envs.envs.placement_hints import HINT_FIELDS, PlacementHints
from cluster_envs.errors import ConfigError
from cluster_envs.perf.speed import packed_shape

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: Values of the envs' ``observation`` kwarg (``scale_free_hints``: the scale-free fields
#: plus heuristic hints, :mod:`~cluster_envs.envs.placement_hints`, ``moldable_hints``,
#: ``metis_hints``).
OBSERVATIONS = ("default", "scale_free", "scale_free_hints")
#: ``tau`` when no job is in the system (s).
DEFAULT_TIME_SCALE_S = 3600.0
#: GPUs released within these multiples of ``tau`` are shown (fractions of the cluster).
RELEASE_HORIZONS = (0.25, 1.0, 4.0)


def check_observation(name: str) -> str:
    """``name`` if it is a valid ``observation`` value, else a ConfigError naming it."""
    if name not in OBSERVATIONS:
        raise ConfigError(
            f"unknown observation {name!r}{suggest(name, OBSERVATIONS)}; "
            f"valid: {', '.join(OBSERVATIONS)}"
        )
    return name


def make_encoder(
    config: Any,
    default: Callable[[], Any],
    scale_free: Callable[[], Any],
    hints: Callable[[], Any] | None = None,
) -> Any:
    """The encoder ``config.observation`` names: ``default()``, ``scale_free()`` or
    ``hints()`` (``scale_free_hints``; a ConfigError for an env without hints)."""
    kind = check_observation(getattr(config, "observation", "default"))
    if kind == "scale_free_hints":
        if hints is None:
            raise ConfigError(
                "observation 'scale_free_hints' exists only on JobPlacement-v0, "
                "MoldableScheduling-v0 and MetisAllocation-v0; use 'scale_free' here"
            )
        return hints()
    return scale_free() if kind == "scale_free" else default()


def median_runtime_s(remaining_iterations: np.ndarray, rates: np.ndarray) -> float:
    """``tau``: the median of ``remaining / rate`` (s) over jobs with a positive rate."""
    ok = rates > 0
    if not ok.any():
        return DEFAULT_TIME_SCALE_S
    secs = remaining_iterations[ok] / rates[ok]
    tau = _median(secs.tolist())
    return tau if tau > 0 else DEFAULT_TIME_SCALE_S


def _median(values: list[float]) -> float:
    """``float(np.median(values))`` of a non-empty list, without numpy's overhead: the
    middle value, or the two middle values' sum halved (numpy's mean of two); NaN if any
    value is NaN."""
    if any(v != v for v in values):
        return math.nan
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def rel(seconds: float | np.ndarray, tau: float) -> Any:
    """A duration relative to ``tau``: ``t / (t + tau)`` in [0, 1) (0 for t <= 0)."""
    if isinstance(seconds, float):  # scalar fast path, the same values as np.maximum
        t = seconds if seconds > 0.0 or seconds != seconds else 0.0
        return t / (t + tau)
    t = np.maximum(seconds, 0.0)
    return t / (t + tau)


def in_nodes(gpus: float, node_gpus: float) -> float:
    """A GPU count in units of the largest node, squashed: ``x / (1 + x)``."""
    return squash(gpus / node_gpus)


class ScaleFreeMoldableEncoder(MoldableEncoder):
    """MoldableScheduling, scale-free (see the module docstring; :meth:`describe`).

    Per window slot: ``present``, ``age`` (rel. tau), ``requested/min/max_gpus`` (in
    nodes), ``est_runtime@L`` (rel. tau; 0 if L is not allowed), ``feasible@L``, the
    prior curve and the model one-hot. Then ``time_scale``, ``free_gpu_fraction``,
    ``nodes_with_free=g`` (fraction of nodes), ``running_jobs_per_gpu``,
    ``released_within_<h>tau`` (fraction of the cluster's GPUs whose job is estimated to
    finish within h tau), ``queued_jobs_per_gpu`` (squashed), ``beyond_window_fraction``
    (of the queue) and ``queued_gpu_demand`` (over the cluster's GPUs, squashed).
    With ``hints``, each slot also has the ``pick=<h>@<L>`` fields and the global block
    the ``wait=<h>`` fields of :mod:`cluster_envs.envs.moldable_hints` (each at the end).
    """

    def __init__(self, config: Any, cluster: ClusterConfig,
                 hints: MoldableHints | None = None) -> None:  # fmt: skip
        super().__init__(config, cluster)
        self.hints = hints
        per_slot = ["present", "age", "requested_gpus", "min_gpus", "max_gpus"]
        per_slot += [f"est_runtime@{lv}" for lv in self.levels]
        per_slot += [f"feasible@{lv}" for lv in self.levels]
        per_slot += ["prior_curve_b0", "prior_curve_b1", "prior_curve_b2"]
        per_slot += [f"model={m}" for m in MODEL_NAMES]
        glob = ["time_scale", "free_gpu_fraction"]
        glob += [f"nodes_with_free={g}" for g in range(self.gpus_per_node + 1)]
        glob += ["running_jobs_per_gpu"]
        glob += [f"released_within_{h:g}tau" for h in RELEASE_HORIZONS]
        glob += ["queued_jobs_per_gpu", "beyond_window_fraction", "queued_gpu_demand"]
        if hints is not None:
            per_slot += slot_fields(self.levels)
            glob += GLOBAL_FIELDS
        self.layout = ObsLayout(tuple(per_slot), config.window, tuple(glob))
        self.slot_size, self.cluster_size = self.layout.slot_size, self.layout.global_size
        self.space = self.layout.space()

    def time_scale(self, sim: Simulator) -> float:
        """``tau`` (s): running jobs at their held GPUs, queued ones at their request."""
        ids = np.array([*sim.queue, *sim.active], dtype=np.int64)
        if not len(ids):
            return DEFAULT_TIME_SCALE_S
        left = sim.estimator.remaining_many(ids)
        gpus = [int(sim.num_gpus_held[j]) or sim.jobs[j].num_gpus for j in ids]
        rates = np.array([self._rate(sim.jobs[j].speed, g) for j, g in zip(ids, gpus, strict=True)])
        return median_runtime_s(left, rates)

    def encode(self, sim: Simulator, window: list[int], mask: np.ndarray) -> np.ndarray:
        """The observation for the current state."""
        obs = np.zeros(self.layout.size, dtype=np.float32)
        p, node, tau = len(self.levels), float(self.gpus_per_node), self.time_scale(sim)
        slots, _ = self.layout.split(obs)
        for k, j in enumerate(window):
            spec = sim.jobs[j]
            left = sim.estimator.remaining(j)
            row = slots[k]
            row[0] = 1.0
            row[1] = rel(sim.now_s - spec.submit_time_s, tau)
            row[2:5] = [in_nodes(g, node) for g in (spec.num_gpus, spec.min_gpus, spec.max_gpus)]
            for i, lv in enumerate(self.levels):
                if spec.min_gpus <= lv <= spec.max_gpus:
                    row[5 + i] = rel(left / self._rate(spec.speed, lv), tau)
            row[5 + p : 5 + 2 * p] = mask[k * p : (k + 1) * p]
            row[5 + 2 * p : 8 + 2 * p] = prior_curve_features(spec.model)
            row[8 + 2 * p + model_index(spec.model)] = 1.0
        inv, c = sim.inventory, self.layout.global_offset
        obs[c] = norm_time(tau)
        obs[c + 1] = inv.num_free / inv.num_gpus
        hist = np.bincount(np.minimum(inv.free, self.gpus_per_node), minlength=int(node) + 1)
        obs[c + 2 : c + 3 + self.gpus_per_node] = hist / len(inv.free)
        c += 3 + self.gpus_per_node
        obs[c] = min(len(sim.active) / inv.num_gpus, 1.0)
        if sim.active:
            ids = np.fromiter(sim.active, dtype=np.int64, count=len(sim.active))
            rate, left_many = sim.rate[ids], sim.estimator.remaining_many(ids)
            secs = np.divide(left_many, rate, out=np.full_like(left_many, np.inf), where=rate > 0)
            held = sim.num_gpus_held[ids]
            for i, h in enumerate(RELEASE_HORIZONS):
                obs[c + 1 + i] = held[secs <= h * tau].sum() / inv.num_gpus
        c += 1 + len(RELEASE_HORIZONS)
        queued = len(sim.queue)
        obs[c] = squash(queued / inv.num_gpus)
        obs[c + 1] = max(queued - len(window), 0) / queued if queued else 0.0
        obs[c + 2] = squash(sum(sim.jobs[j].num_gpus for j in sim.queue) / inv.num_gpus)
        if self.hints is not None:
            picks, waits = self.hints.fields(sim)
            slots[:, slots.shape[1] - picks.shape[1] :] = picks
            obs[obs.size - len(waits) :] = waits
        return obs


class ScaleFreePlacementEncoder(PlacementEncoder):
    """JobPlacement, scale-free (see the module docstring; :meth:`describe`).

    Per node: ``present`` (always 1: the padding mask of a node set), then the default
    node fields (all per node already). Then the job being placed: GPUs left to place and
    requested (in nodes), estimated runtime packed on the fastest type (rel. tau), model
    one-hot; then ``time_scale``, ``queued_jobs_per_gpu`` (squashed) and
    ``free_gpu_fraction``. With ``hints``, each node also has the ``next=<rule>`` fields
    of :mod:`cluster_envs.envs.placement_hints` (after the default node fields).
    """

    def __init__(self, cluster: ClusterConfig, hints: bool = False) -> None:
        super().__init__(cluster)
        self.default = PlacementEncoder(cluster)  # the per-node fields are the default's
        job: tuple[str, ...] = ("job.gpus_left", "job.requested_gpus", "job.est_runtime_packed")
        job += tuple(f"job.model={m}" for m in MODEL_NAMES)
        glob = (*job, "time_scale", "queued_jobs_per_gpu", "free_gpu_fraction")
        self.hints = PlacementHints() if hints else None
        per_node = ("present", *NODE_FIELDS, *(HINT_FIELDS if hints else ()))
        self.layout = ObsLayout(per_node, cluster.num_nodes, glob, "node")
        self.space = self.layout.space()
        self._sim: Simulator | None = None
        self._rates: dict[int, float] = {}
        self._tau_key: tuple[int, float] | None = None
        self._tau = DEFAULT_TIME_SCALE_S
        # the observation's state part, for (state version, clock, head job) of _sim
        self._obs_key: tuple[int, float, int] | None = None
        self._obs = np.zeros(self.layout.size, dtype=np.float32)
        self._need, self._big_sf = 0, 1

    def _packed_rate(self, sim: Simulator, j: int, node_gpus: int) -> float:
        """Iterations/s of job ``j`` packed at its request on the fastest type (cached)."""
        if sim is not self._sim:  # a new episode: job ids mean other jobs
            self._sim, self._rates, self._tau_key = sim, {}, None
        rate = self._rates.get(j)
        if rate is None:
            spec = sim.jobs[j]
            shape = packed_shape(spec.num_gpus, node_gpus)
            network = sim.inventory.network_speed
            rate = self._rates[j] = spec.speed.throughput(shape, self.fastest, network)
        return rate

    def _time_scale(self, sim: Simulator, node_gpus: int) -> float:
        """``tau`` (s), recomputed only when the simulator's state or clock moved."""
        self._packed_rate(sim, next(iter(sim.queue)), node_gpus)  # notices a new episode
        key = (sim.state_version, sim.now_s)
        if key != self._tau_key:
            ids = np.array([*sim.queue, *sim.active], dtype=np.int64)
            rates = np.array([self._packed_rate(sim, int(j), node_gpus) for j in ids])
            self._tau = median_runtime_s(sim.estimator.remaining_many(ids), rates)
            self._tau_key = key
        return self._tau

    def encode(self, sim: Simulator, head: int | None, tentative: np.ndarray) -> np.ndarray:
        """The observation while job ``head`` (None: none) has ``tentative`` GPUs per node.

        The fields that do not depend on the tentative GPUs are computed once per
        simulator state and head job (as the default encoder's); a step that places one
        more GPU rewrites the two tentative node columns and ``gpus_left``.
        """
        if head is None:
            return np.zeros(self.layout.size, dtype=np.float32)
        base = self.default.encode(sim, head, tentative)
        n, lay = sim.inventory.num_nodes, self.layout
        key = (sim.state_version, sim.now_s, head)
        if sim is not self._sim or key != self._obs_key:  # (_sim: see _packed_rate)
            self._obs = self._state_part_sf(sim, head, base)
            self._obs_key = key
        obs, c, size, fields = self._obs, lay.global_offset, lay.slot_size, len(NODE_FIELDS)
        # the tentative columns: free and tentative fractions (the default's first two)
        obs[1:c:size] = base[0 : n * fields : fields]
        obs[2:c:size] = base[1 : n * fields : fields]
        left = self._need - sum(tentative.tolist())
        obs[c] = in_nodes(left, self._big_sf)
        if self.hints is not None:  # the hints follow the tentative GPUs: every step
            slots, _ = lay.split(obs)
            slots[:, 1 + fields :] = self.hints.fields(sim, head, tentative)
        return obs.copy()

    def _state_part_sf(self, sim: Simulator, head: int, base: np.ndarray) -> np.ndarray:
        """The observation's fields that do not depend on the tentative GPUs."""
        obs = np.zeros(self.layout.size, dtype=np.float32)
        n, inv, lay = sim.inventory.num_nodes, sim.inventory, self.layout
        slots, _ = lay.split(obs)
        slots[:, 0] = 1.0
        k = 1 + len(NODE_FIELDS)
        slots[:, 1:k] = base[: n * len(NODE_FIELDS)].reshape(n, len(NODE_FIELDS))
        big = self._big_sf = int(inv.total.max())
        tau = self._time_scale(sim, big)
        spec, c = sim.jobs[head], lay.global_offset
        self._need = spec.num_gpus
        obs[c + 1] = in_nodes(spec.num_gpus, big)
        left = sim.estimator.remaining(head)
        obs[c + 2] = rel(left / self._packed_rate(sim, head, big), tau)
        obs[c + 3 + model_index(spec.model)] = 1.0
        c += 3 + len(MODEL_NAMES)
        obs[c] = norm_time(tau)
        obs[c + 1] = squash(len(sim.queue) / inv.num_gpus)
        obs[c + 2] = inv.num_free / inv.num_gpus
        return obs


def moldable_encoder(
    config: Any, cluster: ClusterConfig, hints: Callable[[], MoldableHints] | None = None
) -> MoldableEncoder:
    """The MoldableScheduling encoder ``config.observation`` names (``hints()`` builds the
    heuristic hints of ``scale_free_hints``; without it that observation is refused)."""
    return make_encoder(
        config,
        lambda: MoldableEncoder(config, cluster),
        lambda: ScaleFreeMoldableEncoder(config, cluster),
        None if hints is None else lambda: ScaleFreeMoldableEncoder(config, cluster, hints()),
    )


def placement_encoder(config: Any, cluster: ClusterConfig) -> PlacementEncoder:
    """The JobPlacement encoder ``config.observation`` names."""
    return make_encoder(
        config,
        lambda: PlacementEncoder(cluster),
        lambda: ScaleFreePlacementEncoder(cluster),
        lambda: ScaleFreePlacementEncoder(cluster, hints=True),
    )


__all__ = [
    "OBSERVATIONS",
    "ScaleFreeMoldableEncoder",
    "ScaleFreePlacementEncoder",
    "check_observation",
    "median_runtime_s",
    "moldable_encoder",
    "placement_encoder",
    "rel",
]
