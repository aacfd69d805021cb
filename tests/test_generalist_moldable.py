"""The shipped MoldableScheduling generalist (issue 13): its card and its exact replay."""

from __future__ import annotations

import numpy as np
from helpers import play_registry_agent

import cluster_envs  # noqa: F401  (registers the envs)
from agents.generalist_card import replay
from agents.policy import PRETRAINED_DIR, Sb3Agent, pretrained_info
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.policies import make_agent
from cluster_envs.workload.families import family_names

NAME = "MoldableScheduling-v0"
REFERENCE = "threshold-eta"
#: The card's families the exact-replay test plays: the smallest cluster (4 nodes of 4
#: GPUs, 30 jobs) and one of 8-GPU nodes, a shape the agent never trained on.
REPLAY_FAMILIES = ("synthetic-16", "lublin-256")


def test_shipped_card_covers_every_family_and_its_ratios_follow_its_seeds() -> None:
    card = pretrained_info(NAME)
    assert card["env_id"] == "cluster_envs/MoldableScheduling-v0"
    assert card["env_kwargs"] == {"observation": "scale_free_hints"}
    assert card["reference_heuristic"] == REFERENCE
    assert (
        card["budget"]["train_family"] == "mixed"
        and card["budget"]["teacher"] == "lookahead-multi-arrivals"
    )
    test = card["test_families"]
    assert test["split"] == "test" and len(test["seeds"]) >= 10
    assert set(test["families"]) == set(family_names("moldable"))
    for fam, row in test["families"].items():
        jct = row["avg_jct_s"]
        assert row["agent_to_reference"] == np.mean(jct["agent"]) / np.mean(jct[REFERENCE]), fam
        best = min(np.mean(v) for p, v in jct.items() if p != "agent")
        assert row["agent_to_best"] == np.mean(jct["agent"]) / best, fam
        assert len(jct["agent"]) == len(test["seeds"])
    assert card["train_command"] == "scripts/train_pretrained.sh" and card["train_wall_s"] > 0
    # Curve times are seconds since training began, not timestamps.
    assert all(0 <= p["wall_s"] <= card["budget"]["train_wall_s_in_run"]
               for p in card["validation_curve"])  # fmt: skip
    # A generalist carries no observation statistics.
    assert not (PRETRAINED_DIR / f"{NAME}_vecnormalize.pkl").exists()


def test_shipped_card_numbers_come_back_exactly_from_their_seeds() -> None:
    card = pretrained_info(NAME)
    seeds = card["test_families"]["seeds"][:3]
    agent = make_agent(f"pretrained:{NAME}")
    assert isinstance(agent, Sb3Agent) and agent.observation == "scale_free_hints"
    for fam in REPLAY_FAMILIES:
        row = card["test_families"]["families"][fam]["avg_jct_s"]
        env, played = play_registry_agent(agent, card["env_id"], fam, "avg_jct_s", seeds)
        assert played == row["agent"][:3], fam
        reference = HeuristicAgent(REFERENCE)
        assert [rollout(env, reference, s).metrics["avg_jct_s"] for s in seeds] == (
            row[REFERENCE][:3]
        )
    # The card writer's own path gives the same numbers.
    fam = REPLAY_FAMILIES[0]
    again = replay(card, fam, seeds[:2], PRETRAINED_DIR / f"{NAME}.zip")
    assert again == card["test_families"]["families"][fam]["avg_jct_s"]["agent"][:2]
