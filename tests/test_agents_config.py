"""agents: hyper-parameter resolution and validation, seeds syntax, confidence intervals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents.algos import ALGOS, detect_algo, get_algo
from agents.config import HYPERPARAMS_DIR, resolve_hyperparams
from agents.envs import EVAL_SEED_OFFSET, check_env_id, parse_env_kwargs, vecnormalize_path
from agents.evaluate import parse_seeds
from cluster_envs.errors import ConfigError
from cluster_envs.harness.stats import mean_ci

ENV = "cluster_envs/MoldableScheduling-v0"


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_every_algo_has_a_yaml_with_default_and_env_entry(algo: str) -> None:
    data = yaml.safe_load((HYPERPARAMS_DIR / f"{algo}.yml").read_text())
    assert "default" in data and ENV in data
    params = resolve_hyperparams(algo, ENV)
    assert params.env_kwargs == {"preset": "default"}
    assert params.n_envs >= 1 and params.policy == "MlpPolicy"
    # The resolved kwargs build a real model (validation and SB3 agree).
    assert "policy_kwargs" in params.model_kwargs()


def test_layers_merge_in_order_env_kwargs_key_by_key() -> None:
    user = {"default": {"learning_rate": 1e-3}, ENV: {"env_kwargs": {"window": 4}}}
    params = resolve_hyperparams("maskable_ppo", ENV, user, env_kwargs={"preset": "toy"}, n_envs=3)
    assert params.env_kwargs == {"preset": "toy", "window": 4}
    assert params.algo_kwargs["learning_rate"] == 1e-3
    assert params.n_envs == 3
    # Flat user mapping (not keyed by env id) and inline YAML text work the same way.
    flat = resolve_hyperparams("ppo", ENV, "{n_steps: 32, normalize: true}")
    assert flat.algo_kwargs["n_steps"] == 32
    assert flat.normalize == {}


def test_user_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "hp.yml"
    path.write_text(f"{ENV}:\n  gamma: 0.9\n  policy_kwargs: {{net_arch: [8]}}\n")
    params = resolve_hyperparams("a2c", ENV, path)
    assert params.algo_kwargs["gamma"] == 0.9
    assert params.policy_kwargs == {"net_arch": [8], "activation_fn": "tanh"}
    with pytest.raises(FileNotFoundError, match="missing.yml"):
        resolve_hyperparams("a2c", ENV, tmp_path / "missing.yml")


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"learning_rat": 1e-3}, "did you mean 'learning_rate'"),
        ({"n_step": 64}, "did you mean 'n_steps'"),
        ({"learning_rate": "fast"}, "must be a number"),
        ({"normalize_advantage": 1}, "must be true/false"),
        ({"n_envs": 0}, "n_envs must be"),
        ({"policy": "MlpPolcy"}, "did you mean 'MlpPolicy'"),
        ({"policy_kwargs": {"net_arc": [8]}}, "did you mean 'net_arch'"),
        ({"policy_kwargs": {"activation_fn": "rel"}}, "did you mean 'relu'"),
        ({"normalize": {"norm_ob": True}}, "did you mean 'norm_obs'"),
    ],
)
def test_bad_hyperparams_name_the_key(user: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_hyperparams("ppo", ENV, user)


def test_dqn_train_freq_and_reserved_keys() -> None:
    params = resolve_hyperparams("dqn", ENV, {"train_freq": [1, "episode"]})
    assert params.model_kwargs()["train_freq"] == (1, "episode")
    with pytest.raises(ConfigError, match="train_freq"):
        resolve_hyperparams("dqn", ENV, {"train_freq": [1, "epoch"]})
    with pytest.raises(ConfigError, match="unknown dqn hyper-parameter 'seed'"):
        resolve_hyperparams("dqn", ENV, {"seed": 3})  # seeds come from --seed only


def test_unknown_algo_and_env_suggest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'maskable_ppo'"):
        get_algo("maskable-ppo")
    with pytest.raises(ConfigError, match="MoldableScheduling-v0"):
        check_env_id("cluster_envs/MoldableSchedulng-v0")
    assert check_env_id("MoldableScheduling-v0") == ENV


def test_env_kwargs_json() -> None:
    assert parse_env_kwargs('{"preset": "toy"}') == {"preset": "toy"}
    assert parse_env_kwargs(None) == {}
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_env_kwargs("{preset: toy}")
    with pytest.raises(ConfigError, match="JSON object"):
        parse_env_kwargs("[1, 2]")


def test_parse_seeds() -> None:
    assert parse_seeds("100-104") == [100, 101, 102, 103, 104]
    assert parse_seeds("1,2,3") == [1, 2, 3]
    assert parse_seeds("1-3, 7") == [1, 2, 3, 7]
    assert parse_seeds("5") == [5]
    for bad in ("", "a-b", "5-1", "1,,2", "1-2-3", "-1"):
        with pytest.raises(ConfigError, match="bad seeds"):
            parse_seeds(bad)


def test_mean_ci_matches_student_t_by_hand() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    ci = mean_ci(values)
    # t(0.975, 3) = 3.182446; s = sqrt(5/3); half = t * s / 2.
    assert ci.mean == 2.5
    assert ci.half_width == pytest.approx(3.182446 * math.sqrt(5 / 3) / 2, rel=1e-5)
    assert math.isnan(mean_ci([7.0]).half_width)  # one seed: no interval
    assert (mean_ci(np.full(5, 3.0)).mean, mean_ci(np.full(5, 3.0)).half_width) == (3.0, 0.0)


def test_eval_seeds_are_disjoint_from_training_seeds() -> None:
    assert EVAL_SEED_OFFSET >= 10_000  # documented: seed + i for training, seed + 10_000


def test_vecnormalize_path_follows_sb3_names(tmp_path: Path) -> None:
    (tmp_path / "best_model_vecnormalize.pkl").write_bytes(b"x")
    (tmp_path / "model_vecnormalize_400_steps.pkl").write_bytes(b"x")
    assert vecnormalize_path(tmp_path / "best_model.zip").name == "best_model_vecnormalize.pkl"
    assert vecnormalize_path(tmp_path / "model_400_steps.zip").name == (
        "model_vecnormalize_400_steps.pkl"
    )
    assert vecnormalize_path(tmp_path / "last_model.zip") is None


def test_detect_algo_rejects_non_models(tmp_path: Path) -> None:
    bad = tmp_path / "x.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="not a Stable-Baselines3 model zip"):
        detect_algo(bad)


def test_agents_never_import_baselines() -> None:
    import ast

    root = Path(__file__).parents[1] / "agents"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "baselines" for n in names), path
