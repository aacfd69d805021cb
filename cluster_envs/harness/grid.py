"""The benchmark grid: every env x workload x policy x seed, run as independent cells.

A cell is pure: it builds its env from (id, kwargs), resets it with its seed, plays one
episode with its policy and returns a plain row, so cells give identical rows whether
they run in this process, in worker processes or as Ray tasks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from cluster_envs.envs.base import unwrap_cluster_env as _suite_env
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ClusterEnvsError
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.trained import agent_env_kwargs, is_agent_spec, make_agent
from cluster_envs.runner import run_episode


@dataclass(frozen=True)
class Cell:
    """One episode of the grid."""

    env_id: str
    workload: str
    env_kwargs: dict[str, Any] = field(hash=False)
    policy: str
    seed: int

    def key(self) -> tuple[str, str, str, int]:
        return (self.env_id, self.workload, self.policy, self.seed)


def make_cells(
    envs: Sequence[str],
    workloads: dict[str, dict[str, Any]],
    policies: Sequence[str],
    seeds: Sequence[int],
) -> list[Cell]:
    """The grid in a fixed order (env, workload, policy, seed)."""
    return [
        Cell(env, wname, dict(wkw), policy, seed)
        for env in envs
        for wname, wkw in workloads.items()
        for policy in policies
        for seed in seeds
    ]


def run_cell(cell: Cell, keep_details: bool = True) -> dict[str, Any]:
    """Play one cell; returns its row (``status`` ok or error, never raises).

    A heuristic (a SchedulingPolicy) replays the env's episode -- the workload, cluster,
    simulator settings and seed ``env.reset(seed)`` drew -- through the no-gym runner,
    which gives the metrics it would give through the env (the parity tests check this)
    without the env's window limiting which queued jobs it may pick. A trained agent
    (``make_agent``: not a SchedulingPolicy) plays the episode through the env itself,
    built with the agent's observation setting (recorded in the row as ``observation``)
    and fitted to the env's shapes (``fit_env``; a ConfigError makes an error row).
    """
    row: dict[str, Any] = {
        "env": cell.env_id,
        "workload": cell.workload,
        "policy": cell.policy,
        "seed": cell.seed,
    }
    start = time.perf_counter()
    try:
        env, actor = _env_and_actor(cell)
        if isinstance(actor, SchedulingPolicy):
            details, outcome = _run_heuristic(env, actor, cell.seed)
        else:
            row["observation"] = actor.observation or "default"
            result = rollout(env, actor, cell.seed)
            details = _details_from_sim(_suite_env(env).sim)
            outcome = {
                "metrics": result.metrics,
                "episode_return": result.episode_return,
                "num_steps": result.num_steps,
                "num_invalid_actions": result.num_invalid_actions,
            }
    except ClusterEnvsError as exc:
        row.update(status="error", error=str(exc), metrics={})
        return row
    outcome["metrics"] = {k: float(v) for k, v in outcome["metrics"].items()}
    row.update(status="ok", **outcome, wall_s=time.perf_counter() - start)
    if keep_details:
        row["details"] = details
    return row


def _env_and_actor(cell: Cell) -> tuple[gym.Env, Any]:
    """The cell's env and player: a trained agent fitted to an env built with its own
    observation setting, or the heuristic configured like the cell's env."""
    if is_agent_spec(cell.policy):
        agent = make_agent(cell.policy)
        env = gym.make(cell.env_id, **agent_env_kwargs(agent, cell.env_kwargs))
        agent.fit_env(env)
        return env, agent
    env = gym.make(cell.env_id, **cell.env_kwargs)
    return env, _suite_env(env).policy(cell.policy)


def _run_heuristic(env: gym.Env, policy: SchedulingPolicy, seed: int) -> tuple[dict, dict]:
    env.reset(seed=seed)
    base = _suite_env(env)
    result = run_episode(policy=policy, **base.runner_args())
    metrics = dict(result.metrics)
    submit, finish = result.jobs["submit_time_s"], result.jobs["finish_s"]
    done = ~np.isnan(finish)
    details = {
        "jct_s": (finish[done] - submit[done]).tolist(),
        "timeline": {k: np.asarray(v).tolist() for k, v in result.timeline.items()},
        "num_gpus": int(base.cluster.num_gpus),
        "node_gpus": [
            g.gpus_per_node for g in base.cluster.node_groups for _ in range(g.num_nodes)
        ],
        "segments": [(j, t0, t1, list(p)) for j, t0, t1, p in result.segments],
    }
    return details, {"metrics": metrics, "episode_return": None, "num_steps": None,
                     "num_invalid_actions": 0}  # fmt: skip


def _details_from_sim(sim: Any) -> dict[str, Any]:
    """What the plots need: JCTs, the timeline and GPU holdings (not written to JSON)."""
    submit = np.array([j.submit_time_s for j in sim.jobs])
    done = ~np.isnan(sim.finish_s)
    return {
        "jct_s": (sim.finish_s[done] - submit[done]).tolist(),
        "timeline": {k: v.tolist() for k, v in sim.record.timeline().items()},
        "num_gpus": int(sim.inventory.num_gpus),
        "node_gpus": sim.inventory.total.tolist(),
        "segments": [(j, t0, t1, list(p)) for j, t0, t1, p in sim.record.segments],
    }
