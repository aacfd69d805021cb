"""The MetisAllocation generalist (issue 13): teachers over options and the training path."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from agents import generalist
from agents.teacher import FollowOption, LookaheadTeacher, make_teacher
from cluster_envs.envs.metis_hints import OPTIONS
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError

METIS = "cluster_envs/MetisAllocation-v0"
SMALL = {"family": "synthetic-16", "split": "validation", "num_jobs": 12}


def _hints_env() -> gym.Env:
    return gym.make(METIS, action="hints", observation="scale_free_hints", **SMALL)


def test_teachers_answer_in_options() -> None:
    env = _hints_env()
    teacher = make_teacher("slaq", METIS, env.unwrapped)
    assert isinstance(teacher, FollowOption)
    assert make_teacher("slaq", METIS, gym.make(METIS, **SMALL).unwrapped) is None
    with pytest.raises(ConfigError, match="no option"):
        make_teacher("fifo-rigid", METIS, env.unwrapped)
    look = make_teacher("lookahead", METIS, env.unwrapped)
    assert isinstance(look, LookaheadTeacher) and look.options
    assert look.objective == "quality"


def test_a_one_candidate_lookahead_plays_that_heuristic() -> None:
    env = _hints_env()
    plain = gym.make(METIS, **SMALL)
    look = make_teacher("lookahead:optimus", METIS, env.unwrapped)
    played = rollout(env, look, seed=3)
    ref = rollout(plain, HeuristicAgent(plain.unwrapped.policy("optimus")), seed=3)
    assert played.metrics == ref.metrics
    assert look.choices == {"optimus": played.num_steps}


def test_the_quality_lookahead_switches_between_candidates() -> None:
    env = _hints_env()
    look = make_teacher("lookahead", METIS, env.unwrapped)
    obs, info = env.reset(seed=4)
    look.reset(env.unwrapped.episode_seed)
    steps = 0
    while steps < 40:
        action = look.act(env, obs, info)
        mask = info["action_mask"].reshape(-1, len(OPTIONS))
        assert mask[np.arange(len(action)), action].all()
        obs, _, term, trunc, info = env.step(action)
        steps += 1
        if term or trunc:
            break
    assert sum(look.choices.values()) == steps
    assert len(look.choices) >= 2  # not one heuristic throughout


def test_train_metis_clones_slaq_and_scores_validation_per_family(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--env", "metis", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "10", "--pretrain-episodes", "2", "--dagger-rounds", "0",
                     "--pretrain-epochs", "10", "--val-families", "synthetic-16,alibaba"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_id"] == METIS
    assert record["env_kwargs"] == {"observation": "scale_free_hints", "action": "hints"}
    assert record["warm_start"]["teacher"] == "slaq"
    assert record["warm_start"]["rounds"][0]["teacher_agreement"] > 0.95
    last = record["curve"][-1]
    assert set(last["val_families"]) == {"synthetic-16", "alibaba"}
    test = tmp_path / "val.json"
    generalist.main(["evaluate", "--env", "metis", "--model", str(out / "best_model.zip"),
                     "--out", str(test), "--families", "synthetic-16", "--split", "validation",
                     "--quick", "--seeds", "500", "501"])  # fmt: skip
    data = json.loads(test.read_text())
    rows = data["rows"]["synthetic-16"]
    assert set(rows) == {*generalist.ENV_SPECS["metis"].baselines, "agent"}
    assert set(data["idle_wait_share"]["synthetic-16"]) == set(rows)
    summary = generalist.summarize(str(test))
    fam = summary["families"]["synthetic-16"]
    best = max(rows, key=lambda p: np.mean(rows[p]) if p != "agent" else -1.0)
    assert fam["best_heuristic"] == best
    # quality: higher is better, so the ratio is best / agent (> 1: worse than the best)
    assert fam["agent_to_best"] == pytest.approx(np.mean(rows[best]) / np.mean(rows["agent"]))
