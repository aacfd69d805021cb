"""The user-facing contract: two-line entry point, CLI, presets, layering."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cluster_envs
from cluster_envs.cli import main
from cluster_envs.config import CLUSTER_PRESETS, get_cluster
from cluster_envs.errors import ConfigError

METRIC_NAMES = {
    "avg_jct_s",
    "p95_jct_s",
    "makespan_s",
    "avg_queue_s",
    "gpu_utilization",
    "bounded_slowdown",
    "lower_bound_avg_jct_s",
    "jct_ratio_to_lower_bound",
}


def test_two_line_entry_point_on_shipped_workload() -> None:
    wl = cluster_envs.load_workload("philly-sample")
    metrics = cluster_envs.simulate(wl, policy="fifo", cluster="pollux-testbed", seed=0)
    assert set(metrics) >= METRIC_NAMES
    assert metrics["num_finished"] == len(wl) == 500
    assert 0 < metrics["gpu_utilization"] <= 1
    assert metrics["jct_ratio_to_lower_bound"] >= 1.0  # nobody beats the bound
    # A preset name works too, and the result reproduces.
    assert cluster_envs.simulate("philly-sample", "fifo", "pollux-testbed", 0) == metrics


def test_backfilling_fifo_beats_strict_fifo_on_pollux_workload() -> None:
    wl = cluster_envs.load_workload("pollux-1")
    strict = cluster_envs.simulate(wl, "fifo", "pollux-testbed")
    skip = cluster_envs.simulate(wl, "fifo-skip", "pollux-testbed")
    assert skip["avg_jct_s"] < strict["avg_jct_s"]


def test_presets_include_testbed_and_philly() -> None:
    assert get_cluster("pollux-testbed").num_gpus == 64
    assert get_cluster("pollux-testbed").num_nodes == 16
    assert 2000 <= get_cluster("philly").num_gpus <= 3000
    assert {"toy", "pollux-testbed", "philly"} <= set(CLUSTER_PRESETS)
    with pytest.raises(ConfigError, match="did you mean 'philly'"):
        get_cluster("phily")


def test_cluster_config_rejects_unknown_keys_and_types() -> None:
    with pytest.raises(ConfigError, match="unknown ClusterConfig key 'nodes'"):
        get_cluster({"name": "x", "nodes": 3})
    with pytest.raises(ConfigError, match="unknown gpu_type 'T5'.*'T4'"):
        get_cluster(
            {"name": "x", "node_groups": [{"num_nodes": 1, "gpus_per_node": 1, "gpu_type": "T5"}]}
        )
    with pytest.raises(ConfigError, match="unknown SimConfig key 'slice'"):
        cluster_envs.simulate("philly-sample", config={"slice": 3})


def test_cli_simulate_prints_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "pollux-2", "--policies", "fifo,fifo-skip"]) == 0
    out = capsys.readouterr().out
    assert "fifo-skip" in out and "avg_jct_s" in out
    assert main(["simulate", "--workload", "pollux-2", "--policies", "fifo", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["policy"] == "fifo" and rows[0]["num_finished"] == 160


def test_cli_reports_bad_input_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--policies", "fifoo"]) == 2
    assert "did you mean 'fifo'" in capsys.readouterr().err
    assert main(["simulate", "--workload", "/nonexistent/trace.csv"]) == 2


def test_simulator_layers_import_no_gym_torch_or_skopt() -> None:
    """The simulator is a library: no gymnasium/torch/skopt/SB3 below envs, agents, baselines."""
    root = Path(cluster_envs.__file__).parent
    banned = {
        "gymnasium",
        "torch",
        "skopt",
        "stable_baselines3",
        "sb3_contrib",
        "agents",
        "baselines",
    }
    offenders = []
    for folder in ("sim", "perf", "workload", "policies"):
        for path in (root / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    for path in (root / "runner.py", root / "config.py", root / "types.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                mods = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                offenders += [f"{path.name}: {m}" for m in mods if m.split(".")[0] in banned]
    assert offenders == []


def test_simulate_needs_no_torch_or_skopt_at_run_time() -> None:
    code = (
        "import sys, cluster_envs; cluster_envs.simulate('pollux-3');"
        "print([m for m in ('torch', 'skopt', 'stable_baselines3') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "command", [[], ["simulate"], ["benchmark"], ["train"], ["evaluate"], ["tune"], ["place"]]
)
def test_help_of_every_command(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: cluster-envs" in capsys.readouterr().out
