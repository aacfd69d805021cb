"""``cluster_envs/JobPlacement-v0``: pick the physical nodes of each job, GPU by GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.driver import DECISION, Outcome
from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.config import split_kwargs
from cluster_envs.envs.features import MODEL_NAMES, norm_time
from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import packed_shape
from cluster_envs.types import Allocate, Decision, make_placement

#: Node-level features per node (see PlacementEncoder docs in the env docstring).
NODE_FEATURES = 6
#: Job-level features: remaining to place, requested, est. runtime packed, model one-hot.
JOB_FEATURES = 3 + len(MODEL_NAMES)
#: Cluster-level features: queue length, free GPU fraction.
CLUSTER_FEATURES = 2
#: Running-job counts are normalised against this many jobs per node.
JOBS_PER_NODE_NORM = 8.0
QUEUE_NORM = 100.0


@dataclass(frozen=True)
class PlacementConfig:
    """Settings of JobPlacement (JSON-serialisable kwargs).

    Attributes:
        cluster: Cluster preset (heterogeneous by default, so GPU types matter).
        reward_scale_s: Reward = -(jobs in system) * dt / reward_scale_s.
    """

    cluster: str = "hetero-small"
    reward_scale_s: float = 3600.0

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
    Flat ``Box(0, 1, float32)``. Per node (``num_nodes`` x 6): free GPU fraction, GPUs of
    the current job already put there (over its request), GPU speed (over the fastest
    type), node size (over the largest), distributed jobs using the node, jobs on the
    node (over 8). Current job: GPUs left to place and requested (over the largest node
    x 4), estimated runtime packed on the fastest type (prior length; log time), model
    one-hot. Cluster: queue length (log), free GPU fraction.

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
        size = n * NODE_FEATURES + JOB_FEATURES + CLUSTER_FEATURES
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        from cluster_envs.config import GPU_SPEED

        self._node_speed_norm = None
        self._fastest = max(GPU_SPEED[g.gpu_type] for g in self.cluster.node_groups)
        self._tentative = np.zeros(n, dtype=np.int64)
        self._plan: list[int] = []
        self.reward_weights = {"jct": 1.0}
        self._job_s = 0.0

    # ------------------------------------------------------------------ hooks
    def _on_reset(self) -> None:
        self._tentative[:] = 0
        self._plan = []

    def _take_action(self, action: int) -> Outcome:
        self._tentative[action] += 1
        head = self._head()
        if int(self._tentative.sum()) < self.sim.jobs[head].num_gpus:
            return DECISION
        placement = make_placement(enumerate(self._tentative.tolist()))
        self._tentative[:] = 0
        self._plan = []
        self.sim.apply(Decision((Allocate(head, placement),)))
        self._note_occupancy()
        return self._advance(min_one_event=False)

    def _reward_components(self) -> dict[str, float]:
        job_s = self._system_job_s()
        jct = -(job_s - self._job_s) / self.config.reward_scale_s
        self._job_s = job_s
        return {"jct": jct}

    def _action_mask(self) -> np.ndarray:
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

    def _is_decision_point(self) -> bool:
        sim = self.sim
        return bool(sim.queue) and sim.jobs[self._head()].num_gpus <= sim.inventory.num_free

    def _get_obs(self) -> np.ndarray:
        sim = self.sim
        inv = sim.inventory
        obs = np.zeros(self.observation_space.shape[0], dtype=np.float32)
        n = inv.num_nodes
        if sim.done or not sim.queue:
            return obs
        head = self._head()
        spec = sim.jobs[head]
        big = float(inv.total.max())
        nodes = np.zeros((n, NODE_FEATURES), dtype=np.float32)
        nodes[:, 0] = (inv.free - self._tentative) / inv.total
        nodes[:, 1] = self._tentative / spec.num_gpus
        nodes[:, 2] = inv.speed / self._fastest
        nodes[:, 3] = inv.total / big
        contention = sim.contention
        if contention.enabled:
            nodes[:, 4] = np.minimum(np.asarray(contention.distributed_on) / JOBS_PER_NODE_NORM, 1)
            crowd = np.array([len(s) for s in contention.jobs_on], dtype=np.float32)
            nodes[:, 5] = np.minimum(crowd / JOBS_PER_NODE_NORM, 1.0)
        obs[: n * NODE_FEATURES] = nodes.ravel()
        c = n * NODE_FEATURES
        left = spec.num_gpus - int(self._tentative.sum())
        obs[c] = min(left / (4 * big), 1.0)
        obs[c + 1] = min(spec.num_gpus / (4 * big), 1.0)
        rate = spec.speed.throughput(
            packed_shape(spec.num_gpus, int(big)), self._fastest, inv.network_speed
        )
        obs[c + 2] = norm_time(sim.estimator.estimate(head).remaining_iterations / rate)
        model = spec.model if spec.model in zoo.ZOO_MODELS else "other"
        obs[c + 3 + MODEL_NAMES.index(model)] = 1.0
        c += JOB_FEATURES
        obs[c] = min(np.log1p(len(sim.queue)) / np.log1p(QUEUE_NORM), 1.0)
        obs[c + 1] = inv.num_free / inv.num_gpus
        return obs
