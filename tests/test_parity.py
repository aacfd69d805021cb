"""Parity: every registered heuristic gives the same metrics through an env and the runner.

For every env id and every heuristic that applies to it (the env's baseline list of the
benchmark suites, plus the extra heuristics named here), one episode is played through the
env (``HeuristicAgent`` + ``rollout``: one env action at a time) and replayed by the no-gym
runner (``run_episode`` with the env's own workload, cluster, simulator settings and
seed: every decision of an instant at once). The metric dicts must be identical -- with and
without an episode horizon. This is the guarantee that a heuristic's numbers do not depend
on which path measured them. Cases marked ``slow`` (the Bayesian-optimisation placers) run
in the default suite too; deselect them with ``-m "not slow"``.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import cluster_envs  # noqa: F401  (registers the env ids)
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.harness.suites import METIS_BASELINES, MOLDABLE_BASELINES, PLACEMENT_BASELINES
from cluster_envs.runner import run_episode

MOLDABLE = "cluster_envs/MoldableScheduling-v0"
METIS = "cluster_envs/MetisAllocation-v0"
PLACEMENT = "cluster_envs/JobPlacement-v0"

#: env id -> heuristics that apply to it.
HEURISTICS: dict[str, tuple[str, ...]] = {
    MOLDABLE: (*MOLDABLE_BASELINES, "min-parallelism", "best-threshold-pollux"),
    # ``pollux`` re-packs resized jobs onto fewest nodes, which the env's one placement
    # rule cannot express: the benchmark replays it through the runner only.
    METIS: METIS_BASELINES,
    PLACEMENT: (*PLACEMENT_BASELINES, "bo-rf"),
}
SLOW = {"bo-rf"}
#: Workload settings per env: the toy preset, and the same with an episode horizon.
SETTINGS: dict[str, dict[str, Any]] = {
    "toy": {"preset": "toy"},
    "horizon": {"preset": "toy", "sim": {"horizon_s": 5000.0}},
}
SEEDS = {"toy": (0, 7), "horizon": (3,)}


def _cases() -> list[Any]:
    cases = []
    for env_id, names in HEURISTICS.items():
        for name in dict.fromkeys(names):
            for setting, seeds in SEEDS.items():
                for seed in seeds:
                    marks = [pytest.mark.slow] if name in SLOW else []
                    cases.append(
                        pytest.param(env_id, name, setting, seed, marks=marks,
                                     id=f"{env_id.split('/')[1]}-{name}-{setting}-{seed}")
                    )  # fmt: skip
    return cases


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    # JSON text compares NaN equal to NaN and floats exactly.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize(("env_id", "name", "setting", "seed"), _cases())
def test_env_and_runner_give_identical_metrics(
    env_id: str, name: str, setting: str, seed: int
) -> None:
    env = gym.make(env_id, **SETTINGS[setting])
    base = env.unwrapped
    through_env = rollout(env, HeuristicAgent(base.policy(name)), seed=seed)
    replay = run_episode(policy=base.policy(name), **base.runner_args())
    env.close()
    assert _same(through_env.metrics, replay.metrics), (through_env.metrics, replay.metrics)
    if setting == "horizon":
        assert replay.metrics["makespan_s"] <= 5000.0


def test_the_parity_check_can_fail() -> None:
    """A different policy on the runner side breaks parity (the comparison is not vacuous)."""
    env = gym.make(MOLDABLE, preset="toy")
    base = env.unwrapped
    through_env = rollout(env, HeuristicAgent(base.policy("sjf")), seed=0)
    replay = run_episode(policy=base.policy("max-parallelism"), **base.runner_args())
    assert not _same(through_env.metrics, replay.metrics)
