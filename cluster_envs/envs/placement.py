"""``cluster_envs/JobPlacement-v0``: pick the physical nodes of each job, GPU by GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.scale_free import placement_encoder
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.types import Allocate, Decision, make_placement


@dataclass(frozen=True)
class PlacementConfig:
    """Settings of JobPlacement (JSON-serialisable kwargs).

    Attributes:
        cluster: Cluster preset (heterogeneous by default, so GPU types matter).
        reward_scale_s: Reward = -(jobs in system) * dt / reward_scale_s.
        horizon_s: Truncate at this simulated time (None: never).
        observation: ``"default"`` or ``"scale_free"`` (fields that do not depend on
            the cluster size, queue length or load: :mod:`cluster_envs.envs.scale_free`).
    """

    cluster: str = "hetero-small"
    reward_scale_s: float = 3600.0
    horizon_s: float | None = None
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
    An infeasible action is replaced by the first feasible node and counted in
    ``info["num_invalid_actions"]`` (never a crash).

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
    Terminated when every job has finished; truncated at ``horizon_s``.
    ``info["episode_metrics"]`` holds the simulator's metrics.

    ## Arguments
    ``preset`` (``default``, ``toy``, ``large``, ``philly``), :class:`PlacementConfig`
    fields, the workload source (``workload``, ``trace``, ``num_jobs``, ``load``, ...),
    ``sim`` (SimConfig overrides; default ``node_interference=0.1``), ``render_mode``.

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
        self.num_invalid_actions = 0

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._new_episode(seed)
        self._tentative[:] = 0
        self._plan = []
        self.num_invalid_actions = 0
        self._note_occupancy()
        terminated, truncated = self._advance()
        return self._get_obs(), self._finish_info(self._info(0.0, False), terminated or truncated)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        mask = self.action_masks()
        a = int(action) if np.isscalar(action) or np.ndim(action) == 0 else -1
        invalid = not (0 <= a < len(mask)) or not mask[a]
        if invalid:
            self.num_invalid_actions += 1
            a = int(np.flatnonzero(mask)[0])
        before = self._system_job_s()
        self._tentative[a] += 1
        terminated = truncated = False
        head = self._head()
        if int(self._tentative.sum()) == self.sim.jobs[head].num_gpus:
            placement = make_placement(enumerate(self._tentative.tolist()))
            self._tentative[:] = 0
            self._plan = []
            self.sim.apply(Decision((Allocate(head, placement),)))
            self._note_occupancy()
            terminated, truncated = self._advance()
        reward = -(self._system_job_s() - before) / self.config.reward_scale_s
        info = self._finish_info(self._info(reward, invalid), terminated or truncated)
        return self._get_obs(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Nodes that still have a free GPU for the current job."""
        return (self.sim.inventory.free - self._tentative) > 0

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

    def _decision_point(self) -> bool:
        sim = self.sim
        return bool(sim.queue) and sim.jobs[self._head()].num_gpus <= sim.inventory.num_free

    def _advance(self) -> tuple[bool, bool]:
        sim = self.sim
        horizon = np.inf if self.config.horizon_s is None else self.config.horizon_s
        while True:
            if sim.done:
                return True, False
            if self._decision_point():
                return False, False
            t = sim.next_event_time()
            if t > horizon:
                sim.advance_to(horizon)
                return False, True
            if t == np.inf:
                raise RuntimeError("no event left but the head job cannot start (a bug)")
            sim.step()
            self._note_occupancy()

    def _get_obs(self) -> np.ndarray:
        sim = self.sim
        head = None if sim.done or not sim.queue else self._head()
        return self.encoder.encode(sim, head, self._tentative)

    def _info(self, reward: float, invalid: bool) -> dict[str, Any]:
        return {
            "action_mask": self.action_masks(),
            "invalid_action": invalid,
            "num_invalid_actions": self.num_invalid_actions,
            "reward_components": {"jct": reward},
            "time_s": self.sim.now_s,
            "num_queued": len(self.sim.queue),
            "num_running": len(self.sim.active),
        }
