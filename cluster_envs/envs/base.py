"""What every cluster-envs Gymnasium env shares: seeding, the simulator, rewards, render.

Subclasses implement the encoding hooks (``_get_obs``, ``action_masks``, ``_decode``)
and the decision-point rule; this base owns the episode life cycle:

* ``reset(seed)`` seeds ``self.np_random`` and derives one episode seed from it, which
  picks the workload (:mod:`cluster_envs.envs.episodes`) and seeds the simulator;
* rewards are named components summed with weights (``info["reward_components"]``);
* ``info["episode_metrics"]`` holds the simulator's metrics when the episode ends;
* ``render_mode="ansi"`` prints the state, ``"rgb_array"`` draws GPU occupancy over time
  (one row per GPU, grouped by node; one column per time bin).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from cluster_envs.config import ClusterConfig, SimConfig, get_cluster
from cluster_envs.envs.episodes import WorkloadSource
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.registry import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.workload import Workload

#: Width of the rgb_array occupancy picture (time bins) and pixels per GPU row.
RENDER_WIDTH = 240
RENDER_ROW_PX = 3
BUSY_RGB = np.array([52, 101, 164], dtype=np.uint8)
FREE_RGB = np.array([238, 238, 236], dtype=np.uint8)
NODE_SEPARATOR_RGB = np.array([136, 138, 133], dtype=np.uint8)


class ClusterEnvBase(gym.Env):
    """Base of the cluster-envs environments (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        cluster: ClusterConfig,
        sim_config: SimConfig,
        source: WorkloadSource,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} not supported; use one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.cluster = get_cluster(cluster)
        self.sim_config = sim_config
        self.source = source
        self.sim: Simulator | None = None
        self.workload: Workload | None = None
        self.episode_seed = 0
        self._occupancy: list[tuple[float, np.ndarray]] = []

    # ------------------------------------------------------------------ episode
    def _new_episode(self, seed: int | None) -> None:
        """Seed, draw the workload and build the simulator."""
        super().reset(seed=seed)
        self.episode_seed = int(self.np_random.integers(2**31 - 1))
        self.workload = self._episode_workload(self.episode_seed)
        self.sim = Simulator(self.workload.jobs, self.cluster, self.sim_config, self.episode_seed)
        self._occupancy = []

    def _episode_workload(self, episode_seed: int) -> Workload:
        """The episode's workload; subclasses may transform the jobs."""
        return self.source.sample(episode_seed, self.cluster)

    def _system_job_s(self) -> float:
        """Job-seconds spent in the system so far (queued + running); JCT integrand."""
        return self.sim.record.system_job_s

    def _note_occupancy(self) -> None:
        if self.render_mode == "rgb_array":
            inv = self.sim.inventory
            self._occupancy.append((self.sim.now_s, (inv.total - inv.free).copy()))

    def policy(self, name: str) -> SchedulingPolicy:
        """The registered heuristic ``name``, configured for this env (override to tune)."""
        return make_policy(name)

    def runner_args(self) -> dict[str, Any]:
        """``run_episode`` keyword arguments that replay the current episode (parity)."""
        return {
            "jobs": self.workload,
            "cluster": self.cluster,
            "config": self.sim_config,
            "seed": self.episode_seed,
        }

    def episode_metrics(self) -> dict[str, float]:
        """The simulator's metrics for the episode so far."""
        return compute_metrics(self.sim)

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode=...")
            return None
        if self.render_mode == "ansi":
            return self._render_text()
        return self._render_occupancy()

    def _render_text(self) -> str:
        sim = self.sim
        inv = sim.inventory
        nodes = " ".join(f"{int(f)}/{int(t)}" for f, t in zip(inv.free, inv.total, strict=True))
        lines = [
            f"t={sim.now_s:,.0f}s  queued={len(sim.queue)}  running={len(sim.active)}  "
            f"finished={sim.num_finished}/{len(sim.jobs)}  free GPUs={inv.num_free}/{inv.num_gpus}",
            f"free per node: {nodes}",
        ]
        for j in list(sim.queue)[:8]:
            spec = sim.jobs[j]
            lines.append(f"  queued  job {j:4d} {spec.model:12s} asks {spec.num_gpus:2d} GPUs")
        for j in list(sim.active)[:8]:
            spec = sim.jobs[j]
            lines.append(
                f"  running job {j:4d} {spec.model:12s} on {sim.placement[j]} "
                f"({100 * sim.iterations_done(j) / spec.total_iterations:.0f}% done)"
            )
        return "\n".join(lines) + "\n"

    def _render_occupancy(self) -> np.ndarray:
        inv = self.sim.inventory
        history = self._occupancy or [(self.sim.now_s, inv.total - inv.free)]
        times = np.array([t for t, _ in history])
        busy = np.stack([b for _, b in history])  # (T, nodes)
        end = max(float(times[-1]), 1.0)
        bins = np.linspace(0.0, end, RENDER_WIDTH)
        idx = np.clip(np.searchsorted(times, bins, side="right") - 1, 0, len(times) - 1)
        busy_at = busy[idx]  # (W, nodes)
        rows = []
        for node, total in enumerate(inv.total):
            for g in range(int(total)):
                row = np.where((busy_at[:, node] > g)[:, None], BUSY_RGB, FREE_RGB)
                rows.extend([row] * RENDER_ROW_PX)
            rows.append(np.broadcast_to(NODE_SEPARATOR_RGB, (RENDER_WIDTH, 3)))
        return np.ascontiguousarray(np.stack(rows).astype(np.uint8))

    def _finish_info(self, info: dict[str, Any], done: bool) -> dict[str, Any]:
        if done:
            info["episode_metrics"] = self.episode_metrics()
        return info
