"""Pinned trajectories: refactors and speed-ups must not change behaviour silently.

For every registered env, a seeded masked-random rollout on the ``toy`` preset is reduced
to a digest of every observation, the exact rewards, the info counters and the episode
metrics; heuristics through the env and the no-gym runner are pinned by their metric
dicts. The expected values live in ``tests/data/pinned_trajectories.json``, written from
the code as it was when the file was created (``python tests/test_pinned_trajectories.py
--regenerate`` rewrites it -- only do that for a change that is *meant* to alter
behaviour, and say so in the commit).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.runner import run_episode
from cluster_envs.workload import load_workload

PINNED = Path(__file__).parent / "data" / "pinned_trajectories.json"
MAX_STEPS = 400
SEEDS = (3, 11)

#: (env id, kwargs) of the pinned random rollouts.
RANDOM_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "moldable-toy": ("cluster_envs/MoldableScheduling-v0", {"preset": "toy"}),
    "moldable-horizon": (
        "cluster_envs/MoldableScheduling-v0",
        {"preset": "toy", "horizon_s": 6000.0},
    ),
    "metis-toy": (
        "cluster_envs/MetisAllocation-v0",
        {"preset": "toy", "gain_weight": 1.0, "auc_weight": 0.0},
    ),
    "metis-discrete-toy": (
        "cluster_envs/MetisAllocationDiscrete-v0",
        {"preset": "toy", "gain_weight": 1.0, "auc_weight": 0.0},
    ),
    "placement-toy": ("cluster_envs/JobPlacement-v0", {"preset": "toy"}),
    "placement-horizon": ("cluster_envs/JobPlacement-v0", {"preset": "toy", "horizon_s": 6000.0}),
    "metis-horizon": (
        "cluster_envs/MetisAllocation-v0",
        {"preset": "toy", "sim": {"horizon_s": 6000.0}, "gain_weight": 1.0, "auc_weight": 0.0},
    ),
}

#: (env id, kwargs, heuristic) played through the env to the end.
HEURISTIC_CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "moldable-sjf": ("cluster_envs/MoldableScheduling-v0", {"preset": "toy"}, "sjf"),
    "moldable-tetris": ("cluster_envs/MoldableScheduling-v0", {"preset": "toy"}, "tetris"),
    "metis-slaq": (
        "cluster_envs/MetisAllocation-v0",
        {"preset": "toy", "gain_weight": 1.0, "auc_weight": 0.0},
        "slaq",
    ),
    "metis-tiresias": (
        "cluster_envs/MetisAllocation-v0",
        {"preset": "toy", "gain_weight": 1.0, "auc_weight": 0.0},
        "tiresias",
    ),
    "placement-fifo": ("cluster_envs/JobPlacement-v0", {"preset": "toy"}, "fifo"),
}

#: Runner episodes: (policy, cluster, sim config, quality).
RUNNER_CASES: dict[str, tuple[str, str, dict[str, Any], bool]] = {
    "runner-fifo": ("fifo", "pollux-testbed", {}, False),
    "runner-tiresias": ("tiresias", "pollux-testbed", {"time_slice_s": 600.0}, True),
    "runner-optimus": ("optimus", "small", {"time_slice_s": 600.0}, True),
    "runner-fifo-horizon": ("fifo", "small", {"horizon_s": 30000.0}, False),
}


def _masked_random_action(env: gym.Env, rng: np.random.Generator) -> Any:
    mask = np.asarray(env.unwrapped.action_masks(), dtype=bool)
    space = env.action_space
    if isinstance(space, gym.spaces.MultiDiscrete):
        width = int(space.nvec[0])
        rows = mask.reshape(len(space.nvec), width)
        return np.array([rng.choice(np.flatnonzero(r)) for r in rows], dtype=np.int64)
    return int(rng.choice(np.flatnonzero(mask)))


def _digest(values: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for v in values:
        h.update(np.ascontiguousarray(v, dtype=np.float32).tobytes())
    return h.hexdigest()


def _clean(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in sorted(metrics.items())}


def random_case(env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    observations, rewards, counters = [obs], [], []
    done, metrics = False, {}
    for _ in range(MAX_STEPS):
        obs, reward, terminated, truncated, info = env.step(_masked_random_action(env, rng))
        observations.append(obs)
        rewards.append(float(reward))
        counters.append(
            [info.get("num_invalid_actions", 0), info.get("num_projected", 0), info["num_queued"]]
        )
        if terminated or truncated:
            done, metrics = True, info["episode_metrics"]
            break
    env.close()
    return {
        "obs_sha256": _digest(observations),
        "rewards": rewards,
        "counters": counters,
        "done": done,
        "metrics": _clean(metrics),
    }


def heuristic_case(env_id: str, kwargs: dict[str, Any], policy: str, seed: int) -> dict[str, Any]:
    env = gym.make(env_id, **kwargs)
    result = rollout(env, HeuristicAgent(env.unwrapped.policy(policy)), seed=seed)
    env.close()
    return {"return": result.episode_return, "steps": result.num_steps, **_clean(result.metrics)}


def runner_case(policy: str, cluster: str, config: dict, quality: bool, seed: int) -> dict:
    workload = load_workload("philly-sample", num_jobs=60)
    return _clean(
        run_episode(workload, policy, cluster, config, seed=seed, quality=quality).metrics
    )


def compute_all() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for seed in SEEDS:
        for name, (env_id, kwargs) in RANDOM_CASES.items():
            out[f"{name}/{seed}"] = random_case(env_id, kwargs, seed)
        for name, (env_id, kwargs, policy) in HEURISTIC_CASES.items():
            out[f"{name}/{seed}"] = heuristic_case(env_id, kwargs, policy, seed)
        for name, (policy, cluster, config, quality) in RUNNER_CASES.items():
            out[f"{name}/{seed}"] = runner_case(policy, cluster, config, quality, seed)
    return out


def _expected() -> dict[str, Any]:
    return json.loads(PINNED.read_text())


# Floats agree to this relative tolerance, not bit for bit: numpy's pairwise and SIMD
# reductions (np.mean, np.percentile) round the last bit differently across numpy
# releases and CPUs, so a fresh install may differ in the 16th digit. Any change in
# behaviour moves a metric far more than that; digests, counters and lengths stay exact.
REL_TOL = 1e-9


def _close(want: Any, got: Any) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        if not isinstance(want, (int, float)) or not isinstance(got, (int, float)):
            return False
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return math.isclose(want, got, rel_tol=REL_TOL, abs_tol=REL_TOL)
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and want.keys() == got.keys()
            and all(_close(want[k], got[k]) for k in want)
        )
    if isinstance(want, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(want) == len(got)
            and all(_close(w, g) for w, g in zip(want, got, strict=True))
        )
    return bool(want == got)


def _compare(key: str, got: dict[str, Any]) -> None:
    want = _expected()[key]
    # Round-trip through JSON so tuples/ints compare as the stored file does.
    got = json.loads(json.dumps(got, sort_keys=True))
    assert got.keys() == want.keys(), key
    for field, value in want.items():
        assert _close(value, got[field]), f"{key}: {field} changed from {value!r} to {got[field]!r}"


def test_comparison_tolerates_last_bits_only() -> None:
    want = {"avg": 1901.77311084091, "n": 3, "sha": "ab", "xs": [1.0, float("nan")]}
    assert _close(want, {"avg": 1901.7731108409098, "n": 3, "sha": "ab", "xs": [1.0, float("nan")]})
    assert not _close(want, {"avg": 1901.7731, "n": 3, "sha": "ab", "xs": [1.0, float("nan")]})
    assert not _close(
        want, {"avg": 1901.77311084091, "n": 4, "sha": "ab", "xs": [1.0, float("nan")]}
    )
    assert not _close(
        want, {"avg": 1901.77311084091, "n": 3, "sha": "ac", "xs": [1.0, float("nan")]}
    )
    assert not _close(want, {"avg": 1901.77311084091, "n": 3, "sha": "ab", "xs": [1.0, 0.0]})


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(RANDOM_CASES))
def test_random_rollouts_are_pinned(name: str, seed: int) -> None:
    env_id, kwargs = RANDOM_CASES[name]
    _compare(f"{name}/{seed}", random_case(env_id, kwargs, seed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(HEURISTIC_CASES))
def test_heuristics_through_envs_are_pinned(name: str, seed: int) -> None:
    env_id, kwargs, policy = HEURISTIC_CASES[name]
    _compare(f"{name}/{seed}", heuristic_case(env_id, kwargs, policy, seed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(RUNNER_CASES))
def test_runner_metrics_are_pinned(name: str, seed: int) -> None:
    policy, cluster, config, quality = RUNNER_CASES[name]
    _compare(f"{name}/{seed}", runner_case(policy, cluster, config, quality, seed))


def test_the_pinned_file_covers_every_case() -> None:
    cases = len(RANDOM_CASES) + len(HEURISTIC_CASES) + len(RUNNER_CASES)
    assert len(_expected()) == cases * len(SEEDS)


if __name__ == "__main__":
    if "--regenerate" not in sys.argv:
        sys.exit("usage: python tests/test_pinned_trajectories.py --regenerate")
    PINNED.write_text(json.dumps(compute_all(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")
