"""Beyond one machine: the Ray backend of the harness and the envs under RLlib."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # the `ray` extra is part of the test install (scripts/install.sh)

from cluster_envs.harness.backends import run_grid
from cluster_envs.harness.grid import make_cells

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_moldable.py"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_ray_backend_rows_equal_local_rows(local_ray: None) -> None:
    cells = make_cells(
        ["cluster_envs/MoldableScheduling-v0"],
        {"toy": {"preset": "toy"}},
        ["fifo", "fifo-skip"],
        [0, 1],
    )
    local = run_grid(cells, "local", 1, progress=False)
    remote = run_grid(cells, "ray", 2, progress=False)

    def strip(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]

    assert strip(remote) == strip(local)
    assert all(r["status"] == "ok" for r in remote)


def test_rllib_trains_on_a_registered_env(local_ray: None) -> None:
    spec = importlib.util.spec_from_file_location("rllib_moldable", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rllib_moldable"] = module
    spec.loader.exec_module(module)
    algo = module.build(preset="toy", seed=0, batch=128)
    try:
        result = algo.train()
        runners = result["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 128
        assert runners["num_episodes_lifetime"] >= 1
        assert runners["episode_return_mean"] < 0  # minus total JCT: always negative
    finally:
        algo.stop()


def test_tune_sweep_through_the_cli(local_ray: None, tmp_path: Path) -> None:
    import yaml

    from cluster_envs.cli import main

    sweep = tmp_path / "sweep.yml"
    sweep.write_text(
        "algo: a2c\nenv: cluster_envs/MoldableScheduling-v0\nenv_kwargs: {preset: toy}\n"
        "timesteps: 100\neval_seeds: 100-101\nnum_samples: 2\nseed: 0\n"
        "space:\n  learning_rate: {loguniform: [1.0e-4, 1.0e-2]}\n  gamma: {choice: [0.9, 0.99]}\n"
    )
    out = tmp_path / "tune"
    assert main(["tune", "--sweep", str(sweep), "--out", str(out)]) == 0
    trials = json.loads((out / "trials.json").read_text())
    assert len(trials) == 2 and all("avg_jct_s" in t for t in trials)
    assert trials[0]["avg_jct_s"] <= trials[1]["avg_jct_s"]  # best first
    best = yaml.safe_load((out / "best.yml").read_text())["cluster_envs/MoldableScheduling-v0"]
    assert best["learning_rate"] == trials[0]["config"]["learning_rate"]
    assert 1e-4 <= best["learning_rate"] <= 1e-2 and best["gamma"] in (0.9, 0.99)
    assert main(["tune", "--sweep", str(sweep), "--out", str(out)]) == 2  # no overwrite


def test_bad_sweep_files_are_clear_errors(tmp_path: Path) -> None:
    from agents.tune import read_sweep
    from cluster_envs.errors import ConfigError

    bad = tmp_path / "bad.yml"
    bad.write_text("algo: ppo\nenv: x\nspace: {lr: {logunif: [1, 2]}}\n")
    with pytest.raises(ConfigError, match="unknown sampler 'logunif'.*'loguniform'"):
        read_sweep(bad)
    bad.write_text("algo: ppo\nenv: x\nspace: {lr: 0.1}\nnum_sample: 3\n")
    with pytest.raises(ConfigError, match="unknown sweep key 'num_sample'"):
        read_sweep(bad)
