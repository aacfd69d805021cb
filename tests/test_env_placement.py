"""JobPlacement-v0 specifics: GPU-by-GPU placement, masks, parity, placement matters."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401
from cluster_envs.envs.rollout import HeuristicAgent, rollout

ENV_ID = "cluster_envs/JobPlacement-v0"


def test_a_job_starts_once_all_its_gpus_are_placed() -> None:
    env = gym.make(ENV_ID, preset="toy")
    obs, info = env.reset(seed=0)
    base = env.unwrapped
    head = next(iter(base.sim.queue))
    need = base.sim.jobs[head].num_gpus
    node = int(np.flatnonzero(info["action_mask"])[-1])
    for i in range(need):
        assert head in base.sim.queue
        _, reward, _, _, info = env.step(
            node if info["action_mask"][node] else int(np.flatnonzero(info["action_mask"])[0])
        )
        if i < need - 1:
            assert reward == 0.0 and info["time_s"] == 0.0
    assert base.sim.first_start_s[head] == 0.0  # it started at once, on the chosen nodes
    held = [seg for seg in base.sim.record.segments if seg[0] == head]
    placement = base.sim.placement[head] if head in base.sim.active else held[0][3]
    assert sum(g for _, g in placement) == need


def test_invalid_node_is_replaced_and_counted() -> None:
    env = gym.make(ENV_ID, preset="toy")
    env.reset(seed=1)
    _, _, _, _, info = env.step(999)
    assert info["invalid_action"] and info["num_invalid_actions"] == 1


def test_placement_matters_consolidated_beats_spread() -> None:
    jct = {}
    for policy in ("fifo", "fifo-spread"):
        env = gym.make(ENV_ID, preset="toy")
        jct[policy] = np.mean(
            [rollout(env, HeuristicAgent(policy), seed=s).metrics["avg_jct_s"] for s in range(3)]
        )
    assert jct["fifo"] < 0.8 * jct["fifo-spread"]
