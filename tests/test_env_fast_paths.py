"""The envs' short step paths (issue 11) give what the general path gives.

MetisAllocationDiscrete's "+1 GPU" step and JobPlacement's place step take a short path
for a plain ``int`` action; any other integral type (``np.int64``) goes through
``ClusterEnvBase.step``. Playing the same actions both ways must give the same
observations, rewards, flags and infos. ``WorkEstimator.slot_reads`` must equal the four
calls it replaces.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the ids)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("cluster_envs/MetisAllocationDiscrete-v0", {"preset": "toy"}),
        ("cluster_envs/MetisAllocationDiscrete-v0", {"preset": "toy", "observation": "scale_free"}),
        ("cluster_envs/JobPlacement-v0", {"preset": "toy"}),
        ("cluster_envs/JobPlacement-v0", {"preset": "toy", "observation": "scale_free"}),
    ],
)
def test_short_step_path_equals_the_general_one(env_id: str, kwargs: dict[str, Any]) -> None:
    fast, slow = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
    rng = np.random.default_rng(0)
    shortcuts = 0
    for seed in (1, 2):
        obs_f, info_f = fast.reset(seed=seed)
        obs_s, info_s = slow.reset(seed=seed)
        assert np.array_equal(obs_f, obs_s) and _same(info_f, info_s)
        for _ in range(300):
            mask = info_f["action_mask"]
            if rng.random() < 0.1:  # sometimes a masked-out action (the invalid path)
                action = int(rng.integers(len(mask)))
            else:
                action = int(rng.choice(np.flatnonzero(mask)))
            before = fast.unwrapped.sim.state_version
            out_f = fast.step(action)
            out_s = slow.step(np.int64(action))
            shortcuts += int(fast.unwrapped.sim.state_version == before)
            assert np.array_equal(out_f[0], out_s[0])
            assert _same(out_f[1], out_s[1]) and out_f[2:4] == out_s[2:4]
            assert _same(out_f[4], out_s[4])
            info_f = out_f[4]
            if out_f[2] or out_f[3]:
                break
    assert shortcuts > 20  # the short path was taken (steps in which no time passed)


def test_slot_reads_equal_the_four_calls() -> None:
    env = gym.make("cluster_envs/MetisAllocationDiscrete-v0", preset="toy")
    rng = np.random.default_rng(3)
    _, info = env.reset(seed=4)
    checked = 0
    for _ in range(400):
        sim = env.unwrapped.sim
        for j in [*sim.queue, *sim.active]:
            got = sim.estimator.slot_reads(j)  # first: it may refit, the calls then agree
            est = sim.estimator
            want = (est.total_iterations(j), sim.iterations_done(j), est.fitted(j))
            assert got == (*want, est.num_observations(j))
            checked += 1
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert checked > 100
