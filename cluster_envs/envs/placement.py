"""``cluster_envs/JobPlacement-v0``: pick the physical nodes of each job, GPU by GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.driver import DECISION, Outcome
from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.jct_reward import JctReward
from cluster_envs.envs.scale_free import placement_encoder
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.types import Allocate, Decision


@dataclass(frozen=True)
class PlacementConfig:
    """Settings of JobPlacement (JSON-serialisable kwargs).

    Attributes:
        cluster: Cluster preset (heterogeneous by default, so GPU types matter).
        reward_scale_s: Reward = -(jobs in system) * dt / reward_scale_s.
        observation: ``"default"``, ``"scale_free"`` (fields that do not depend on
            the cluster size, queue length or load: :mod:`cluster_envs.envs.scale_free`)
            or ``"scale_free_hints"`` (those and each FIFO heuristic's next node:
            :mod:`cluster_envs.envs.placement_hints`).
    """

    cluster: str = "hetero-small"
    reward_scale_s: float = 3600.0
    observation: str = "default"

    def __post_init__(self) -> None:
        if not self.reward_scale_s > 0:
            raise ConfigError(f"reward_scale_s must be > 0, got {self.reward_scale_s}")


#: Placement matters here: jobs sharing a node slow each other (node_interference) and
#: distributed jobs sharing a node split its link (link contention, on by default).
SIM_DEFAULTS = {"node_interference": 0.1}
PLACEMENT_JOBS: dict[str, Any] = {
    "workload": "synthetic",
    "kind": "rigid",
    "load": 1.5,
    "batch_sizes": "scaled",
    "max_gpu_time_s": 8 * 3600.0,
    "gpu_demand": {"1": 0.4, "2": 0.2, "4": 0.25, "8": 0.15},
}
PRESETS: dict[str, dict[str, Any]] = {
    "default": {"cluster": "hetero-small", "num_jobs": 40, **PLACEMENT_JOBS},
    "toy": {"cluster": "hetero-small", "num_jobs": 12, **PLACEMENT_JOBS},
    "large": {"cluster": "hetero-large", "num_jobs": 200, **PLACEMENT_JOBS, "load": 1.2},
    "philly": {
        "cluster": "pollux-testbed",
        "workload": "philly-sample",
        "num_jobs": 100,
        "kind": "rigid",
    },
}


class JobPlacementEnv(ClusterEnvBase):
    """Place the head-of-queue job's GPUs on nodes, one GPU per step; minimise total JCT.

    ## Description
    Rigid training jobs arrive at a heterogeneous cluster and are served in FIFO order.
    When the job at the head of the queue fits in the free GPUs, the agent chooses, one
    GPU at a time, the node each of its GPUs goes to. When all its GPUs are placed the job
    starts. Its speed follows the fitted Pollux throughput model of its placement shape on
    the slowest GPU type it uses, slowed by contention: distributed jobs sharing a node
    split its network link, and jobs sharing a node interfere (``node_interference``).

    ## Action Space
    ``Discrete(num_nodes)``: put one more GPU of the current job on that node. Exact
    masks (``action_masks()``, ``info["action_mask"]``): nodes with a GPU still free.
    The action rule of every env (:mod:`cluster_envs.envs.actions`): any integral scalar
    is accepted (``np.int64(2)``, ``np.array([2])``); a fraction or NaN raises
    ``InvalidActionError``. There is no wait action, so an infeasible node is replaced by
    the first feasible one: ``info["invalid_action"]`` is set and it counts in both
    ``info["num_invalid_actions"]`` and ``info["num_forced_actions"]`` (never a crash).

    ## Observation Space
    Flat ``Box(0, 1, float32)`` from
    :class:`cluster_envs.envs.placement_features.PlacementEncoder` (``encoder.describe()``
    names every index). Per node (``num_nodes`` x 6): free GPU fraction, GPUs of the
    current job already put there (over its request), GPU speed (over the fastest type),
    node size (over the largest), distributed jobs using the node, jobs on the node (over
    8). Current job: GPUs left to place and requested (over the largest node x 4),
    estimated runtime packed on the fastest type (prior length; log time), model one-hot.
    Cluster: queue length (log), free GPU fraction.

    ## Rewards
    ``-(jobs in system) * dt / reward_scale_s`` over the simulated time each step
    advances (steps that only place a GPU advance no time): the return is minus the
    total JCT / scale. Component in ``info["reward_components"]["jct"]``.

    ## Episode End
    Terminated when every job has finished; truncated at the horizon
    ``sim={"horizon_s": ...}`` (alias: the kwarg ``horizon_s``). A step after the end
    returns the end again.
    ``info["episode_metrics"]`` holds the simulator's metrics.

    ## Arguments
    ``preset`` (``default``, ``toy``, ``large``, ``philly``), :class:`PlacementConfig`
    fields, the workload source (``workload``, ``trace``, ``num_jobs``, ``load``, ...),
    ``sim`` (SimConfig overrides; default ``node_interference=0.1``), ``horizon_s``
    (alias of ``sim.horizon_s``), ``render_mode``.

    ## Version History
    * v0: initial version.
    """

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        config, source, sim_config = split_kwargs(PlacementConfig, kwargs, PRESETS, SIM_DEFAULTS)
        super().__init__(config.cluster, sim_config, source, render_mode)
        self.config = config
        n = self.cluster.num_nodes
        self.action_space = spaces.Discrete(n)
        self.encoder = placement_encoder(config, self.cluster)
        self.observation_space = self.encoder.space
        self._tentative = np.zeros(n, dtype=np.int64)
        self._plan: list[int] = []
        self.reward_weights = {"jct": 1.0}
        self._jct = JctReward(config.reward_scale_s)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """:meth:`ClusterEnvBase.step`; an allowed action (a plain ``int``) that places a
        GPU without completing the job takes a shorter path with the same results: no
        time passes, so it is the base step without the decoding chain and the checks."""
        sim, tentative = self._sim, self._tentative
        if (
            type(action) is not int
            or sim is None
            or self._outcome.ended
            or not 0 <= action < len(tentative)
        ):
            return super().step(action)
        free = sim.inventory.free
        counts = tentative.tolist()
        if not free[action] > counts[action] or sum(counts) + 1 >= sim.jobs[self._head()].num_gpus:
            return super().step(action)  # refused, or the job's last GPU: it starts
        tentative[action] += 1
        return self._finish(DECISION, False)

    # ------------------------------------------------------------------ hooks
    def _on_reset(self) -> None:
        self._tentative[:] = 0
        self._plan = []

    def _take_action(self, action: int) -> Outcome:
        self._tentative[action] += 1
        head = self._head()
        if sum(self._tentative.tolist()) < self.sim.jobs[head].num_gpus:
            return DECISION
        # make_placement's result: the nodes in order, zeros dropped (counts are ints >= 0)
        placement = tuple(
            (node, gpus) for node, gpus in enumerate(self._tentative.tolist()) if gpus
        )
        self._tentative[:] = 0
        self._plan = []
        # apply(Decision((Allocate(head, placement),))) without the objects and checks:
        # allowed actions keep the counts within the free GPUs, the sum is the request
        self.sim.start_queued(head, placement)
        self._note_occupancy()
        return self._advance(min_one_event=False)

    def _reward_components(self) -> dict[str, float]:
        return self._jct(self.sim)

    def _action_mask(self) -> np.ndarray:
        """Nodes that still have a free GPU for the current job."""
        return (self.sim.inventory.free - self._tentative) > 0

    def _allowed(self, a: int) -> bool:
        """``action_masks()[a]`` (in range) without building the mask."""
        tentative = self._tentative
        return 0 <= a < len(tentative) and bool(self.sim.inventory.free[a] > tentative[a])

    # ------------------------------------------------------------------ heuristics
    def action_for(self, decision: Decision) -> int:
        """The next node of the head job's placement in a heuristic's ``decision``.

        The first call for a job stores the whole placement as a plan; the next steps
        follow it (see :meth:`pending_action`), so the heuristic is asked once per job,
        exactly as the runner asks it.
        """
        head = self._head()
        for action in decision.actions:
            if isinstance(action, Allocate) and action.job_id == head and action.placement:
                plan: list[int] = []
                for node, gpus in sorted(action.placement):
                    plan += [int(node)] * int(gpus)
                if len(plan) != self.sim.jobs[head].num_gpus:
                    raise InfeasibleDecisionError(f"job {head}: plan has {len(plan)} GPUs")
                self._plan = plan[int(self._tentative.sum()) :]
                return self._plan.pop(0)
        raise InfeasibleDecisionError(
            f"the policy did not place the head-of-queue job {head} (JobPlacement serves FIFO)"
        )

    def pending_action(self) -> int | None:
        """The next node of a stored heuristic plan, or None when a new job starts."""
        return self._plan.pop(0) if self._plan else None

    # ------------------------------------------------------------------ internals
    def _head(self) -> int:
        return next(iter(self.sim.queue))

    def _is_decision_point(self) -> bool:
        sim = self.sim
        return bool(sim.queue) and sim.jobs[self._head()].num_gpus <= sim.inventory.num_free

    def _get_obs(self) -> np.ndarray:
        sim = self.sim
        head = None if sim.done or not sim.queue else self._head()
        return self.encoder.encode(sim, head, self._tentative)
