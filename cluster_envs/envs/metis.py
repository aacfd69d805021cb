"""``cluster_envs/MetisAllocation-v0``: every time slice, re-allocate GPUs among
malleable experimental jobs to maximise model quality.

Settings in :mod:`~cluster_envs.envs.metis_config`, the reward in
:mod:`~cluster_envs.envs.metis_reward`, slots in :mod:`~cluster_envs.envs.metis_slots`,
the Discrete variant in :mod:`~cluster_envs.envs.metis_discrete`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.driver import TRUNCATED, Outcome
from cluster_envs.envs.actions import multi_discrete_action
from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.metis_config import PRESETS, MetisConfig
from cluster_envs.envs.metis_hints import MetisHints, decode_options, option_mask, options_of
from cluster_envs.envs.metis_reward import REWARD_COMPONENTS, QualityReward
from cluster_envs.envs.metis_scale_free import metis_encoder
from cluster_envs.envs.metis_slots import (
    Slots,
    action_for_decision,
    held_gpus,
    slot_mask,
    sync_slots,
)
from cluster_envs.errors import ConfigError, ResetNeededError
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.projection import AllocationState, plan_allocation
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.sim.quality import (
    QualitySettings,
    QualityTracker,
    quality_metrics,
    track_quality,
)
from cluster_envs.types import Decision, JobKind, JobSpec
from cluster_envs.workload import Workload

__all__ = ["PRESETS", "REWARD_COMPONENTS", "MetisAllocationEnv", "MetisConfig"]


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
    ``info["num_projected"]`` counts the entries the projection changed. The action rule
    of every env (:mod:`cluster_envs.envs.actions`): J integral entries (a fraction, NaN
    or a wrong length raises ``InvalidActionError``); an action with an entry outside
    its mask sets ``info["invalid_action"]`` and counts in
    ``info["num_invalid_actions"]``, and is projected like any other
    (``info["num_forced_actions"]`` stays 0).
    With ``action="hints"``: ``MultiDiscrete([H + 2] * J)``, per slot an option of
    :mod:`cluster_envs.envs.metis_hints`: follow one of the H ``hint_policies`` (by default
    slaq/optimus/tiresias/fair), keep, pause.

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
    (defaults 0, 0, 1: the default return ranks policies as the ``quality_auc`` metric
    does; ``gain_weight=1, auc_weight=0`` gives the per-slice quality gain of earlier
    versions) with ``quality_gain`` the sum over jobs of the normalised quality
    gained since the last step (true quality: the zoo's curve at the true fraction of
    training; sums to the jobs' final quality), ``quality_gap = -(job-seconds of quality
    still missing) / gap_scale_s`` (sums to minus ``quality_gap_job_h`` in gap-scale
    units) and ``quality_auc`` the increment of ``n * quality_auc`` computed as if the
    episode stopped now (each job's quality gain weighted by the share of its window
    still ahead; sums to ``n * quality_auc`` minus its value at reset). ``quality_gain``
    alone sums to about the number of jobs for *every* policy that lets all jobs
    converge, so it separates policies only through discounting; hence the default
    ``quality_auc``, which the agents of ``agents/hyperparams`` train on. All three are in
    ``info["reward_components"]``.

    ## Starting State
    The episode's workload comes from the seed (:mod:`cluster_envs.envs.episodes`); the
    first observation is the first round with a job in the system.

    ## Episode End
    Terminated when every job has finished; truncated at ``sim.horizon_s`` or after
    ``max_stalled_slices`` idle slices (alias of ``sim.horizon_s``: the kwarg
    ``horizon_s``); a step after the end returns the end again.
    ``info["episode_metrics"]`` then holds the
    simulator's metrics (``avg_jct_s``, ``makespan_s``, ...) and the quality metrics of
    :mod:`cluster_envs.sim.quality` (``quality_auc``, ``time_to_quality_s``,
    ``time_to_best_s``, ``mean_final_quality``, ``quality_gap_job_h``).

    ## Arguments
    ``preset`` (``default``, ``toy``, ``pollux``), the fields of :class:`MetisConfig`,
    the workload source (``workload``, ``trace``, ``num_jobs``, ``load``,
    ``max_gpu_time_s``, ...), ``sim`` (SimConfig overrides), ``render_mode``.

    ## Version History
    * v0: initial version; the default reward became ``quality_auc`` (was
      ``quality_gain``) with the one-driver refactor.
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
        hinted = config.action == "hints" or config.observation == "scale_free_hints"
        self.hints = (
            MetisHints(self.policy, self.action_for, config.hint_policies) if hinted else None
        )
        self.encoder = metis_encoder(config, self.max_gpus, self.cluster, self.hints)
        self.observation_space = self.encoder.space
        self.action_space = self._make_action_space()
        self.reward_weights = {
            "quality_gain": config.gain_weight,
            "quality_gap": config.gap_weight,
            "quality_auc": config.auc_weight,
        }
        self.slots: Slots = [None] * config.num_slots
        self._slot_ids: tuple[Slots, list[int]] = ([], [])  # slots -> info's slot_job_ids
        self._tracker: QualityTracker | None = None
        self._reward: QualityReward | None = None
        self.num_projected = 0

    @property
    def tracker(self) -> QualityTracker:
        """The episode's quality tracker; :class:`ResetNeededError` before ``reset()``."""
        if self._tracker is None:
            raise ResetNeededError(f"{type(self).__name__}.tracker read before reset()")
        return self._tracker

    @property
    def reward(self) -> QualityReward:
        """The episode's quality reward; :class:`ResetNeededError` before ``reset()``."""
        if self._reward is None:
            raise ResetNeededError(f"{type(self).__name__}.reward read before reset()")
        return self._reward

    def _make_action_space(self) -> spaces.Space:
        hinted = self.config.action == "hints"
        options = len(options_of(self.config.hint_policies)) if hinted else self.max_gpus + 1
        return spaces.MultiDiscrete([options] * self.num_slots)

    @property
    def round_s(self) -> float:
        """The start of the current round (simulated s)."""
        return self.driver.round_s if self.has_episode else 0.0

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

    # ------------------------------------------------------------------ hooks
    def _on_reset(self) -> None:
        tracker = self._tracker = track_quality(self.sim, self.quality_settings)
        self._reward = QualityReward(tracker, self.config.gap_scale_s)
        self.encoder.reset(self.episode_seed)
        self.slots = [None] * self.num_slots
        self.num_projected = 0
        if self.hints is not None:
            self.hints.reset(self.episode_seed)
        self._begin_slice()

    def _is_decision_point(self) -> bool:
        return bool(self.sim.queue or self.sim.active)

    def _at_decision(self) -> None:
        self.slots = sync_slots(self.slots, self.sim)

    # The hooks take Any: the Discrete variant's actions are slot indices, not counts.
    def _decode_action(self, action: Any) -> tuple[Any, bool, bool]:
        space = self.action_space
        if not isinstance(space, spaces.MultiDiscrete):
            raise TypeError(f"{type(self).__name__} must override _decode_action for {space}")
        values = multi_discrete_action(action, space)
        if self.config.action == "hints":  # options -> counts (metis_hints)
            assert self.hints is not None
            return (
                *decode_options(
                    values,
                    self.hints.table(self.sim, self.slots),
                    self.slots,
                    self.hints.options,
                ),
                False,
            )
        rows = self.action_masks().reshape(self.num_slots, self.max_gpus + 1)
        inside = (values >= 0) & (values <= self.max_gpus)
        invalid = not inside.all() or not rows[np.arange(self.num_slots), values].all()
        return values, bool(invalid), False

    def _take_action(self, action: Any) -> Outcome:
        requests = {j: int(action[k]) for k, j in enumerate(self.slots) if j is not None}
        self.num_projected += int(
            sum(action[k] != 0 for k, j in enumerate(self.slots) if j is None)
        )
        return self._commit(requests)

    def _reward_components(self) -> dict[str, float]:
        return self.reward.components()

    def _action_mask(self) -> np.ndarray:
        """Per-slot allowed counts (or options), flattened: ``J * (G + 1)`` booleans."""
        if self.config.action == "hints":
            assert self.hints is not None
            return option_mask(self.hints.table(self.sim, self.slots), self.slots).reshape(-1)
        return slot_mask(self.slots, self.sim, self.max_gpus).reshape(-1)

    def _get_obs(self) -> np.ndarray:
        return self.encoder.encode(self.sim, self.slots, self._pending())

    def _extra_info(self) -> dict[str, Any]:
        slots = self.slots
        if self._slot_ids[0] != slots:
            self._slot_ids = (list(slots), [-1 if j is None else j for j in slots])
        return {"slot_job_ids": list(self._slot_ids[1]), "num_projected": self.num_projected}

    def episode_metrics(self) -> dict[str, float]:
        """The simulator's metrics plus the quality metrics, for the episode so far."""
        return {**compute_metrics(self.sim), **quality_metrics(self.sim)}

    # ------------------------------------------------------------------ heuristics
    def policy_context(self) -> PolicyContext:
        """The slots, slice length, rescale cost and quality window, for any policy
        that asks."""
        return PolicyContext(
            num_slots=self.num_slots,
            time_slice_s=self.config.time_slice_s,
            rescale_cost_s=self.sim_config.rescale_cost_s,
            quality_window_s=self.config.quality_window_s,
        )

    def runner_args(self) -> dict[str, Any]:
        """``run_episode`` keyword arguments that replay this episode (the parity check)."""
        return {**super().runner_args(), "quality": self.quality_settings}

    def action_for(self, decision: Decision) -> Any:
        """The action whose projection carries out ``decision`` exactly.

        Raises InfeasibleDecisionError if the decision touches a job outside the slots
        or places GPUs otherwise than the env's placement rule would.
        """
        return action_for_decision(self.slots, self.sim, decision)

    # ------------------------------------------------------------------ internals
    def _begin_slice(self) -> None:
        """Hook: a new slice's decision starts (the Discrete variant clears its plan)."""

    def _commit(self, requests: dict[int, int]) -> Outcome:
        """Project and apply ``requests``, close the round, run to the next decision."""
        sim = self.sim
        state = AllocationState.from_sim(sim, self.num_slots)
        counts = state.project(requests)
        self.num_projected += sum(counts[j] != requests.get(j, 0) for j in state.ids)
        decided = sim.apply(plan_allocation(state, counts)) > 0
        if self.hints is not None:
            self.hints.clear()
        self._note_occupancy()
        self.driver.end_round(decided)
        self._begin_slice()
        outcome = self._advance(min_one_event=False)
        if not outcome.terminated and self.driver.num_stalled >= self.config.max_stalled_slices:
            return TRUNCATED
        return outcome

    def _pending(self) -> np.ndarray:
        """GPUs per slot shown as ``pending_gpus`` (held counts here)."""
        return held_gpus(self.slots, self.sim)

    def _render_text(self) -> str:
        lines = [super()._render_text().rstrip("\n")]
        lines.append(f"round t={self.round_s:,.0f}s  summed quality={self.reward.quality:.3f}")
        for k, j in enumerate(self.slots):
            if j is not None:
                lines.append(
                    f"  slot {k:2d}: job {j:4d} {self.sim.jobs[j].model:12s} "
                    f"{int(self.sim.num_gpus_held[j]):2d} GPUs  "
                    f"quality {self.tracker.quality(j):.3f}"
                )
        return "\n".join(lines) + "\n"


def __getattr__(name: str) -> Any:
    """``MetisAllocationDiscreteEnv`` moved to :mod:`cluster_envs.envs.metis_discrete`."""
    if name == "MetisAllocationDiscreteEnv":
        from cluster_envs.envs.metis_discrete import MetisAllocationDiscreteEnv

        return MetisAllocationDiscreteEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
