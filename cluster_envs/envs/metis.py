"""``cluster_envs/MetisAllocation-v0`` (and its ``Discrete`` variant): every time slice,
re-allocate GPUs among malleable experimental jobs to maximise model quality."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.episodes import SYNTHETIC_JOBS
from cluster_envs.envs.metis_features import JOB_FEATURES
from cluster_envs.envs.metis_scale_free import metis_encoder
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.projection import (
    DEFAULT_NUM_SLOTS,
    AllocationState,
    counts_after,
    eligible_ids,
    plan_allocation,
)
from cluster_envs.policies.registry import make_policy
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.sim.quality import (
    QUALITY_THRESHOLD,
    QUALITY_WINDOW_S,
    QualitySettings,
    QualityTracker,
    quality_metrics,
    track_quality,
)
from cluster_envs.types import Decision, JobKind, JobSpec
from cluster_envs.workload import Workload

#: Names of the reward components in ``info["reward_components"]``.
REWARD_COMPONENTS = ("quality_gain", "quality_gap", "quality_auc")


@dataclass(frozen=True)
class MetisConfig:
    """Settings of MetisAllocation (all JSON-serialisable kwargs of the env).

    Attributes:
        cluster: Cluster preset name.
        num_slots: J, the jobs the action covers (the lowest ids in the system).
        max_gpus_per_job: G, the largest count per job (jobs are capped to it).
        time_slice_s: The re-allocation interval (simulated seconds).
        quality_window_s: ``W`` of the ``quality_auc`` metric.
        quality_threshold: "Reached its quality" at this fraction of the final quality.
        gain_weight: Weight of the ``quality_gain`` reward component.
        gap_weight: Weight of the ``quality_gap`` reward component.
        gap_scale_s: ``quality_gap`` is divided by this (s).
        auc_weight: Weight of the ``quality_auc`` reward component (the increments of
            ``n * quality_auc``; the reward that the shipped agents train on).
        max_stalled_slices: Truncate after this many slices in a row with jobs waiting,
            nothing running, nothing allocated and nothing left to happen.
        job_features: ``"fitted"`` (default: loss curves fitted to noisy observations),
            ``"oracle"`` (ABLATION ONLY: the true curves and true lengths, which no real
            scheduler has) or ``"no_curve"`` (ablation: every field derived from the loss curve zeroed), to
            measure whether the state design matters.
        observation: ``"default"`` or ``"scale_free"`` (fields that do not depend on
            the cluster size, slot count or slice length: :mod:`cluster_envs.envs.scale_free`).
    """

    cluster: str = "small"
    num_slots: int = DEFAULT_NUM_SLOTS
    max_gpus_per_job: int = 16
    time_slice_s: float = 600.0
    quality_window_s: float = QUALITY_WINDOW_S
    quality_threshold: float = QUALITY_THRESHOLD
    gain_weight: float = 1.0
    gap_weight: float = 0.0
    gap_scale_s: float = 3600.0
    auc_weight: float = 0.0
    max_stalled_slices: int = 10
    job_features: str = "fitted"
    observation: str = "default"

    def __post_init__(self) -> None:
        if self.job_features not in JOB_FEATURES:
            raise ConfigError(
                f"job_features must be one of {JOB_FEATURES}, got {self.job_features!r}"
            )
        for name in ("num_slots", "max_gpus_per_job", "max_stalled_slices"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("time_slice_s", "gap_scale_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        QualitySettings(self.quality_window_s, self.quality_threshold)


PRESETS: dict[str, dict[str, Any]] = {
    # 30 malleable jobs on 8 x 4 T4; 32 slots, so every job in the system is covered.
    "default": {"cluster": "small", "num_jobs": 30, **SYNTHETIC_JOBS},
    # 12 jobs on 4 x 4 T4 with 8 slots (later jobs wait for a slot): tests, quick looks.
    "toy": {"cluster": "toy", "num_jobs": 12, "num_slots": 8, **SYNTHETIC_JOBS},
    # The Pollux testbed, its eight 160-job workloads, Pollux's 60 s rounds.
    "pollux": {
        "cluster": "pollux-testbed",
        "workload": [f"pollux-{i}" for i in range(1, 9)],
        "num_jobs": None,
        "time_slice_s": 60.0,
    },
}


class MetisAllocationEnv(ClusterEnvBase):
    """Every time slice, set the GPU count of up to J jobs; maximise model quality.

    ## Description
    Experimental training jobs (model selection, hyper-parameter search) arrive at a
    GPU cluster. Every ``time_slice_s`` the agent sets how many GPUs each of the J
    eligible jobs -- the J earliest-submitted jobs still in the system, each in a slot
    it keeps until it finishes -- holds for the next slice. Jobs are *malleable*: a
    changed count pays ``sim.rescale_cost_s`` (a preempted job ``restart_cost_s`` on
    resume). Jobs follow the real learning curves, quality curves and throughput models
    of the Pollux model zoo.

    ## Action Space
    ``MultiDiscrete([G + 1] * J)``: entry ``k`` is the GPU count requested for slot
    ``k``. Requests are projected onto a feasible allocation by the rule of
    :mod:`cluster_envs.policies.projection` (clamp to ``{0} U [min, max]``; if the total
    exceeds the cluster, cut the largest first) and placed by its consolidated rule;
    unchanged counts keep their GPUs. ``action_masks()`` (flat, per dimension, as
    MaskablePPO expects) allows 0 and the job's ``[min, max]``; empty slots allow 0.
    ``info["num_projected"]`` counts the entries the projection changed.

    ## Observation Space
    A flat ``Box(0, 1, float32)``: J slots then the cluster, field by field in
    :class:`cluster_envs.envs.metis_features.MetisEncoder` (``encoder.describe()`` names
    every index). Per slot: present, queued / rescaling / running, GPUs held and
    pending, requested / min / max GPUs, age, *estimated* progress and quality (from the
    fitted loss curve, never the true length), estimated remaining time at 1 GPU,
    attained GPU-time, the fitted loss-curve parameters (refitted as noisy losses
    arrive; the model's prior before), the throughput model fitted on arrival to noisy
    profiling runs at 1/2/4/8 GPUs (parameters, efficiency at 1-16 GPUs), the predicted
    quality gain over one slice at 1-16 GPUs, and a model one-hot. Cluster: free GPUs,
    GPUs not pending, jobs in the system, jobs waiting beyond the slots, running jobs,
    mean estimated quality, time.

    ## Rewards
    ``gain_weight * quality_gain + gap_weight * quality_gap + auc_weight * quality_auc``
    (defaults 1, 0, 0) with ``quality_gain`` the sum over jobs of the normalised quality
    gained since the last step (true quality: the zoo's curve at the true fraction of
    training; sums to the jobs' final quality), ``quality_gap = -(job-seconds of quality
    still missing) / gap_scale_s`` (sums to minus ``quality_gap_job_h`` in gap-scale
    units) and ``quality_auc`` the increment of ``n * quality_auc`` computed as if the
    episode stopped now (each job's quality gain weighted by the share of its window
    still ahead; sums to ``n * quality_auc`` minus its value at reset). ``quality_gain``
    alone sums to about the number of jobs for *every* policy that lets all jobs
    converge, so it separates policies only through discounting; the agents of
    ``agents/hyperparams`` train on ``quality_auc``. All three are in
    ``info["reward_components"]``.

    ## Starting State
    The episode's workload comes from the seed (:mod:`cluster_envs.envs.episodes`); the
    first observation is the first round with a job in the system.

    ## Episode End
    Terminated when every job has finished; truncated at ``sim.horizon_s`` or after
    ``max_stalled_slices`` idle slices. ``info["episode_metrics"]`` then holds the
    simulator's metrics (``avg_jct_s``, ``makespan_s``, ...) and the quality metrics of
    :mod:`cluster_envs.sim.quality` (``quality_auc``, ``time_to_quality_s``,
    ``time_to_best_s``, ``mean_final_quality``, ``quality_gap_job_h``).

    ## Arguments
    ``preset`` (``default``, ``toy``, ``pollux``), the fields of :class:`MetisConfig`,
    the workload source (``workload``, ``trace``, ``num_jobs``, ``load``,
    ``max_gpu_time_s``, ...), ``sim`` (SimConfig overrides), ``render_mode``.

    ## Version History
    * v0: initial version.
    """

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        config, source, sim_config = split_kwargs(MetisConfig, kwargs, PRESETS)
        if sim_config.time_slice_s not in (None, config.time_slice_s):
            raise ConfigError("set the slice with time_slice_s=..., not sim={'time_slice_s'}")
        source = dataclasses.replace(source, kind="malleable")
        sim_config = dataclasses.replace(sim_config, time_slice_s=config.time_slice_s)
        super().__init__(config.cluster, sim_config, source, render_mode)
        self.config = config
        self.num_slots = config.num_slots
        self.max_gpus = min(config.max_gpus_per_job, self.cluster.num_gpus)
        self.quality_settings = QualitySettings(config.quality_window_s, config.quality_threshold)
        self.encoder = metis_encoder(config, self.max_gpus, self.cluster)
        self.observation_space = self.encoder.space
        self.action_space = self._make_action_space()
        self.slots: list[int | None] = [None] * config.num_slots
        self.tracker: QualityTracker | None = None
        self.round_s = 0.0
        self.num_stalled = 0
        self.num_projected = 0
        self._quality = 0.0
        self._gap = 0.0
        self._auc = 0.0

    def _make_action_space(self) -> spaces.Space:
        return spaces.MultiDiscrete([self.max_gpus + 1] * self.num_slots)

    # ------------------------------------------------------------------ workload
    def _episode_workload(self, episode_seed: int) -> Workload:
        workload = super()._episode_workload(episode_seed)
        return workload.with_jobs([self._snap(job) for job in workload.jobs])

    def _snap(self, job: JobSpec) -> JobSpec:
        """Malleable, at most G GPUs (request and minimum capped too)."""
        top = min(job.max_gpus, self.max_gpus)
        return dataclasses.replace(
            job,
            kind=JobKind.MALLEABLE,
            min_gpus=min(job.min_gpus, top),
            num_gpus=min(job.num_gpus, top),
            max_gpus=top,
        )

    def _new_episode(self, seed: int | None) -> None:
        super()._new_episode(seed)
        self.tracker = track_quality(self.sim, self.quality_settings)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._new_episode(seed)
        self.encoder.reset(self.episode_seed)
        self.slots = [None] * self.num_slots
        self.round_s = 0.0
        self.num_stalled = 0
        self.num_projected = 0
        self._begin_slice()
        self._note_occupancy()
        terminated, truncated = self._to_decision()
        self._quality, self._gap = self.tracker.total_quality(), self.tracker.gap_area
        self._auc = self.tracker.projected_auc_job_windows()
        info = self._info(dict.fromkeys(REWARD_COMPONENTS, 0.0))
        return self._get_obs(), self._finish_info(info, terminated or truncated)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        values = np.asarray(action).reshape(-1)
        if values.shape != (self.num_slots,):
            raise ValueError(f"action must have {self.num_slots} entries, got {values.shape}")
        requests = {j: int(values[k]) for k, j in enumerate(self.slots) if j is not None}
        self.num_projected += int(
            sum(values[k] != 0 for k, j in enumerate(self.slots) if j is None)
        )
        return self._commit(requests)

    def action_masks(self) -> np.ndarray:
        """Per-slot allowed counts, flattened: ``J * (G + 1)`` booleans."""
        width = self.max_gpus + 1
        mask = np.zeros((self.num_slots, width), dtype=bool)
        mask[:, 0] = True
        for k, j in enumerate(self.slots):
            if j is not None:
                spec = self.sim.jobs[j]
                mask[k, spec.min_gpus : spec.max_gpus + 1] = True
        return mask.reshape(-1)

    def episode_metrics(self) -> dict[str, float]:
        """The simulator's metrics plus the quality metrics, for the episode so far."""
        return {**compute_metrics(self.sim), **quality_metrics(self.sim)}

    # ------------------------------------------------------------------ heuristics
    def policy(self, name: str) -> SchedulingPolicy:
        """The registered allocation baseline ``name``, configured like this env."""
        kwargs: dict[str, Any] = {"num_slots": self.num_slots}
        if name == "slaq":
            kwargs["slice_s"] = self.config.time_slice_s
            kwargs["switch_cost_s"] = self.sim_config.rescale_cost_s
        return make_policy(name, **kwargs)

    def runner_args(self) -> dict[str, Any]:
        """``run_episode`` keyword arguments that replay this episode (the parity check)."""
        return {
            "jobs": self.workload,
            "cluster": self.cluster,
            "config": self.sim_config,
            "seed": self.episode_seed,
            "quality": self.quality_settings,
        }

    def action_for(self, decision: Decision) -> np.ndarray:
        """The action whose projection carries out ``decision`` exactly.

        Raises InfeasibleDecisionError if the decision touches a job outside the slots
        or places GPUs otherwise than the env's placement rule would.
        """
        state = AllocationState.from_sim(self.sim, self.num_slots)
        for action in decision.actions:
            if int(action.job_id) not in state.ids:
                raise InfeasibleDecisionError(f"job {action.job_id} is not in the env's slots")
        counts = counts_after(state, decision)
        if plan_allocation(state, counts) != decision:
            raise InfeasibleDecisionError(
                f"decision {decision} differs from the env's placement of the same counts"
            )
        return self._action_from_counts(counts)

    def _action_from_counts(self, counts: dict[int, int]) -> np.ndarray:
        return np.array([0 if j is None else counts[j] for j in self.slots], dtype=np.int64)

    # ------------------------------------------------------------------ internals
    def _begin_slice(self) -> None:
        """Hook: a new slice's decision starts (the Discrete variant clears its plan)."""

    def _commit(
        self, requests: dict[int, int]
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Project and apply ``requests``, then run to the next round with jobs."""
        sim = self.sim
        state = AllocationState.from_sim(sim, self.num_slots)
        counts = state.project(requests)
        self.num_projected += sum(counts[j] != requests.get(j, 0) for j in state.ids)
        decided = sim.apply(plan_allocation(state, counts)) > 0
        self._note_occupancy()
        self._end_round(decided)
        self._begin_slice()
        terminated, truncated = self._to_decision()
        if not terminated and self.num_stalled >= self.config.max_stalled_slices:
            truncated = True
        tracker, config = self.tracker, self.config
        quality, gap = tracker.total_quality(), tracker.gap_area
        auc = tracker.projected_auc_job_windows()
        components = {
            "quality_gain": quality - self._quality,
            "quality_gap": -(gap - self._gap) / config.gap_scale_s,
            "quality_auc": auc - self._auc,
        }
        self._quality, self._gap, self._auc = quality, gap, auc
        reward = (
            config.gain_weight * components["quality_gain"]
            + config.gap_weight * components["quality_gap"]
            + config.auc_weight * components["quality_auc"]
        )
        info = self._finish_info(self._info(components), terminated or truncated)
        return self._get_obs(), float(reward), terminated, truncated, info

    def _end_round(self, decided: bool) -> None:
        """The runner's round bookkeeping after a decision (``runner._run_rounds``)."""
        sim, slice_s = self.sim, self.config.time_slice_s
        stalled = False
        if not sim.active and not decided:
            nxt = sim.next_event_time()
            stalled = nxt == math.inf
            if not stalled and not sim.queue:
                self.round_s = max(self.round_s, math.ceil(nxt / slice_s) * slice_s - slice_s)
        self.num_stalled = self.num_stalled + 1 if stalled else 0
        self.round_s += slice_s

    def _to_decision(self) -> tuple[bool, bool]:
        """Advance round by round to the next one with a job in the system."""
        sim, slice_s = self.sim, self.config.time_slice_s
        horizon = math.inf if self.sim_config.horizon_s is None else self.sim_config.horizon_s
        while True:
            if sim.done:
                return True, False
            if self.round_s > horizon:
                sim.advance_to(horizon)
                self._note_occupancy()
                return False, True
            sim.advance_to(self.round_s)
            self._note_occupancy()
            if sim.done:
                return True, False
            if sim.queue or sim.active:
                self._sync_slots()
                return False, False
            nxt = sim.next_event_time()
            self.round_s = max(self.round_s, math.ceil(nxt / slice_s) * slice_s - slice_s)
            self.round_s += slice_s

    def _sync_slots(self) -> None:
        """Free the slots of finished jobs; give free slots to new eligible jobs."""
        eligible = eligible_ids((*self.sim.queue, *self.sim.active), self.num_slots)
        keep = set(eligible)
        self.slots = [j if j in keep else None for j in self.slots]
        placed = {j for j in self.slots if j is not None}
        free = iter(k for k, j in enumerate(self.slots) if j is None)
        for j in eligible:
            if j not in placed:
                self.slots[next(free)] = j

    def _pending(self) -> np.ndarray:
        """GPUs per slot shown as ``pending_gpus`` (held counts here)."""
        return np.array(
            [0 if j is None else int(self.sim.num_gpus_held[j]) for j in self.slots], np.int64
        )

    def _get_obs(self) -> np.ndarray:
        return self.encoder.encode(self.sim, self.slots, self._pending())

    def _info(self, components: dict[str, float]) -> dict[str, Any]:
        return {
            "action_mask": self.action_masks(),
            "reward_components": components,
            "time_s": self.sim.now_s,
            "slot_job_ids": [-1 if j is None else j for j in self.slots],
            "num_projected": self.num_projected,
            "num_queued": len(self.sim.queue),
            "num_running": len(self.sim.active),
        }

    def _render_text(self) -> str:
        lines = [super()._render_text().rstrip("\n")]
        lines.append(f"round t={self.round_s:,.0f}s  summed quality={self._quality:.3f}")
        for k, j in enumerate(self.slots):
            if j is not None:
                lines.append(
                    f"  slot {k:2d}: job {j:4d} {self.sim.jobs[j].model:12s} "
                    f"{int(self.sim.num_gpus_held[j]):2d} GPUs  "
                    f"quality {self.tracker.quality(j):.3f}"
                )
        return "\n".join(lines) + "\n"


class MetisAllocationDiscreteEnv(MetisAllocationEnv):
    """MetisAllocation with DL2-style incremental actions (for DQN and friends).

    ## Action Space
    ``Discrete(J + 1)``: action ``k < J`` adds one GPU to slot ``k``'s *pending*
    allocation (no time passes, reward 0); action ``J`` ends the slice: the pending
    counts are projected and applied exactly as a MetisAllocation-v0 action, and the
    next slice starts from an empty plan (as in DL2, every slice allocates from zero; a
    job left at 0 is preempted). ``action_masks()`` / ``info["action_mask"]``: adding is
    allowed for an occupied slot below its ``max_gpus`` while the cluster has GPUs not
    pending; ending is always allowed. An invalid action ends the slice and is counted
    in ``info["num_invalid_actions"]``.

    ## Observation Space
    As MetisAllocation-v0; ``pending_gpus`` holds the plan being built.

    Everything else (rewards, metrics, arguments) is MetisAllocation-v0's.
    """

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(render_mode, **kwargs)
        self.end_action = self.num_slots
        self.pending = np.zeros(self.num_slots, dtype=np.int64)
        self.num_invalid_actions = 0

    def _make_action_space(self) -> spaces.Space:
        return spaces.Discrete(self.num_slots + 1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self.num_invalid_actions = 0
        return super().reset(seed=seed, options=options)

    def _begin_slice(self) -> None:
        self.pending = np.zeros(self.num_slots, dtype=np.int64)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        a = int(np.asarray(action).reshape(-1)[0]) if np.ndim(action) else int(action)
        mask = self.action_masks()
        if not (0 <= a < len(mask)) or not mask[a]:
            self.num_invalid_actions += 1
            a = self.end_action
        if a != self.end_action:
            self.pending[a] += 1
            info = self._info(dict.fromkeys(REWARD_COMPONENTS, 0.0))
            return self._get_obs(), 0.0, False, False, info
        requests = {j: int(self.pending[k]) for k, j in enumerate(self.slots) if j is not None}
        return self._commit(requests)

    def action_masks(self) -> np.ndarray:
        """Which actions are allowed now (the end-slice action is last)."""
        mask = np.zeros(self.num_slots + 1, dtype=bool)
        mask[self.end_action] = True
        if self.pending.sum() >= self.sim.inventory.num_gpus:
            return mask
        for k, j in enumerate(self.slots):
            if j is not None and self.pending[k] < self.sim.jobs[j].max_gpus:
                mask[k] = True
        return mask

    def action_for(self, decision: Decision) -> int:
        """The next increment towards ``decision``'s counts, or the end-slice action."""
        target = super().action_for(decision)
        below = np.flatnonzero(self.pending < target)
        return int(below[0]) if below.size else self.end_action

    def _pending(self) -> np.ndarray:
        return self.pending.copy()

    def _info(self, components: dict[str, float]) -> dict[str, Any]:
        info = super()._info(components)
        info["num_invalid_actions"] = self.num_invalid_actions
        return info
