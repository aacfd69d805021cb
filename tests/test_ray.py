"""Beyond one machine: the Ray backend of the harness and the envs under RLlib."""

from __future__ import annotations

import importlib.util
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
