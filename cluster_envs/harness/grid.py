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

from cluster_envs.config import suggest
from cluster_envs.envs.registration import env_ids
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ClusterEnvsError, ConfigError
from cluster_envs.policies.registry import PREFIXES, make_policy, policy_names
from cluster_envs.runner import run_episode

ENV_NAMESPACE = "cluster_envs/"


def resolve_env_id(name: str) -> str:
    """``MoldableScheduling-v0`` or the full id -> the registered id (or a clear error)."""
    full = name if name.startswith(ENV_NAMESPACE) else ENV_NAMESPACE + name
    ids = env_ids()
    if full not in ids:
        short = [i.removeprefix(ENV_NAMESPACE) for i in ids]
        raise ConfigError(
            f"unknown env {name!r}{suggest(name.removeprefix(ENV_NAMESPACE), short)}; "
            f"envs: {', '.join(short)}"
        )
    return full


def check_policy_name(name: str) -> str:
    """Validate a policy name against the registry (prefixed names pass through)."""
    prefix, sep, _ = name.partition(":")
    if sep and prefix in PREFIXES:
        return name
    names = policy_names()
    if name not in names:
        raise ConfigError(
            f"unknown policy {name!r}{suggest(name, names)}; known: {', '.join(names)}"
        )
    return name


def parse_seeds(text: str) -> list[int]:
    """``"0-9"``, ``"1,4,7"`` or a mix (``"0-4,10"``) -> the seeds, in the order given.

    Ranges are inclusive; seeds are non-negative; duplicates are dropped.
    """
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise ConfigError(
                f"bad seeds {text!r}: {part!r} is not N or A-B (use '0-9', '1,4,7' or '0-4,10')"
            ) from None
        if last < first:
            raise ConfigError(f"bad seeds {text!r}: range {part!r} runs backwards")
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    return seeds


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
    without the env's window limiting which queued jobs it may pick. An env agent (an SB3
    model, ``sb3:``/``pretrained:``) plays the episode through the env itself.
    """
    row: dict[str, Any] = {
        "env": cell.env_id,
        "workload": cell.workload,
        "policy": cell.policy,
        "seed": cell.seed,
    }
    start = time.perf_counter()
    try:
        env = gym.make(cell.env_id, **cell.env_kwargs)
        prefix, sep, _ = cell.policy.partition(":")
        if not (sep and prefix in PREFIXES):
            details, outcome = _run_heuristic(env, cell.policy, cell.seed)
        else:
            result = rollout(env, make_policy(cell.policy), cell.seed)
            details = _details_from_sim(env.unwrapped.sim)
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


def _run_heuristic(env: gym.Env, name: str, seed: int) -> tuple[dict, dict]:
    env.reset(seed=seed)
    base = env.unwrapped
    result = run_episode(policy=base.policy(name), **base.runner_args())
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
