"""Set-policy agents on shapes they were not trained on, through every loading path.

A tiny SetPolicy MaskablePPO agent is trained on scale-free observations of one cluster
and saved with a card naming that observation; then ``load_agent``, ``cluster-envs
evaluate``'s path and the benchmark's cells (``pretrained:`` and ``sb3:`` specs, the
generalization suite's own env kwargs) play it on another cluster: each builds the env
with the card's observation and adapts the weights to the new shapes. A flat-MLP agent
with the same card keeps the clear shape error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

import agents.policy
import cluster_envs  # noqa: F401  (registers the envs)
from agents.evaluate import evaluate, resolve_model
from agents.policy import load_agent
from agents.set_policy import SetPolicy
from cluster_envs.errors import ConfigError
from cluster_envs.harness.generalization import split_incompatible
from cluster_envs.harness.grid import Cell, run_cell
from cluster_envs.harness.suites import get_suite
from cluster_envs.policies import make_agent
from cluster_envs.policies.trained import agent_env_kwargs

MOLDABLE = "cluster_envs/MoldableScheduling-v0"
PLACEMENT = "cluster_envs/JobPlacement-v0"
#: What the agents are trained on, and the card they ship with (as the generalist's).
TRAIN_KWARGS: dict[str, Any] = {
    "family": "mixed",
    "split": "train",
    "observation": "scale_free",
    "num_jobs": 12,
}
#: Families whose clusters differ from ``mixed``'s (8-GPU nodes; 4 nodes instead of 16).
OTHER = {MOLDABLE: "lublin-256", PLACEMENT: "synthetic-16"}


def _save(out: Path, env_id: str, policy: Any, timesteps: int) -> Path:
    """Train ``policy`` briefly on ``TRAIN_KWARGS`` and save it as ``out/<Env>.zip`` + card."""
    env = gym.make(env_id, **TRAIN_KWARGS)
    kwargs: dict[str, Any] = {"policy_kwargs": {"hidden": 16}} if policy is SetPolicy else {}
    model = MaskablePPO(policy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0,
                        device="cpu", **kwargs)  # fmt: skip
    model.learn(timesteps)
    out.mkdir(parents=True, exist_ok=True)
    name = env_id.split("/")[1]
    model.save(out / f"{name}.zip")
    card = {"env_id": env_id, "env_kwargs": TRAIN_KWARGS, "algo": "maskable_ppo"}
    (out / f"{name}.json").write_text(json.dumps(card))
    return out / f"{name}.zip"


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("set")
    _save(out, MOLDABLE, SetPolicy, 128)
    _save(out, PLACEMENT, SetPolicy, 64)
    return out


@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("flat")
    _save(out, MOLDABLE, "MlpPolicy", 0)
    return out


def _suite_kwargs(env_id: str, family: str) -> dict[str, Any]:
    """The generalization suite's (``--quick``) env kwargs of ``family``'s test split."""
    entry = next(e for e in get_suite("generalization") if e.env == env_id)
    return entry.env_kwargs({}, quick=True)[f"{family}/test"]


def test_the_card_names_the_observation_of_sb3_and_pretrained_agents(
    set_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert make_agent(f"sb3:{set_dir / 'MoldableScheduling-v0.zip'}").observation == "scale_free"
    bare = tmp_path / "bare"  # a card that sets no observation: the caller's stays
    bare.mkdir()
    (bare / "MoldableScheduling-v0.zip").write_bytes(
        (set_dir / "MoldableScheduling-v0.zip").read_bytes()
    )
    card = {"env_id": MOLDABLE, "env_kwargs": {"preset": "default"}, "algo": "maskable_ppo"}
    (bare / "MoldableScheduling-v0.json").write_text(json.dumps(card))
    plain = make_agent(f"sb3:{bare / 'MoldableScheduling-v0.zip'}")
    assert plain.observation is None
    assert agent_env_kwargs(plain, {"family": "pollux"}) == {"family": "pollux"}
    shipped = make_agent("pretrained:MetisAllocation-v0")  # observation and action settings
    assert agent_env_kwargs(shipped, {"family": "pollux"}) == {
        "family": "pollux",
        "observation": "scale_free_hints",
        "action": "hints",  # and the heuristics its options follow
        "hint_policies": ["slaq", "optimus", "tiresias", "fair", "slaq-window"],
        "observe_slice": True,  # and the slice length its rule reads
    }
    shipped = make_agent("pretrained:MoldableScheduling-v0")  # the generalist's card does
    assert shipped.observation == "scale_free_hints"
    assert agent_env_kwargs(shipped, {"family": "pollux"}) == {
        "family": "pollux",
        "observation": "scale_free_hints",
    }
    monkeypatch.setattr(agents.policy, "PRETRAINED_DIR", set_dir)
    agent = make_agent("pretrained:MoldableScheduling-v0")
    assert agent.observation == "scale_free"
    wanted = {"family": "pollux", "observation": "scale_free"}
    assert agent_env_kwargs(agent, {"family": "pollux", "observation": "default"}) == wanted


def test_load_agent_adapts_a_set_policy_to_another_cluster(set_dir: Path) -> None:
    path = set_dir / "MoldableScheduling-v0.zip"
    env = gym.make(MOLDABLE, **{**TRAIN_KWARGS, "family": OTHER[MOLDABLE]})
    agent, _ = load_agent(path, env=env)
    trained = agent.trained.observation_space.shape
    assert trained != env.observation_space.shape
    assert agent.model.observation_space.shape == env.observation_space.shape
    for a, b in zip(agent.trained.policy.parameters(), agent.model.policy.parameters(),
                    strict=True):  # fmt: skip
        assert torch.equal(a, b)
    obs, info = env.reset(seed=5)
    for _ in range(30):
        action = agent.act(env, obs, info)
        assert env.unwrapped.action_masks()[action]  # type: ignore[attr-defined]
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break


@pytest.mark.parametrize("env_id", [MOLDABLE, PLACEMENT])
def test_suite_cells_play_a_set_policy_agent_with_its_observation(
    env_id: str, set_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents.policy, "PRETRAINED_DIR", set_dir)
    family = OTHER[env_id]
    kwargs = _suite_kwargs(env_id, family)
    assert "observation" not in kwargs  # the suite's own kwargs: the default observation
    spec = f"pretrained:{env_id.split('/')[1]}"
    other = gym.make(env_id, **{**kwargs, "observation": "scale_free"})
    trained: Any = make_agent(spec)  # an Sb3Agent
    assert other.observation_space.shape != trained.model.observation_space.shape
    cells = [Cell(env_id, f"{family}/test", kwargs, spec, 100)]
    keep, incompatible = split_incompatible(cells)
    assert keep == cells and incompatible == []
    row = run_cell(cells[0])
    assert row["status"] == "ok", row.get("error")
    assert row["observation"] == "scale_free"
    assert row["num_invalid_actions"] == 0  # every action within the mask
    assert row["metrics"]["num_finished"] == row["metrics"]["num_jobs"] > 0


def test_evaluate_adapts_a_set_policy_from_its_card(set_dir: Path) -> None:
    spec = resolve_model(f"sb3:{set_dir / 'MoldableScheduling-v0.zip'}")
    env_id, kwargs, rows = evaluate(spec, None, {"family": OTHER[MOLDABLE], "split": "test"},
                                    [100])  # fmt: skip
    assert env_id == MOLDABLE and kwargs["observation"] == "scale_free"
    assert rows[0]["num_invalid_actions"] == 0 and np.isfinite(rows[0]["avg_jct_s"])


def test_other_policies_keep_the_clear_shape_error(
    flat_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = flat_dir / "MoldableScheduling-v0.zip"
    env = gym.make(MOLDABLE, **{**TRAIN_KWARGS, "family": OTHER[MOLDABLE]})
    with pytest.raises(ConfigError, match="does not match the env's"):
        load_agent(path, env=env)
    monkeypatch.setattr(agents.policy, "PRETRAINED_DIR", flat_dir)
    spec = "pretrained:MoldableScheduling-v0"
    cells = [
        Cell(MOLDABLE, f"{family}/test", _suite_kwargs(MOLDABLE, family), spec, 100)
        for family in ("mixed", OTHER[MOLDABLE])
    ]
    keep, rows = split_incompatible(cells)
    assert keep == cells[:1]  # same shapes as trained: it runs
    assert rows[0]["status"] == "incompatible"
    assert rows[0]["error"].startswith("incompatible: trained for")
    row = run_cell(cells[1])
    assert row["status"] == "error" and "does not match the env's" in row["error"]
