"""agents.publish: the shipped copy acts exactly as the run's best model, without Adam state."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3 import PPO

import agents.publish as publish_module
from agents.train import train

ENV = "cluster_envs/MetisAllocation-v0"


def test_publish_ships_a_smaller_model_that_acts_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = train(
        "ppo", ENV, tmp_path / "run", timesteps=256, seed=0, env_kwargs={"preset": "toy"},
        hyperparams={"n_steps": 64, "batch_size": 64}, n_envs=1, eval_freq=128,
        eval_episodes=1, progress_bar=False,
    )  # fmt: skip
    assert result.best_model is not None
    monkeypatch.setattr(publish_module, "PRETRAINED_DIR", tmp_path / "shipped")
    target = publish_module.publish(result.out_dir, [100, 101], wall_s=1.0)
    assert target.stat().st_size < result.best_model.stat().st_size
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["env_id"] == ENV and card["algo"] == "ppo"
    assert set(card["test"]) >= {"quality_auc", "time_to_quality_s"}
    original, shipped = PPO.load(result.best_model), PPO.load(target)
    obs = np.random.default_rng(0).random((20, *original.observation_space.shape))
    assert np.array_equal(
        original.predict(obs, deterministic=True)[0], shipped.predict(obs, deterministic=True)[0]
    )


def test_publish_refuses_an_unknown_model_choice(tmp_path: Path) -> None:
    from cluster_envs.errors import ConfigError

    with pytest.raises(ConfigError, match="--model must be one of"):
        publish_module.publish(tmp_path, [100], None, model="final.zip")
