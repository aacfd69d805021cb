"""The benchmark harness: statistics, the real CLI, outputs, reproducibility, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from PIL import Image

from cluster_envs.cli import main
from cluster_envs.envs.registration import resolve_env_id
from cluster_envs.errors import ConfigError
from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells
from cluster_envs.harness.stats import mean_ci, paired_difference, summarize
from cluster_envs.seeds import parse_seeds

ARGS = ["--env", "MoldableScheduling-v0", "--policies", "fifo,fifo-skip", "--workload", "toy"]


def test_confidence_interval_matches_hand_computation() -> None:
    ci = mean_ci([1.0, 2.0, 3.0, 4.0])
    # s = sqrt(5/3) = 1.290994; t(0.975, 3) = 3.182446; half = t * s / 2.
    assert ci.mean == pytest.approx(2.5)
    assert ci.half_width == pytest.approx(3.182446 * 1.290994 / 2, rel=1e-5)
    one = mean_ci([5.0])
    # One seed has no interval: NaN half-width, printed as "n=1", never "± inf" or "± 0".
    assert one.n == 1 and math.isnan(one.half_width)
    assert one.format() == "5 (n=1)"
    assert "±" in ci.format() and "inf" not in ci.format()
    assert mean_ci([float("nan"), 2.0, 4.0]).n == 2


def test_paired_difference_matches_seeds_and_drops_nan_pairs() -> None:
    rows = [
        {"env": "e", "workload": "w", "policy": p, "seed": s, "status": "ok",
         "metrics": {"m": v}}
        for p, vals in {"ref": [1.0, 5.0, 9.0, 2.0], "new": [2.0, 6.5, 9.5, float("nan")]}.items()
        for s, v in enumerate(vals)
    ]  # fmt: skip
    rows.append({"env": "e", "workload": "w", "policy": "new", "seed": 9, "metrics": {"m": 0.0}})
    diff = paired_difference(rows, "new", "ref", "m")
    assert diff.n == 3  # seed 3 has a NaN, seed 9 no reference
    assert diff.mean == pytest.approx((1.0 + 1.5 + 0.5) / 3)
    assert diff.half_width == pytest.approx(mean_ci([1.0, 1.5, 0.5]).half_width)
    with pytest.raises(ValueError, match="no episodes shared"):
        paired_difference(rows, "new", "other", "m")


def test_quality_workloads_rank_baselines_by_quality_auc() -> None:
    """Metis rows carry JCT metrics too; the headline there is quality AUC."""
    rows = [
        {"env": "e", "workload": "w", "policy": p, "seed": 0, "status": "ok",
         "metrics": {"avg_jct_s": jct, "quality_auc": auc}}
        for p, jct, auc in [("fast", 100.0, 0.70), ("good", 200.0, 0.80), ("rl", 150.0, 0.84)]
    ]  # fmt: skip
    summary = {r["policy"]: r for r in summarize(rows, baselines=["fast", "good"])}
    assert summary["rl"]["best_baseline"] == "good"
    assert summary["rl"]["improvement_vs_best_baseline_pct"] == pytest.approx(5.0)


def test_improvement_over_best_baseline() -> None:
    rows = [
        {"env": "e", "workload": "w", "policy": p, "seed": s, "status": "ok",
         "metrics": {"avg_jct_s": v}}
        for p, vals in {"a": [100, 110], "b": [200, 190], "rl": [80, 90]}.items()
        for s, v in enumerate(vals)
    ]  # fmt: skip
    summary = {r["policy"]: r for r in summarize(rows, baselines=["a", "b"])}
    assert summary["rl"]["best_baseline"] == "a"
    assert summary["rl"]["improvement_vs_best_baseline_pct"] == pytest.approx(
        100 * (105 - 85) / 105
    )
    assert summary["b"]["improvement_vs_best_baseline_pct"] < 0


def test_parse_seeds_and_names() -> None:
    assert parse_seeds("0-3,7") == [0, 1, 2, 3, 7]
    with pytest.raises(ConfigError, match="not N or A-B"):
        parse_seeds("x-2")
    with pytest.raises(ConfigError, match="did you mean 'MoldableScheduling-v0'"):
        resolve_env_id("MoldableSchedulng-v0")


def _run(out: Path, *extra: str) -> int:
    return main(["benchmark", *ARGS, "--seeds", "0-1", "--out", str(out), "--no-progress", *extra])


def test_tiny_grid_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    assert _run(out) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema_version"] == 1 and doc["seeds"] == [0, 1]
    assert len(doc["rows"]) == 1 * 1 * 2 * 2  # env x workload x policy x seed
    for row in doc["rows"]:
        assert {"env", "workload", "policy", "seed", "status", "metrics"} <= set(row)
        assert row["status"] == "ok" and row["metrics"]["avg_jct_s"] > 0
        assert row["metrics"]["jct_ratio_to_lower_bound"] >= 1.0
    summary = (out / "summary.md").read_text()
    assert "fifo-skip" in summary and "±" in summary
    pngs = sorted(out.glob("*.png"))
    assert {p.name.split("_")[0] for p in pngs} >= {"jct", "timeline", "gantt"}
    for png in pngs:
        with Image.open(png) as img:
            img.verify()
            assert img.size[0] > 100 and img.size[1] > 100


def test_same_arguments_same_numbers_and_no_silent_overwrite(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(a, "--no-plots") == 0 and _run(b, "--no-plots") == 0

    def numbers(folder: Path) -> list:
        rows = json.loads((folder / "results.json").read_text())["rows"]
        return [(r["policy"], r["seed"], r["metrics"]) for r in rows]

    assert numbers(a) == numbers(b)
    before = (a / "results.json").read_text()
    assert _run(a, "--no-plots") == 2  # refuses: the folder holds results
    assert (a / "results.json").read_text() == before
    assert _run(a, "--no-plots", "--force") == 0


def test_unknown_policy_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["benchmark", "--env", "MoldableScheduling-v0", "--policies", "fifo,sjff",
                 "--out", str(tmp_path / "x"), "--no-progress"])  # fmt: skip
    assert code == 2
    assert "unknown policy 'sjff'" in capsys.readouterr().err


def test_worker_processes_give_identical_rows() -> None:
    cells = make_cells(["cluster_envs/MoldableScheduling-v0"], {"toy": {"preset": "toy"}},
                       ["fifo"], [0, 1, 2])  # fmt: skip
    serial = run_grid(cells, "local", 1, progress=False)
    parallel = run_grid(cells, "local", 2, progress=False)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]  # noqa: E731
    assert strip(serial) == strip(parallel)


def test_every_suite_names_real_envs_policies_and_shipped_agents() -> None:
    from agents.policy import pretrained_names
    from cluster_envs.harness.suites import SUITES, get_suite
    from cluster_envs.policies.trained import check_actor_name

    shipped = set(pretrained_names())
    for name in SUITES:
        for entry in get_suite(name):
            resolve_env_id(entry.env)
            for policy in entry.policies:
                check_actor_name(policy)
                if policy.startswith("pretrained:"):
                    assert policy.split(":", 1)[1] in shipped, f"{policy} is not shipped"
    with pytest.raises(ConfigError, match="did you mean 'default'"):
        get_suite("defualt")


def test_learning_and_search_cost_curves_are_plotted(tmp_path: Path) -> None:
    from agents.train import train
    from cluster_envs.harness import plots

    run = tmp_path / "run"
    train("ppo", "cluster_envs/MoldableScheduling-v0", run, timesteps=192, seed=0,
          env_kwargs={"preset": "toy"}, hyperparams={"n_steps": 64, "batch_size": 64},
          n_envs=1, eval_freq=0, progress_bar=False)  # fmt: skip
    assert main(["place", "--method", "random", "--calls", "5", "--instance", "small",
                 "--seed", "0", "--out", str(tmp_path / "place")]) == 0  # fmt: skip
    trace = next((tmp_path / "place").glob("*.json"))
    curves = plots.learning_curves([run], tmp_path)
    costs = plots.search_cost_curves([json.loads(trace.read_text())], tmp_path)
    for png in (curves, costs):
        assert png is not None
        with Image.open(png) as img:
            img.verify()
    assert plots.learning_curves([tmp_path / "nothing"], tmp_path) is None


def test_cell_details_feed_the_plots() -> None:
    from cluster_envs.harness.grid import Cell, run_cell

    for policy in ("fifo", "pretrained:MoldableScheduling-v0"):
        row = run_cell(
            Cell("cluster_envs/MoldableScheduling-v0", "toy", {"preset": "toy"}, policy, 0)
        )
        details = row["details"]
        assert len(details["jct_s"]) == row["metrics"]["num_finished"]
        assert {seg[0] for seg in details["segments"]} == set(
            range(int(row["metrics"]["num_jobs"]))
        )
        assert len(details["timeline"]["time_s"]) > 1


def test_family_split_workloads_run_the_family_as_the_env_does(tmp_path: Path) -> None:
    """``--workload FAMILY/SPLIT`` plays that family's split: the rows equal episodes of
    ``gym.make(env, family=..., split=...)`` under the same heuristic and seed."""
    import gymnasium as gym

    from cluster_envs.envs.rollout import HeuristicAgent, rollout

    out = tmp_path / "fam"
    args = ["benchmark", "--env", "JobPlacement-v0", "--policies", "fifo", "--seeds", "100",
            "--workload", "synthetic-16/test,synthetic-16/validation", "--out", str(out),
            "--no-plots", "--no-progress"]  # fmt: skip
    assert main(args) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    by_workload = {r["workload"]: r["metrics"]["avg_jct_s"] for r in rows}
    assert set(by_workload) == {"synthetic-16/test", "synthetic-16/validation"}
    assert by_workload["synthetic-16/test"] != by_workload["synthetic-16/validation"]
    env = gym.make("cluster_envs/JobPlacement-v0", family="synthetic-16", split="test")
    expected = rollout(env, HeuristicAgent("fifo"), 100).metrics["avg_jct_s"]
    assert by_workload["synthetic-16/test"] == expected


TORCH_PARENT = """
import torch
from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells

if __name__ == "__main__":
    torch.set_num_threads(2)
    x = torch.randn(384, 384)
    for _ in range(5):
        x @ x  # the parent's OpenMP team has run: a forked child's first torch op would hang
    cells = make_cells(["cluster_envs/JobPlacement-v0"], {"toy": {"preset": "toy"}},
                       ["pretrained:JobPlacement-v0"], [0, 1])
    rows = run_grid(cells, "local", 2, progress=False)
    print("ROWS", [(r["status"], r["metrics"]["num_finished"]) for r in rows])
"""


def test_workers_of_a_parent_that_ran_torch_do_not_hang(tmp_path: Path) -> None:
    """Trained agents' cells in worker processes after torch ran here (the generalization
    suite's --workers 2 used to deadlock in its forked workers)."""
    import subprocess
    import sys

    script = tmp_path / "torch_parent.py"
    script.write_text(TORCH_PARENT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240, cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ROWS [('ok', 12.0), ('ok', 12.0)]" in done.stdout, done.stdout
