"""The shipped pretrained agent: loads through the policy registry and beats random."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from agents.policy import (
    PRETRAINED_DIR,
    RandomMaskedAgent,
    Sb3Agent,
    pretrained_info,
    pretrained_names,
)
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_agent, make_policy
from cluster_envs.runner import run_episode

ENV = "cluster_envs/MoldableScheduling-v0"
SEEDS = (100, 101, 102)
#: The shipped zip must stay small (package data).
MAX_ZIP_BYTES = 1_000_000


def test_pretrained_is_shipped_small_and_documented() -> None:
    assert "MoldableScheduling-v0" in pretrained_names()
    zip_path = PRETRAINED_DIR / "MoldableScheduling-v0.zip"
    assert zip_path.stat().st_size < MAX_ZIP_BYTES
    card = pretrained_info("MoldableScheduling-v0")
    assert card["env_id"] == ENV and card["algo"] == "maskable_ppo"
    assert "train_pretrained.sh" in card["train_command"]
    assert (PRETRAINED_DIR / "README.md").is_file()


def test_pretrained_beats_random_masked_actions_on_fixed_seeds() -> None:
    agent = make_agent("pretrained:MoldableScheduling-v0")
    assert isinstance(agent, Sb3Agent) and agent.maskable
    card = pretrained_info("MoldableScheduling-v0")
    env = gym.make(ENV, **card["env_kwargs"])
    trained = [rollout(env, agent, s) for s in SEEDS]
    random = [rollout(env, RandomMaskedAgent(), s) for s in SEEDS]
    assert all(r.metrics["num_unfinished"] == 0 for r in trained)
    assert all(r.num_invalid_actions == 0 for r in trained)  # masks respected
    trained_jct = np.mean([r.metrics["avg_jct_s"] for r in trained])
    random_jct = np.mean([r.metrics["avg_jct_s"] for r in random])
    assert trained_jct < random_jct
    # Deterministic: the same seed plays the same episode.
    assert rollout(env, agent, SEEDS[0]).metrics == trained[0].metrics


def test_namespaced_name_and_unknown_name() -> None:
    assert isinstance(make_agent("pretrained:cluster_envs/MoldableScheduling-v0"), Sb3Agent)
    with pytest.raises(ConfigError, match="did you mean 'MoldableScheduling-v0'"):
        make_agent("pretrained:MoldableSchedulin-v0")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        make_agent("sb3:/nowhere/model.zip")


def test_sb3_agents_say_they_need_an_env() -> None:
    workload = cluster_envs.load_workload("philly-sample", num_jobs=5)
    with pytest.raises(ConfigError, match="trained agent, not a heuristic"):
        run_episode(workload, "pretrained:MoldableScheduling-v0", "pollux-testbed")
    # The loaded object is not a SchedulingPolicy: the runner refuses it by type.
    with pytest.raises(ConfigError, match="not a SchedulingPolicy"):
        run_episode(workload, make_agent("pretrained:MoldableScheduling-v0"), "pollux-testbed")
    with pytest.raises(ConfigError, match="not a heuristic"):
        make_policy("sb3:/nowhere/model.zip")
    with pytest.raises(ConfigError, match="did you mean 'sb3'"):
        make_agent("sb33:/nowhere/model.zip")


def test_pretrained_metis_beats_random_and_reproduces_its_card() -> None:
    card = pretrained_info("MetisAllocation-v0")
    agent = make_agent("pretrained:MetisAllocation-v0")
    env = gym.make(card["env_id"], **card["env_kwargs"])
    trained = [rollout(env, agent, s) for s in SEEDS]
    random = [rollout(env, RandomMaskedAgent(), s) for s in SEEDS]
    assert all(r.metrics["num_unfinished"] == 0 for r in trained)
    trained_auc = np.mean([r.metrics["quality_auc"] for r in trained])
    random_auc = np.mean([r.metrics["quality_auc"] for r in random])
    assert trained_auc > random_auc
    # The card's test numbers come back exactly from its seeds (results reproduce).
    first, last = (int(x) for x in card["test_seeds"].split()[0].split(".."))
    aucs = [rollout(env, agent, s).metrics["quality_auc"] for s in range(first, last + 1)]
    assert np.mean(aucs) == pytest.approx(card["test"]["quality_auc"]["mean"], abs=1e-4)
