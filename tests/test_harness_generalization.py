"""The generalization suite's statistics and its grid (no episode is run here)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO

from cluster_envs.harness import rl_stats
from cluster_envs.harness.generalization import analyze, ratio, split_incompatible
from cluster_envs.harness.grid import Cell
from cluster_envs.harness.suites import get_suite
from cluster_envs.workload.families import family_names


def test_iqm_drops_the_outer_quarters() -> None:
    assert rl_stats.iqm(np.array([100.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -50.0])) == 3.5
    assert np.isnan(rl_stats.iqm(np.array([np.nan])))


def test_bootstrap_interval_contains_the_point_and_narrows_with_more_seeds() -> None:
    rng = np.random.default_rng(0)
    few = rng.normal(1.0, 0.2, size=(5, 3))
    many = rng.normal(1.0, 0.2, size=(200, 3))
    p1, lo1, hi1 = rl_stats.stratified_bootstrap_ci(few, rl_stats.iqm, reps=300)
    p2, lo2, hi2 = rl_stats.stratified_bootstrap_ci(many, rl_stats.iqm, reps=300)
    assert lo1 <= p1 <= hi1 and lo2 <= p2 <= hi2
    assert hi2 - lo2 < hi1 - lo1
    assert rl_stats.stratified_bootstrap_ci(few, rl_stats.iqm, reps=300) == (p1, lo1, hi1)


def test_probability_of_improvement_and_profile() -> None:
    better = np.array([[1.0, 1.0], [1.1, 1.0]])
    worse = better + 1.0
    assert rl_stats.probability_of_improvement(better, worse) == 1.0
    assert rl_stats.probability_of_improvement(worse, better) == 0.0
    assert rl_stats.probability_of_improvement(better, better) == 0.5
    profile = rl_stats.performance_profile(np.array([1.0, 1.2, 2.0, np.nan]), np.array([1.0, 1.5]))
    np.testing.assert_allclose(profile, [1 / 3, 2 / 3])


def test_ratio_is_one_for_the_best_and_larger_when_worse() -> None:
    assert ratio(200.0, 100.0, "avg_jct_s") == 2.0
    assert ratio(0.25, 0.5, "quality_auc") == 2.0
    assert ratio(0.0, 0.5, "quality_auc") == float("inf")


def _rows() -> list[dict]:
    rows = []
    for family, jct in (
        ("a/test", {"h1": 100.0, "h2": 150.0}),
        ("b/test", {"h1": 300.0, "h2": 200.0}),
    ):
        for policy, base in jct.items():
            for seed in range(4):
                rows.append({"env": "cluster_envs/MoldableScheduling-v0", "workload": family,
                             "policy": policy, "seed": seed, "status": "ok",
                             "metrics": {"avg_jct_s": base + seed}})  # fmt: skip
    return rows


def test_analysis_finds_the_best_per_family_and_the_room_of_the_best_single() -> None:
    env = analyze(_rows(), range(4))["envs"]["cluster_envs/MoldableScheduling-v0"]
    best = {f["family"]: f["best_heuristic"] for f in env["families"]}
    assert best == {"a/test": "h1", "b/test": "h2"}
    # h1: 1.0 on a, 1.5 on b -> geomean sqrt(1.5); h2: 1.5 on a, 1.0 on b -> the same.
    assert env["room_geomean"] == pytest.approx(np.sqrt(1.5), rel=1e-2)
    assert env["overall"]["h1"]["worst_family"] == "b/test"


def test_suite_covers_every_env_and_family_test_split_with_agents() -> None:
    entries = get_suite("generalization")
    assert len(entries) == 3
    for entry in entries:
        short = entry.env.split("/")[1].split("-")[0]
        env = {"MoldableScheduling": "moldable", "MetisAllocation": "metis",
               "JobPlacement": "placement"}[short]  # fmt: skip
        assert set(entry.workloads) == set(family_names(env))
        assert any(p.startswith("pretrained:") for p in entry.policies)
        kwargs = entry.env_kwargs({}, quick=True)
        assert all(kw["split"] == "test" and kw["num_jobs"] == 12 for kw in kwargs.values())


def test_agent_that_cannot_fit_a_cluster_is_reported_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = "cluster_envs/MoldableScheduling-v0"
    kw = {"family": "synthetic-256", "split": "test", "num_jobs": 5}
    spec = "pretrained:MoldableScheduling-v0"
    cells = [Cell(env, "synthetic-256/test", kw, spec, 1),
             Cell(env, "synthetic-256/test", kw, "fifo", 1)]  # fmt: skip
    # The shipped generalist (a SetPolicy) adapts to the 8-GPU nodes: it runs.
    keep, rows = split_incompatible(cells)
    assert keep == cells and rows == []
    # A flat MLP for the default preset's 8 nodes of 4 GPUs (untrained: only its spaces
    # matter), shipped under the same name, cannot: it is reported, not dropped.
    import agents.policy

    model = MaskablePPO("MlpPolicy", gym.make(env, preset="default"), seed=0, device="cpu")
    model.save(tmp_path / "MoldableScheduling-v0.zip")
    card = {"env_id": env, "env_kwargs": {"preset": "default"}, "algo": "maskable_ppo"}
    (tmp_path / "MoldableScheduling-v0.json").write_text(json.dumps(card))
    monkeypatch.setattr(agents.policy, "PRETRAINED_DIR", tmp_path)
    keep, rows = split_incompatible(cells)
    assert [c.policy for c in keep] == ["fifo"]
    assert rows[0]["status"] == "incompatible"
    assert rows[0]["error"].startswith("incompatible: trained for")
