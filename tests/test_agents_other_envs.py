"""Every env is trainable with the algorithms its issue names, through the real train()."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.policy import pretrained_agent
from agents.train import train
from cluster_envs.envs.rollout import rollout

CASES = [
    ("cluster_envs/JobPlacement-v0", "maskable_ppo"),
    ("cluster_envs/JobPlacement-v0", "dqn"),
    ("cluster_envs/MetisAllocation-v0", "ppo"),
    ("cluster_envs/MetisAllocation-v0", "a2c"),
    ("cluster_envs/MetisAllocationDiscrete-v0", "dqn"),
]


@pytest.mark.parametrize(("env_id", "algo"), CASES)
def test_a_few_hundred_training_steps(env_id: str, algo: str, tmp_path: Path) -> None:
    result = train(
        algo, env_id, tmp_path / "run", timesteps=200, seed=0, env_kwargs={"preset": "toy"},
        hyperparams={"n_steps": 64, "batch_size": 64} if "ppo" in algo else None,
        n_envs=1, eval_freq=0, progress_bar=False,
    )  # fmt: skip
    assert result.num_timesteps >= 200
    assert result.last_model.is_file()


@pytest.mark.parametrize("name", ["JobPlacement-v0", "MetisAllocation-v0"])
def test_shipped_agents_play_their_env(name: str) -> None:
    import gymnasium as gym

    from cluster_envs.policies.trained import agent_env_kwargs

    agent = pretrained_agent(name)
    # As every benchmark builds it: the env with the observation of the agent's card.
    env = gym.make(f"cluster_envs/{name}", **agent_env_kwargs(agent, {}))
    agent.fit_env(env)
    result = rollout(env, agent, seed=100)
    assert result.metrics["num_finished"] == result.metrics["num_jobs"]
    assert np.isfinite(result.episode_return)
