"""The generalist's multi-cluster warm start (``--demo-families``, issue 13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from agents import generalist, imitation
from agents.imitation import PretrainSettings, collect_demonstrations, pretrain_interleaved
from agents.set_policy import SetPolicy, adapt
from cluster_envs.errors import ConfigError

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


@pytest.mark.parametrize("interleaved", [False, True])
def test_warm_start_families_fits_every_cluster_into_one_set_of_weights(interleaved: bool) -> None:
    model = _model()
    before = {k: v.clone() for k, v in model.policy.state_dict().items()}
    untrained = {f: _agreement(model, f) for f in FAMILIES}
    settings = PretrainSettings(teacher="threshold-eta", episodes=4, epochs=15, dagger_rounds=1)
    record = generalist.warm_start_families(model, FAMILIES, settings, seed=0, num_jobs=12,
                                            interleaved=interleaved)  # fmt: skip
    assert record["families"] == FAMILIES and len(record["rounds"]) == 2
    assert record["fit"] == ("interleaved" if interleaved else "passes")
    assert all(record["steps"][f] > 0 for f in FAMILIES)
    assert any(not torch.equal(v, model.policy.state_dict()[k]) for k, v in before.items())
    # the weights learnt on the 8-GPU-node cluster reached the model itself
    trained = {f: _agreement(model, f) for f in FAMILIES}
    for f in FAMILIES:
        assert trained[f] >= untrained[f] + 0.25, (f, untrained[f], trained[f])
    losses = record["rounds"][-1]["losses"]
    if not interleaved:  # each family's agreement is the kept weights', those of the last pass
        last = FAMILIES[-1]
        assert losses[last]["teacher_agreement"] == losses[last]["agreement_after_own_pass"]
        assert all("agreement_after_own_pass" in losses[f] for f in FAMILIES)


def test_train_with_demo_families_and_no_ppo(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--out", str(out), "--timesteps", "0", "--num-jobs", "12",
                     "--pretrain-episodes", "1", "--dagger-rounds", "0", "--pretrain-epochs", "1",
                     "--demo-families", ",".join(FAMILIES), "--demo-rows-per-epoch", "5"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["warm_start"]["families"] == FAMILIES
    assert record["warm_start"]["max_rows_per_epoch"] == 5
    with pytest.raises(ConfigError, match="--demo-rows-per-epoch: acts only in a warm start"):
        generalist.main(["train", "--out", str(tmp_path / "bad"), "--timesteps", "0",
                         "--pretrain-episodes", "0", "--demo-rows-per-epoch", "5"])  # fmt: skip
    assert record["timesteps"] == 0 and len(record["curve"]) == 1
    assert (out / "best_model.zip").exists() and (out / "pretrained_model.zip").exists()


def test_adapt_tie_shares_the_parameter_tensors() -> None:
    model = _model()
    other = generalist.make_env("lublin-256", "train", 12)  # 8-GPU nodes: another shape
    tied, copied = adapt(model, other, tie=True), adapt(model, other)
    assert tied.policy.observation_space == other.observation_space
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(1.0)
    for name, p in model.policy.named_parameters():
        assert dict(tied.policy.named_parameters())[name] is p
        assert not torch.equal(dict(copied.policy.named_parameters())[name], p), name


def test_pretrain_interleaved_refuses_views_that_do_not_share_weights() -> None:
    model = _model()
    kwargs = {"family": "lublin-256", "split": "train", "observation": "scale_free",
              "num_jobs": 12}  # fmt: skip
    demos = collect_demonstrations(generalist.ENV_ID, kwargs, "threshold-eta", 1, 7, 0.99)
    env = generalist.make_env("lublin-256", "train", 12)
    settings = PretrainSettings(teacher="threshold-eta", episodes=1, epochs=1)
    mixed = collect_demonstrations(
        generalist.ENV_ID, {**kwargs, "family": "mixed"}, "threshold-eta", 1, 7, 0.99
    )
    data = {"mixed": mixed, "lublin-256": demos}
    with pytest.raises(ConfigError, match="'lublin-256' does not share its weights"):
        pretrain_interleaved({"mixed": model, "lublin-256": adapt(model, env)}, data, settings, 0)
    with pytest.raises(ConfigError, match="one model per dataset"):
        pretrain_interleaved({"mixed": model}, data, settings, 0)


def test_demo_workers_collect_the_same_demonstrations() -> None:
    """``--demo-workers 2`` forks the families' collections (round 0 and a DAgger round,
    where each family's view plays): same steps, same metrics, same weights as one
    process."""
    settings = PretrainSettings(teacher="threshold-eta", episodes=2, epochs=2, dagger_rounds=1)
    models, records = [], []
    for workers in (1, 2):
        model = _model()
        records.append(generalist.warm_start_families(model, FAMILIES, settings, seed=3,
                                                      num_jobs=12, workers=workers))  # fmt: skip
        models.append(model)
    assert records[0] == records[1]
    assert records[0]["rounds"][1]["avg_jct_s"]  # the DAgger round was played
    one, two = (m.policy.state_dict() for m in models)
    assert all(torch.equal(one[k], two[k]) for k in one)


def test_run_all_keeps_the_jobs_order_across_workers() -> None:
    jobs = [lambda i=i: (i, float(np.sum(np.arange(i * 1000)))) for i in range(5)]
    assert generalist.run_all(jobs, workers=2) == [job() for job in jobs]


def test_demo_cache_gives_the_same_warm_start_without_the_teacher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--demo-cache``: the teacher's episodes are written once; a second run reads them
    back (the teacher is not asked again) and fits the same weights as a run without the
    cache. DAgger rows (the student plays) are still collected."""
    settings = PretrainSettings(teacher="threshold-eta", episodes=2, epochs=2, dagger_rounds=1)
    plain = _model()
    record = generalist.warm_start_families(plain, FAMILIES, settings, seed=3, num_jobs=12)
    first = _model()
    generalist.warm_start_families(first, FAMILIES, settings, seed=3, num_jobs=12,
                                   cache=str(tmp_path))  # fmt: skip
    files = sorted(tmp_path.glob("demos-*.npz"))
    assert len(files) == len(FAMILIES) * settings.episodes  # one per episode

    real = imitation.collect_demonstrations
    played = []

    def dagger_only(*args: Any, **kwargs: Any) -> Any:
        assert kwargs.get("student") is not None, "the teacher's round was not read back"
        played.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(imitation, "collect_demonstrations", dagger_only)
    monkeypatch.setattr(generalist, "collect_demonstrations", dagger_only)
    again = _model()
    assert generalist.warm_start_families(again, FAMILIES, settings, seed=3, num_jobs=12,
                                          cache=str(tmp_path)) == record  # fmt: skip
    assert len(played) == len(FAMILIES)  # the DAgger round only
    # --demo-workers 2 (one call per episode) reads the same entries
    workers = _model()
    assert generalist.warm_start_families(workers, FAMILIES, settings, seed=3, num_jobs=12,
                                          cache=str(tmp_path), workers=2) == record  # fmt: skip
    assert len(played) == len(FAMILIES)  # (forked workers: their calls are not seen here)
    assert len(list(tmp_path.glob("demos-*.npz"))) == len(files)
    one, two = (m.policy.state_dict() for m in (plain, again))
    assert all(torch.equal(one[k], two[k]) for k in one)

    # A cache path that is a file is named in the error.
    with pytest.raises(ConfigError, match="not a folder"):
        generalist.warm_start_families(_model(), FAMILIES, settings, seed=3, num_jobs=12,
                                       cache=str(files[0]))  # fmt: skip
    # An entry whose recorded inputs differ from its name is refused, not trusted.
    with np.load(files[0]) as data:
        entry = {k: data[k] for k in data.files}
    entry["key"] = np.asarray(str(entry["key"]).replace("threshold-eta", "fifo"))
    np.savez(files[0], **entry)
    with pytest.raises(ConfigError, match="cache entry for other inputs"):
        generalist.warm_start_families(_model(), FAMILIES, settings, seed=3, num_jobs=12,
                                       cache=str(tmp_path))  # fmt: skip


@pytest.mark.parametrize("interleaved", [False, True])
def test_rows_per_epoch_caps_each_family_and_draws_afresh(
    interleaved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``max_rows_per_epoch`` (``--demo-rows-per-epoch``): each family fits at most that
    many of its rows per epoch, no row twice in an epoch, a new draw each epoch."""
    fitted: dict[int, list[int]] = {}  # a family's demonstrations -> rows fitted, in order
    real = imitation._Fit.loss

    def spy(self: Any, idx: torch.Tensor) -> Any:
        fitted.setdefault(id(self.demos), []).extend(idx.tolist())
        return real(self, idx)

    monkeypatch.setattr(imitation._Fit, "loss", spy)
    cap, epochs = 10, 3
    settings = PretrainSettings(teacher="threshold-eta", episodes=2, epochs=epochs,
                                batch_size=4, max_rows_per_epoch=cap)  # fmt: skip
    record = generalist.warm_start_families(_model(), FAMILIES, settings, seed=0, num_jobs=12,
                                            interleaved=interleaved)  # fmt: skip
    assert record["max_rows_per_epoch"] == cap
    assert min(record["steps"].values()) > cap and len(fitted) == len(FAMILIES)
    for rows in fitted.values():
        assert len(rows) == epochs * cap
        draws = [set(rows[e * cap : (e + 1) * cap]) for e in range(epochs)]
        assert all(len(d) == cap for d in draws)
        assert len(set.union(*draws)) > cap  # not the same rows every epoch
    # uncapped: every row once per epoch
    fitted.clear()
    uncapped = PretrainSettings(teacher="threshold-eta", episodes=2, epochs=1, batch_size=4)
    record = generalist.warm_start_families(_model(), FAMILIES, uncapped, seed=0, num_jobs=12,
                                            interleaved=interleaved)  # fmt: skip
    assert record["max_rows_per_epoch"] is None
    assert sorted(len(r) for r in fitted.values()) == sorted(record["steps"].values())
    with pytest.raises(ConfigError, match="max_rows_per_epoch"):
        PretrainSettings(teacher="threshold-eta", max_rows_per_epoch=0)
