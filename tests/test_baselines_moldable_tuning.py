"""Moldable baselines: rankings that hold on fixed seeds, and the best-threshold tuning."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from baselines.moldable_eval import EVAL_SEED_START, env_episodes, evaluate
from baselines.threshold import (
    BEST_THRESHOLD_FILE,
    EfficiencyThresholdScheduler,
    QueueThresholdScheduler,
    best_threshold,
    load_best_threshold,
)
from cluster_envs.policies.registry import make_policy

ROOT = Path(__file__).resolve().parents[1]
RANKED = ("fifo", "sjf", "easy-backfill", "min-parallelism", "max-parallelism", "best-threshold")


def _tune_script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(
        "tune_thresholds", ROOT / "scripts" / "tune_thresholds.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def default_jct() -> dict[str, np.ndarray]:
    """Average JCT per policy on seeds 0-5 of the default preset."""
    episodes = env_episodes(range(6), preset="default")
    return {
        name: np.array([m["avg_jct_s"] for m in evaluate(lambda n=name: make_policy(n), episodes)])
        for name in RANKED
    }


def test_sjf_beats_fifo_on_every_seed_of_the_default_preset(default_jct) -> None:  # noqa: ANN001
    assert (default_jct["sjf"] < default_jct["fifo"]).all()


def test_rankings_that_hold_on_average(default_jct) -> None:  # noqa: ANN001
    mean = {name: float(v.mean()) for name, v in default_jct.items()}
    # EASY beats FIFO on average (not on every seed: its reservations can cost a little).
    assert mean["easy-backfill"] < mean["fifo"]
    # The tuned threshold beats FIFO and both fixed sizing rules; max parallelism (each
    # job takes every GPU it can) is the worst by far under sub-linear speedups.
    assert mean["best-threshold"] < min(mean["fifo"], mean["min-parallelism"])
    assert mean["max-parallelism"] > 3 * max(v for k, v in mean.items() if k != "max-parallelism")


def test_sjf_beats_fifo_on_pollux_workloads() -> None:
    episodes = env_episodes(range(3), preset="pollux")
    sjf = np.mean([m["avg_jct_s"] for m in evaluate(lambda: make_policy("sjf"), episodes)])
    fifo = np.mean([m["avg_jct_s"] for m in evaluate(lambda: make_policy("fifo"), episodes)])
    assert sjf < fifo


def test_shipped_tuning_is_on_training_seeds_and_picks_the_sweep_minimum() -> None:
    data = load_best_threshold()
    assert max(data["training_seeds"]) < EVAL_SEED_START
    assert str(EVAL_SEED_START) in data["held_out"]
    assert {"default", "pollux"} <= set(data["presets"])
    for preset, entry in data["presets"].items():
        best = min(entry["sweep"], key=lambda r: r["mean_avg_jct_s"])
        assert entry["best"]["mean_avg_jct_s"] == best["mean_avg_jct_s"]
        policy = best_threshold(preset)
        assert policy.name.startswith("best-threshold")
        value = policy.eta if isinstance(policy, EfficiencyThresholdScheduler) else policy.q
        assert (best["policy"], value) == (entry["best"]["policy"], entry["best"]["value"])


def test_shipped_tuning_reproduces_with_the_current_simulator() -> None:
    entry = load_best_threshold()["presets"]["default"]
    best = entry["best"]
    seeds = load_best_threshold()["training_seeds"][:5]
    row = next(
        r for r in entry["sweep"] if (r["policy"], r["value"]) == (best["policy"], best["value"])
    )
    policy = make_policy("best-threshold")
    got = [m["avg_jct_s"] for m in evaluate(lambda: policy, env_episodes(seeds, preset="default"))]
    assert got == pytest.approx(row["per_seed"][:5], abs=1e-3), (
        f"{BEST_THRESHOLD_FILE} is stale (the simulator or the preset changed): rerun "
        "`python scripts/tune_thresholds.py --force`"
    )


def test_tune_script_writes_a_loadable_choice(tmp_path: Path) -> None:
    tune = _tune_script()
    out = tmp_path / "best.json"
    argv = ["--presets", "toy", "--seeds", "0-1", "--etas", "0.5,0.9", "--qs", "1:2"]
    assert tune.main([*argv, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    sweep = data["presets"]["toy"]["sweep"]
    assert [(r["policy"], r["value"]) for r in sweep] == [
        ("threshold-eta", 0.5), ("threshold-eta", 0.9),
        ("threshold-queue", 1), ("threshold-queue", 2),
    ]  # fmt: skip
    assert data["training_seeds"] == [0, 1]
    best = min(sweep, key=lambda r: r["mean_avg_jct_s"])
    policy = best_threshold("toy", path=out)
    cls = {
        "threshold-eta": EfficiencyThresholdScheduler,
        "threshold-queue": QueueThresholdScheduler,
    }
    assert isinstance(policy, cls[best["policy"]])
    # The sweep's numbers are the runner's: re-evaluate the best row.
    episodes = env_episodes([0, 1], preset="toy")
    again = [m["avg_jct_s"] for m in evaluate(lambda: best_threshold("toy", path=out), episodes)]
    assert again == pytest.approx(best["per_seed"], abs=1e-3)
    # An existing file is not overwritten without --force.
    with pytest.raises(SystemExit):
        tune.main([*argv, "--out", str(out)])


def test_tune_script_refuses_held_out_seeds(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit):
        _tune_script().main(["--seeds", "95-105", "--out", str(tmp_path / "x.json")])
    assert "held-out evaluation seeds" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
