"""The moldable generalist with heuristic hints (``train --hints``, issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401  (registers the envs)
from agents import generalist


def test_hinted_clone_of_threshold_eta_replays_it_on_another_split(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--hints", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "20", "--teacher", "threshold-eta",
                     "--pretrain-episodes", "8", "--dagger-rounds", "0",
                     "--pretrain-epochs", "60"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_kwargs"] == {"observation": "scale_free_hints"}
    assert record["warm_start"]["rounds"][0]["teacher_agreement"] == 1.0
    # The curve's times are seconds since training began (not time.time() timestamps).
    assert 0 < record["curve"][-1]["wall_s"] <= record["train_wall_s"]
    model = MaskablePPO.load(out / "best_model.zip", device="cpu")
    assert generalist.with_observation_of(model, generalist.MOLDABLE).observation == (
        "scale_free_hints"
    )
    test = tmp_path / "val.json"
    # evaluate's default spec is scale_free: it must play the model in its own observation
    generalist.main(["evaluate", "--model", str(out / "best_model.zip"), "--out", str(test),
                     "--families", "synthetic-16,kth-sp2", "--split", "validation", "--quick",
                     "--seeds", "500", "503"])  # fmt: skip
    rows = json.loads(test.read_text())["rows"]
    for fam in ("synthetic-16", "kth-sp2"):  # another cluster and another node size
        assert rows[fam]["agent"] == rows[fam]["threshold-eta"]
        assert rows[fam]["agent"] != rows[fam]["max-parallelism"]


def test_the_plain_observation_is_kept_for_models_without_hints() -> None:
    root = Path(__file__).resolve().parents[1]
    path = root / "benchmarks/results/generalist_candidate/MoldableScheduling-v0-generalist.zip"
    model = MaskablePPO.load(path, device="cpu")
    spec = generalist.with_observation_of(model, generalist.MOLDABLE)
    assert spec.observation == "scale_free"
