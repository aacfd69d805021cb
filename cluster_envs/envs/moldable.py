"""``cluster_envs/MoldableScheduling-v0``: pick the next job and its parallelism."""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.driver import DECISION, Outcome
from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.episodes import SYNTHETIC_JOBS
from cluster_envs.envs.jct_reward import JctReward
from cluster_envs.envs.moldable_hints import MoldableHints
from cluster_envs.envs.scale_free import moldable_encoder
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.placement import ConsolidatedPlacement, consolidate
from cluster_envs.types import Allocate, Decision, JobKind, JobSpec
from cluster_envs.workload import Workload


@dataclass(frozen=True)
class MoldableConfig:
    """Settings of MoldableScheduling (all JSON-serialisable kwargs of the env).

    Attributes:
        cluster: Cluster preset name.
        window: K, the queued jobs visible and selectable (in submission order).
        levels: Allowed degrees of parallelism, ascending (P = len(levels)).
        reward_scale_s: Reward = -(jobs in system) * dt / reward_scale_s.
        num_running_slots: Running jobs whose remaining time is shown (shortest first).
        placement: ``"first-fit"`` or ``"best-fit"`` consolidated placement.
        observation: ``"default"``, ``"scale_free"`` (fields that do not depend on
            the cluster size, queue length or load: :mod:`cluster_envs.envs.scale_free`)
            or ``"scale_free_hints"`` (those and each candidate heuristic's action now:
            :mod:`cluster_envs.envs.moldable_hints`).
    """

    cluster: str = "small"
    window: int = 8
    levels: tuple[int, ...] = (1, 2, 4, 8, 16)
    reward_scale_s: float = 3600.0
    num_running_slots: int = 8
    placement: str = "first-fit"
    observation: str = "default"

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ConfigError(f"window must be >= 1, got {self.window}")
        levels = self.levels
        if not levels or list(levels) != sorted(set(levels)) or levels[0] < 1:
            raise ConfigError(f"levels must be distinct, ascending and >= 1, got {levels}")
        if not self.reward_scale_s > 0:
            raise ConfigError(f"reward_scale_s must be > 0, got {self.reward_scale_s}")
        if self.num_running_slots < 0:
            raise ConfigError("num_running_slots must be >= 0")


PRESETS: dict[str, dict[str, Any]] = {
    # 60 moldable jobs per episode at offered load 2 on 8 x 4 T4.
    "default": {"cluster": "small", "num_jobs": 60, **SYNTHETIC_JOBS},
    "toy": {"cluster": "toy", "num_jobs": 20, **SYNTHETIC_JOBS},
    # The Pollux testbed and its eight 160-job evaluation workloads.
    "pollux": {
        "cluster": "pollux-testbed",
        "workload": [f"pollux-{i}" for i in range(1, 9)],
        "num_jobs": None,
    },
    # Train on Pollux workloads 1-6, evaluate on 7-8: workloads never seen in training.
    "pollux-train": {
        "cluster": "pollux-testbed",
        "workload": [f"pollux-{i}" for i in range(1, 7)],
        "num_jobs": None,
    },
    "pollux-test": {
        "cluster": "pollux-testbed",
        "workload": ["pollux-7", "pollux-8"],
        "num_jobs": None,
    },
    # 100 consecutive jobs of the shipped Philly sample per episode.
    "philly": {"cluster": "pollux-testbed", "workload": "philly-sample", "num_jobs": 100},
}


class MoldableSchedulingEnv(ClusterEnvBase):
    """Select a queued job and its degree of parallelism; minimise average JCT.

    ## Description
    A GPU cluster receives moldable deep-learning jobs (their GPU count is chosen at
    start and kept until they end). Whenever GPUs are free and jobs wait, the agent picks
    one of the first K queued jobs and a parallelism level, or waits for the next event
    (an arrival or a completion). Several picks may happen at one instant. The chosen job
    is placed by consolidated first-fit; its speed follows the real Pollux throughput
    model for that placement, so a larger level is faster but sub-linearly, and a job
    spread over nodes syncs more slowly.

    ## Action Space
    ``Discrete(K * P + 1)``: action ``k * P + p`` starts window slot ``k`` at
    ``levels[p]`` GPUs; action ``K * P`` waits. Exact masks: ``action_masks()`` and
    ``info["action_mask"]``. The action rule of every env
    (:mod:`cluster_envs.envs.actions`): any integral scalar is accepted (``np.int64(3)``,
    ``np.array([3])``); a fraction or NaN raises ``InvalidActionError``. An infeasible
    action (from an algorithm without masks) acts as "wait", sets
    ``info["invalid_action"]`` and counts in ``info["num_invalid_actions"]``; it never
    ends the episode. When nothing can happen any more but a start, "wait" is masked, and
    if chosen anyway the first feasible start is taken (``info["num_forced_actions"]``).

    ## Observation Space
    A flat ``Box(0, 1, float32)``; field by field in
    :class:`cluster_envs.envs.features.MoldableEncoder` (``encoder.describe()`` lists
    every index). Per window slot: present, age, requested / min / max GPUs, the
    *estimated* runtime at each level (estimated remaining iterations from the job's
    prior or fitted loss curve over the fitted throughput model -- never the true
    length), which levels are feasible now, the model's prior loss-curve parameters and a
    model one-hot. Cluster: free-GPU fraction, a histogram of free GPUs per node, running
    jobs' estimated remaining times and sizes, queue length beyond the window, queued GPU
    demand.

    ## Rewards
    ``-(jobs in system) * dt / reward_scale_s`` over the simulated time each step
    advances, so the return is minus the total JCT / ``reward_scale_s``. Components in
    ``info["reward_components"]`` (``"jct"``).

    ## Starting State
    The episode's workload comes from the seed (:mod:`cluster_envs.envs.episodes`); the
    first observation is the first decision point.

    ## Episode End
    Terminated when every job has finished; truncated at the horizon
    ``sim={"horizon_s": ...}`` (or its alias, the kwarg ``horizon_s``) if set. A step
    after the end returns the end again.
    ``info["episode_metrics"]`` then holds ``avg_jct_s``, ``p95_jct_s``, ``makespan_s``,
    ``avg_queue_s``, ``gpu_utilization``, ``bounded_slowdown``, the lower bound and ratio.

    ## Arguments
    ``preset`` (``default``, ``toy``, ``pollux``, ``pollux-train`` = workloads 1-6,
    ``pollux-test`` = workloads 7-8, ``philly``), the fields of
    :class:`MoldableConfig`, the workload source (``workload``, ``trace``, ``num_jobs``,
    ``load``, ``max_gpus_cap``, ``time_scale``), ``sim`` (SimConfig overrides),
    ``horizon_s`` (alias of ``sim.horizon_s``),
    ``render_mode`` (``"ansi"`` or ``"rgb_array"``).

    ## Version History
    * v0: initial version.
    """

    action_space: spaces.Discrete
    wait_action: int

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        config, source, sim_config = split_kwargs(MoldableConfig, kwargs, PRESETS)
        if JobKind(source.kind) is JobKind.RIGID:
            source = dataclasses.replace(source, kind="moldable")
        super().__init__(config.cluster, sim_config, source, render_mode)
        if config.levels[0] > self.cluster.num_gpus:
            raise ConfigError(
                f"levels {list(config.levels)}: no level fits the {self.cluster.num_gpus} GPUs "
                f"of cluster {self.cluster.name!r}, so no job could ever start"
            )
        self.config = config
        self.levels = config.levels
        self.placement_policy = ConsolidatedPlacement(config.placement)
        self.encoder = moldable_encoder(
            config,
            self.cluster,
            lambda: MoldableHints(self.policy, self.action_for, config.window, config.levels),
        )
        k, p = config.window, len(config.levels)
        self.wait_action = k * p
        self.action_space = spaces.Discrete(k * p + 1)
        self.observation_space = self.encoder.space
        self.reward_weights = {"jct": 1.0}
        self._mask = np.zeros(k * p + 1, dtype=bool)
        self._mask_version = -1
        self._window: list[int] = []
        self._window_version = -1
        self._jct = JctReward(config.reward_scale_s)

    # ------------------------------------------------------------------ workload
    def _episode_workload(self, episode_seed: int) -> Workload:
        workload = super()._episode_workload(episode_seed)
        return workload.with_jobs([self._snap(job) for job in workload.jobs])

    def _snap(self, job: JobSpec) -> JobSpec:
        """Moldable job over the env's levels: [levels[0], cap], request snapped down."""
        top = max((lv for lv in self.levels if lv <= min(job.max_gpus, self.cluster.num_gpus)),
                  default=self.levels[0])  # fmt: skip
        request = max((lv for lv in self.levels if lv <= job.num_gpus), default=self.levels[0])
        return dataclasses.replace(
            job,
            kind=JobKind.MOLDABLE,
            min_gpus=self.levels[0],
            num_gpus=min(request, top),
            max_gpus=top,
        )

    # ------------------------------------------------------------------ hooks
    def _on_reset(self) -> None:
        self._mask_version = self._window_version = -1
        self.encoder.reset()
        hints = getattr(self.encoder, "hints", None)
        if hints is not None:
            hints.reset(self.episode_seed)

    def _take_action(self, action: int) -> Outcome:
        if action == self.wait_action:
            return self._advance(min_one_event=True)
        self._start(action)
        if self._is_decision_point():
            return DECISION
        return self._advance(min_one_event=True)

    def _reward_components(self) -> dict[str, float]:
        return self._jct(self.sim)

    def _action_mask(self) -> np.ndarray:
        """Which actions are feasible now (the wait action is last)."""
        sim = self.sim
        if self._mask_version == sim.state_version:
            return self._mask.copy()
        window = self._window_ids()
        mask = np.zeros(int(self.action_space.n), dtype=bool)
        p, fit = len(self.levels), bisect_right(self.levels, sim.inventory.num_free)
        for k, j in enumerate(window):  # allowed levels are a contiguous index range
            lo, hi = self._level_range(j)
            mask[k * p + lo : k * p + min(hi, fit)] = True
        mask[self.wait_action] = not mask.any() or sim.next_event_time() < math.inf
        self._mask, self._mask_version = mask, sim.state_version
        return mask.copy()

    # ------------------------------------------------------------------ internals
    def _window_ids(self) -> list[int]:
        """The window's job ids (queue order; cached per simulator state version)."""
        version = self.sim.state_version
        if self._window_version != version:
            self._window = list(islice(self.sim.queue, self.config.window))
            self._window_version = version
        return self._window

    def _level_range(self, j: int) -> tuple[int, int]:
        """Indices ``[lo, hi)`` of the levels within job ``j``'s ``[min_gpus, max_gpus]``."""
        spec = self.sim.jobs[j]
        return bisect_left(self.levels, spec.min_gpus), bisect_right(self.levels, spec.max_gpus)

    def _is_decision_point(self) -> bool:
        """Some window job fits at some level now."""
        free = self.sim.inventory.num_free
        if not self.sim.queue or free < self.levels[0]:
            return False
        return any(self.sim.jobs[j].min_gpus <= free for j in self._window_ids())

    def _start(self, action: int) -> None:
        k, i = divmod(action, len(self.levels))
        j = self._window_ids()[k]
        placement = self.place(j, self.levels[i])
        if type(self.placement_policy) is ConsolidatedPlacement:  # feasible as built: a
            # masked level of the job's range on free GPUs; apply()'s normalised tuple
            self.sim.start_queued(j, tuple(sorted((int(n), int(g)) for n, g in placement)))
        else:
            self.sim.apply(Decision((Allocate(j, placement),)))
        self._note_occupancy()

    def place(self, job_id: int, num_gpus: int) -> tuple[tuple[int, int], ...]:
        """Where the env puts ``num_gpus`` GPUs of ``job_id`` now (consolidated)."""
        policy, inv = self.placement_policy, self.sim.inventory
        if type(policy) is ConsolidatedPlacement:  # it reads only node speeds: no view
            placement = consolidate(
                inv.free.copy(), inv.speed, num_gpus, policy.strategy, policy.prefer_fast
            )
        else:
            view = self.sim.view()
            placement = policy.place(view, view.job(job_id), num_gpus, inv.free.copy())
        if placement is None:
            raise InfeasibleDecisionError(f"job {job_id}: {num_gpus} GPUs do not fit")
        return placement

    def _get_obs(self) -> np.ndarray:
        return self.encoder.encode(self.sim, self._window_ids(), self.action_masks())

    # ------------------------------------------------------------------ heuristics
    def policy_context(self) -> PolicyContext:
        """The base context plus the window and levels a moldable heuristic picks from."""
        return dataclasses.replace(
            super().policy_context(), window=self.config.window, levels=self.levels
        )

    def action_for(self, decision: Decision) -> int:
        """The action that carries out the first start of a heuristic's ``decision``.

        Used to run any SchedulingPolicy through the env (the parity check). Raises if
        the decision starts a job outside the window, at a size that is not a level, or
        on other nodes than the env's placement rule would choose.
        """
        if not decision.actions:
            return self.wait_action
        action = decision.actions[0]
        if not isinstance(action, Allocate) or not action.placement:
            raise InfeasibleDecisionError(f"MoldableScheduling cannot express {action!r}")
        window = self._window_ids()
        if action.job_id not in window:
            raise InfeasibleDecisionError(
                f"job {action.job_id} is outside the window of {self.config.window} jobs"
            )
        n = sum(g for _, g in action.placement)
        if n not in self.levels:
            raise InfeasibleDecisionError(f"job {action.job_id}: {n} GPUs is not a level")
        if tuple(sorted(action.placement)) != self.place(action.job_id, n):
            raise InfeasibleDecisionError(
                f"job {action.job_id}: placement {action.placement} differs from the env's"
            )
        return window.index(action.job_id) * len(self.levels) + self.levels.index(n)
