"""The JobPlacement generalist (issue 13): training path and the shipped agent's card."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers import play_registry_agent

import cluster_envs  # noqa: F401  (registers the envs)
from agents import generalist
from agents.generalist_card import replay
from agents.policy import PRETRAINED_DIR, Sb3Agent, pretrained_info
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_agent
from cluster_envs.workload.families import family_names

NAME = "JobPlacement-v0"
#: The card's family the exact-replay test plays (4 nodes, 30 jobs: fast), and one with
#: another cluster shape (16 nodes of three GPU types).
REPLAY_FAMILIES = ("synthetic-16", "alibaba")


def test_train_placement_clones_first_fit_and_scores_validation(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--env", "placement", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "12", "--pretrain-episodes", "3", "--dagger-rounds", "0",
                     "--pretrain-epochs", "10",
                     "--val-families", "synthetic-16,alibaba,preset:default"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_id"] == "cluster_envs/JobPlacement-v0"
    assert record["env_kwargs"] == {"observation": "scale_free_hints"}
    assert record["warm_start"]["teacher"] == "fifo"
    assert record["warm_start"]["rounds"][0]["teacher_agreement"] > 0.95
    last = record["curve"][-1]
    assert set(last["val_families"]) == {"synthetic-16", "alibaba", "preset:default"}
    assert last["val_worst_family"] == max(last["val_families"].values())
    assert (out / "best_model.zip").is_file()
    test = tmp_path / "val.json"
    generalist.main(["evaluate", "--env", "placement", "--model", str(out / "best_model.zip"),
                     "--out", str(test), "--families", "synthetic-16", "--split", "validation",
                     "--quick", "--seeds", "500", "501"])  # fmt: skip
    data = json.loads(test.read_text())
    assert data["env"] == "cluster_envs/JobPlacement-v0" and data["split"] == "validation"
    assert set(data["rows"]["synthetic-16"]) == {"fifo", "fifo-best-fit", "fifo-spread", "agent"}
    summary = generalist.summarize(str(test))
    assert summary["single"] == "fifo"


def test_preset_workloads_stand_beside_the_families() -> None:
    spec = generalist.spec_of("placement")
    everything = generalist.families_of("all,preset:default,mixed", spec)
    assert everything == [*family_names("placement"), "preset:default"]
    kwargs = generalist.env_kwargs("preset:default", "validation", 12, spec)
    assert kwargs == {"preset": "default", "observation": "scale_free_hints", "num_jobs": 12}
    # the env's own default preset, seed for seed (a preset has no split streams)
    ours = generalist.make_env("preset:default", "validation", 12, spec)
    plain = gym.make(f"cluster_envs/{NAME}", observation="scale_free_hints", num_jobs=12)
    for seed in (500, 501):
        assert np.array_equal(ours.reset(seed=seed)[0], plain.reset(seed=seed)[0])
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        generalist.make_env("preset:nope", "validation", 12, spec)


def test_shipped_card_covers_every_family_and_its_ratios_follow_its_seeds() -> None:
    card = pretrained_info(NAME)
    assert card["env_id"] == "cluster_envs/JobPlacement-v0"
    assert card["env_kwargs"] == {"observation": "scale_free_hints"}
    test = card["test_families"]
    assert test["split"] == "test" and len(test["seeds"]) >= 10
    assert set(test["families"]) == set(family_names("placement"))
    for fam, row in test["families"].items():
        jct = row["avg_jct_s"]
        ratio = np.mean(jct["agent"]) / np.mean(jct["fifo"])
        assert row["agent_to_reference"] == ratio, fam
        assert len(jct["agent"]) == len(test["seeds"])
    assert "train_pretrained.sh" in card["train_command"] and card["train_wall_s"] > 0
    # Curve times are seconds since training began, not timestamps.
    assert all(0 <= p["wall_s"] <= card["budget"]["train_wall_s_in_run"]
               for p in card["validation_curve"])  # fmt: skip


def test_shipped_card_numbers_come_back_exactly_from_their_seeds() -> None:
    card = pretrained_info(NAME)
    seeds = card["test_families"]["seeds"]
    agent = make_agent(f"pretrained:{NAME}")
    assert isinstance(agent, Sb3Agent)
    for fam in REPLAY_FAMILIES:
        row = card["test_families"]["families"][fam]["avg_jct_s"]
        env, played = play_registry_agent(agent, card["env_id"], fam, "avg_jct_s", seeds)
        assert played == row["agent"], fam
        assert [rollout(env, HeuristicAgent("fifo"), s).metrics["avg_jct_s"] for s in seeds] == (
            row["fifo"]
        )
    # The card writer's own path gives the same numbers.
    fam = REPLAY_FAMILIES[0]
    again = replay(card, fam, seeds[:3], PRETRAINED_DIR / f"{NAME}.zip")
    assert again == card["test_families"]["families"][fam]["avg_jct_s"]["agent"][:3]
