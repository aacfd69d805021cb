"""agents.train: real SB3 training for a few hundred steps on the toy MoldableScheduling.

Covers every algorithm, TensorBoard cluster scalars, seeded reproducibility, checkpoints
and resuming, and the run-folder guard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.algos import ALGOS, load_model
from agents.train import LOG_DIR, TrainResult, train
from cluster_envs.errors import ConfigError

ENV = "cluster_envs/MoldableScheduling-v0"
TOY = {"preset": "toy"}
#: Small rollouts so a few hundred steps give several updates.
TINY: dict[str, dict[str, Any]] = {
    "maskable_ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 2},
    "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 2},
    "a2c": {"n_steps": 8},
    "dqn": {"learning_starts": 50, "buffer_size": 1000, "target_update_interval": 50},
}


def tiny_train(algo: str, out: Path, timesteps: int = 256, **kwargs: Any) -> TrainResult:
    options: dict[str, Any] = {
        "seed": 3,
        "env_kwargs": TOY,
        "hyperparams": TINY[algo],
        "n_envs": 2 if algo != "dqn" else 1,
        "eval_freq": 128,
        "eval_episodes": 1,
        "progress_bar": False,
    }
    options.update(kwargs)
    return train(algo, ENV, out, timesteps=timesteps, **options)


def params_of(path: Path) -> dict[str, torch.Tensor]:
    model, _ = load_model(path)
    return {k: v.clone() for k, v in model.policy.state_dict().items()}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_each_algo_trains_and_logs_cluster_metrics(algo: str, tmp_path: Path) -> None:
    result = tiny_train(algo, tmp_path / algo, timesteps=300)
    assert result.num_timesteps >= 300
    assert result.last_model.is_file() and result.best_model is not None
    assert sorted(p.name for p in (tmp_path / algo / "checkpoints").glob("*.zip"))
    # The model learned something: its parameters moved away from the initial ones.
    model, name = load_model(result.last_model)
    assert name == algo and type(model) is ALGOS[algo]
    initial = type(model)(
        "MlpPolicy", model.get_env() or _toy_env(), seed=3, device="cpu",
        policy_kwargs=model.policy_kwargs,
    )  # fmt: skip
    moved = [
        not torch.equal(a, b)
        for a, b in zip(
            model.policy.state_dict().values(), initial.policy.state_dict().values(), strict=True
        )
    ]
    assert any(moved)
    # TensorBoard holds the custom cluster scalars, with real values.
    events = list((tmp_path / algo / LOG_DIR).glob("events.out.tfevents.*"))
    assert events
    acc = EventAccumulator(str(events[0]))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("avg_jct_s", "p95_jct_s", "gpu_utilization", "jct_ratio_to_lower_bound"):
        assert f"cluster/{tag}" in tags
    assert "cluster/num_invalid_actions" in tags
    jct = [e.value for e in acc.Scalars("cluster/avg_jct_s")]
    assert jct and all(v > 0 for v in jct)
    ratio = [e.value for e in acc.Scalars("cluster/jct_ratio_to_lower_bound")]
    assert all(r >= 1.0 - 1e-6 for r in ratio)
    if algo == "maskable_ppo":  # masked sampling never picks an infeasible action
        assert all(e.value == 0 for e in acc.Scalars("cluster/num_invalid_actions"))


def _toy_env() -> Any:
    import gymnasium as gym

    return gym.make(ENV, **TOY)


def test_same_seed_same_parameters_other_seed_differs(tmp_path: Path) -> None:
    a = params_of(tiny_train("maskable_ppo", tmp_path / "a", eval_freq=0).last_model)
    b = params_of(tiny_train("maskable_ppo", tmp_path / "b", eval_freq=0).last_model)
    c = params_of(tiny_train("maskable_ppo", tmp_path / "c", eval_freq=0, seed=4).last_model)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_refuses_to_overwrite_a_run_without_force(tmp_path: Path) -> None:
    out = tmp_path / "run"
    tiny_train("a2c", out, timesteps=64, eval_freq=0)
    before = (out / "last_model.zip").read_bytes()
    with pytest.raises(ConfigError, match="already holds a run.*--force"):
        tiny_train("a2c", out, timesteps=64, eval_freq=0, seed=9)
    assert (out / "last_model.zip").read_bytes() == before  # untouched
    tiny_train("a2c", out, timesteps=64, eval_freq=0, seed=9, force=True)
    assert (out / "seed").read_text().strip() == "9"


def test_resume_continues_the_timestep_count(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = tiny_train("ppo", out, timesteps=256, eval_freq=0, checkpoint_freq=128)
    checkpoint = out / "checkpoints" / "model_128_steps.zip"
    assert checkpoint.is_file() and first.num_timesteps == 256
    resumed = tiny_train("ppo", out, timesteps=256, eval_freq=0, resume=checkpoint)
    assert resumed.num_timesteps == 128 + 256
    model, _ = load_model(out / "last_model.zip")
    assert model.num_timesteps == 384
    history = (out / "command.txt").read_text().splitlines()
    assert len(history) == 2  # the resumed invocation is appended, not overwritten
    # Resuming someone else's run into a fresh folder works; into another run needs --force.
    tiny_train("ppo", tmp_path / "fresh", timesteps=128, eval_freq=0, resume=checkpoint)
    other = tmp_path / "other"
    tiny_train("ppo", other, timesteps=64, eval_freq=0)
    with pytest.raises(ConfigError, match="already holds a run"):
        tiny_train("ppo", other, timesteps=64, eval_freq=0, resume=checkpoint)
    with pytest.raises(ConfigError, match="trained with 'ppo', not 'a2c'"):
        tiny_train("a2c", tmp_path / "x", timesteps=64, eval_freq=0, resume=checkpoint)


def test_vecnormalize_run_saves_and_reuses_statistics(tmp_path: Path) -> None:
    from agents.policy import load_agent
    from cluster_envs.envs.rollout import rollout

    out = tmp_path / "norm"
    hp = {**TINY["ppo"], "normalize": {"norm_obs": True, "norm_reward": True}}
    # Reward-only normalisation (observations are already in [0, 1]) trains too.
    reward_only = {**TINY["ppo"], "normalize": {"norm_obs": False, "norm_reward": True}}
    tiny_train("ppo", tmp_path / "reward_only", timesteps=128, hyperparams=reward_only)
    tiny_train("ppo", out, timesteps=256, hyperparams=hp, eval_freq=128)
    assert (out / "last_model_vecnormalize.pkl").is_file()
    assert (out / "best_model_vecnormalize.pkl").is_file()
    agent, _ = load_agent(out / "last_model.zip")
    assert agent.obs_normalizer is not None
    mean = agent.obs_normalizer.obs_rms.mean
    assert np.any(mean != 0)  # statistics were learned, not defaults
    result = rollout(_toy_env(), agent, seed=5)
    assert result.metrics["num_unfinished"] == 0


def test_a_run_shorter_than_eval_freq_still_saves_best_model(tmp_path: Path) -> None:
    result = tiny_train("a2c", tmp_path / "short", timesteps=64, eval_freq=10_000)
    assert result.best_model is not None and result.best_model.is_file()
    config = (tmp_path / "short" / "config.yml").read_text()
    assert "eval_freq: 64" in config  # the evaluation period actually used is recorded


def test_run_spec_is_the_one_description_of_a_run(tmp_path: Path) -> None:
    from agents.train import RunSpec, plan_run

    spec = RunSpec("a2c", "MoldableScheduling-v0", tmp_path / "x", timesteps=50, env_kwargs=TOY,
                   hyperparams=TINY["a2c"], eval_freq=200)  # fmt: skip
    plan = plan_run(spec)
    assert plan.env_id == ENV and plan.budget == 50 and plan.eval_freq == 50
    assert not (tmp_path / "x").exists()  # planning writes nothing
    with pytest.raises(ConfigError, match="--eval-freq"):
        plan_run(RunSpec("a2c", ENV, tmp_path / "y", timesteps=50, eval_freq=-1))
