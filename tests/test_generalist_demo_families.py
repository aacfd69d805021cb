"""The generalist's multi-cluster warm start (``--demo-families``, issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from agents import generalist
from agents.imitation import PretrainSettings, collect_demonstrations
from agents.set_policy import SetPolicy, adapt

FAMILIES = ["mixed", "lublin-256"]  # 4-GPU and 8-GPU nodes: two observation shapes


def _model() -> MaskablePPO:
    venv = VecNormalize(DummyVecEnv([lambda: generalist.make_env("mixed", "train", 12)]),
                        norm_obs=False)  # fmt: skip
    return MaskablePPO(SetPolicy, venv, n_steps=8, batch_size=8, seed=0, device="cpu",
                       policy_kwargs={"hidden": 16})  # fmt: skip


def _agreement(model: MaskablePPO, family: str) -> float:
    """Share of threshold-eta's actions on ``family``'s train split the model takes."""
    env = generalist.make_env(family, "train", 12)
    view = adapt(model, env)
    kwargs = {"family": family, "split": "train", "observation": "scale_free", "num_jobs": 12}
    demos = collect_demonstrations(generalist.ENV_ID, kwargs, "threshold-eta", 3, 7, 0.99)
    predicted, _ = view.policy.predict(demos.observations, deterministic=True,
                                       action_masks=demos.masks)  # fmt: skip
    return float(np.mean(np.asarray(predicted).reshape(-1) == demos.actions[:, 0]))


def test_warm_start_families_fits_every_cluster_into_one_set_of_weights() -> None:
    model = _model()
    before = {k: v.clone() for k, v in model.policy.state_dict().items()}
    untrained = {f: _agreement(model, f) for f in FAMILIES}
    settings = PretrainSettings(teacher="threshold-eta", episodes=4, epochs=15, dagger_rounds=1)
    record = generalist.warm_start_families(model, FAMILIES, settings, seed=0, num_jobs=12)
    assert record["families"] == FAMILIES and len(record["rounds"]) == 2
    assert all(record["steps"][f] > 0 for f in FAMILIES)
    assert any(not torch.equal(v, model.policy.state_dict()[k]) for k, v in before.items())
    # the weights learnt on the 8-GPU-node cluster reached the model itself
    trained = {f: _agreement(model, f) for f in FAMILIES}
    for f in FAMILIES:
        assert trained[f] >= untrained[f] + 0.25, (f, untrained[f], trained[f])


def test_train_with_demo_families_and_no_ppo(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--out", str(out), "--timesteps", "0", "--num-jobs", "12",
                     "--pretrain-episodes", "1", "--dagger-rounds", "0", "--pretrain-epochs", "1",
                     "--demo-families", ",".join(FAMILIES)])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["warm_start"]["families"] == FAMILIES
    assert record["timesteps"] == 0 and len(record["curve"]) == 1
    assert (out / "best_model.zip").exists() and (out / "pretrained_model.zip").exists()
