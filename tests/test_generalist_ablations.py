"""The generalist's ablations (issue 13): no warm start, and the flat MLP (FlatPolicy)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401
from agents import generalist
from agents.set_policy import FlatPolicy, SetPolicy, adapt

MOLDABLE = "cluster_envs/MoldableScheduling-v0"
#: ``mixed`` has 4-GPU nodes; lublin-256 8-GPU ones, so a longer global block.
OTHER = "lublin-256"


def _env(family: str) -> gym.Env:
    return gym.make(MOLDABLE, family=family, split="train", observation="scale_free", num_jobs=12)


def test_flat_policy_is_flat_and_serves_another_node_size(tmp_path: Path) -> None:
    env, other = _env("mixed"), _env(OTHER)
    assert env.observation_space.shape != other.observation_space.shape
    model = MaskablePPO(FlatPolicy, env, n_steps=32, batch_size=32, n_epochs=1, seed=0,
                        device="cpu", policy_kwargs={"hidden": 16})  # fmt: skip
    assert not any(isinstance(m, SetPolicy) for m in model.policy.modules())
    assert model.policy.mlp_extractor.policy_net[0].out_features == 16
    model.learn(32)
    model.save(tmp_path / "flat.zip")
    loaded = MaskablePPO.load(tmp_path / "flat.zip", device="cpu")
    assert isinstance(loaded.policy, FlatPolicy) and loaded.policy.hidden == 16

    obs, _ = env.reset(seed=3)
    mask = env.unwrapped.action_masks()
    a1, _ = model.predict(obs, deterministic=True, action_masks=mask)
    a2, _ = loaded.predict(obs, deterministic=True, action_masks=mask)
    assert int(a1) == int(a2)

    served = adapt(loaded, other)
    assert served.policy.observation_space == other.observation_space
    for (k, v), (k2, v2) in zip(loaded.policy.state_dict().items(),
                                served.policy.state_dict().items(), strict=True):  # fmt: skip
        assert k == k2 and torch.equal(v, v2)
    obs, _ = other.reset(seed=3)
    mask = other.unwrapped.action_masks()
    action, _ = served.predict(obs, deterministic=True, action_masks=mask)
    assert mask[int(action)]


def test_flat_policy_is_not_permutation_equivariant() -> None:
    """What the ablation removes: permuting two present slots does not permute the logits."""
    model = MaskablePPO(FlatPolicy, _env("mixed"), n_steps=32, batch_size=32, seed=0,
                        device="cpu", policy_kwargs={"hidden": 16})  # fmt: skip
    # SetPolicy's slot count and field count, from the same layout
    ref = MaskablePPO(SetPolicy, _env("mixed"), n_steps=32, batch_size=32, seed=0,
                      device="cpu", policy_kwargs={"hidden": 16}).policy  # fmt: skip
    k, f, c = ref.num_slots, ref.slot_features, ref.per_slot
    rng = np.random.default_rng(0)
    obs = rng.uniform(size=model.observation_space.shape).astype(np.float32)
    obs[: k * f : f] = 1.0  # every slot present
    swapped = obs.copy()
    slots = swapped[: k * f].reshape(k, f)
    slots[[0, 1]] = slots[[1, 0]]
    with torch.no_grad():
        logits = [model.policy.get_distribution(torch.as_tensor(o)[None]).distribution.logits[0]
                  for o in (obs, swapped)]  # fmt: skip
    moved = logits[0][: k * c].reshape(k, c)[[1, 0, *range(2, k)]].flatten()
    assert not torch.allclose(moved, logits[1][: k * c], atol=1e-6)


@pytest.mark.parametrize(
    "extra",
    [["--pretrain-episodes", "0"], ["--flat", "--pretrain-episodes", "1", "--dagger-rounds", "0"]],
)
def test_train_ablations_run(tmp_path: Path, extra: list[str]) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--out", str(out), "--timesteps", "16", "--n-steps", "8",
                     "--batch-size", "8", "--n-epochs", "1", "--num-jobs", "12",
                     "--eval-freq", "100000", "--pretrain-epochs", "1", *extra])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert (out / "best_model.zip").exists() and record["timesteps"] >= 16
    warm = "--flat" in extra
    assert ("warm_start" in record) == warm
    assert (out / "pretrained_model.zip").exists() == warm
    model = MaskablePPO.load(out / "best_model.zip", device="cpu")
    assert isinstance(model.policy, FlatPolicy if "--flat" in extra else SetPolicy)


def test_report_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``report`` prints an evaluate file as a generalist_moldable.md section and stores it."""
    rows = {
        "fam-a": {"threshold-eta": [10.0, 20.0], "sjf": [5.0, 10.0], "agent": [10.0, 20.0]},
        "fam-b": {"threshold-eta": [4.0, 4.0], "sjf": [8.0, 8.0], "agent": [6.0, 6.0]},
    }
    path = tmp_path / "test_quick.json"
    path.write_text(json.dumps({"rows": rows}))
    store = tmp_path / "summary.json"
    generalist.main(["report", str(path), "--titles", "ablation: x", "--json", str(store)])
    text = capsys.readouterr().out
    assert text.startswith("## ablation: x\n")
    assert "| fam-a/test | sjf | 2.000 | 2.000 | 1.000 [1.000, 1.000] |" in text
    assert "| fam-b/test | threshold-eta | 1.500 | 1.000 | 1.500 [1.500, 1.500] |" in text
    assert "Geomean agent / best-per-family **1.732**" in text  # sqrt(2 * 1.5)
    assert "worst family 2.000" in text
    assert json.loads(store.read_text())["ablation: x"]["worst_agent_to_best"] == 2.0
