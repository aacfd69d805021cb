"""MetisAllocation ablation switches: oracle curves vs fitted curves vs no curve features."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401

ENV_ID = "cluster_envs/MetisAllocation-v0"
CURVE_FIELDS = (
    "est_progress", "est_quality", "est_remaining@1", "curve_fitted", "curve_c0", "curve_b1",
    "curve_b2", "num_loss_observations", "quality_gain@1", "quality_gain@2", "quality_gain@4",
    "quality_gain@8", "quality_gain@16",
)  # fmt: skip


def _obs_after(job_features: str, slices: int = 6) -> tuple[np.ndarray, list[str]]:
    env = gym.make(ENV_ID, preset="toy", job_features=job_features)
    env.reset(seed=3)
    action = np.full(env.action_space.shape, 2, dtype=np.int64)  # 2 GPUs per job
    for _ in range(slices):
        obs, *_ = env.step(action)
    return obs, env.unwrapped.encoder.describe()


def test_no_curve_zeroes_exactly_what_the_loss_curve_gives() -> None:
    fitted, names = _obs_after("fitted")
    blind, _ = _obs_after("no_curve")
    curve_idx = [i for i, n in enumerate(names) if n.split(".", 1)[-1] in CURVE_FIELDS]
    # The cluster's mean estimated quality is an average of est_quality.
    curve_idx.append(names.index("mean_est_quality"))
    other_idx = [i for i in range(len(names)) if i not in curve_idx]
    assert not blind[curve_idx].any()
    for field in CURVE_FIELDS:  # every hidden field carries information when shown
        assert fitted[[i for i, n in enumerate(names) if n.endswith("." + field)]].any(), field
    np.testing.assert_array_equal(blind[other_idx], fitted[other_idx])  # same dynamics


def test_oracle_shows_the_true_progress() -> None:
    oracle_env = gym.make(ENV_ID, preset="toy", job_features="oracle")
    oracle_env.reset(seed=3)
    action = np.full(oracle_env.action_space.shape, 2, dtype=np.int64)
    for _ in range(6):
        obs, *_ = oracle_env.step(action)
    base = oracle_env.unwrapped
    names = base.encoder.describe()
    for k, j in enumerate(base.slots):
        if j is None:
            continue
        shown = obs[names.index(f"slot{k}.est_progress")]
        truth = min(base.sim.iterations_done(j) / base.sim.jobs[j].total_iterations, 1.0)
        assert shown == pytest.approx(truth, rel=1e-5)
    fitted, _ = _obs_after("fitted")
    assert not np.array_equal(fitted, obs)  # the fitted view differs from the truth


def test_unknown_job_features_is_rejected() -> None:
    with pytest.raises(ValueError, match="job_features must be one of"):
        gym.make(ENV_ID, job_features="truth")
