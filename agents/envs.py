"""Training and evaluation envs: id checks, kwargs parsing, seeded vectorised envs.

Seeding (documented contract): training env ``i`` of ``n_envs`` is seeded with
``seed + i``; the evaluation env with ``seed + EVAL_SEED_OFFSET`` (10,000), reseeded
before every periodic evaluation. Training seeds therefore never overlap evaluation
seeds for ``n_envs < 10,000``. Training envs are one native vector env in this process
(:class:`agents.native_vec.NativeVecEnv` over
:class:`cluster_envs.envs.vector.ClusterVectorEnv`, which adds ``Monitor``'s episode
statistics itself): the same episodes as the ``DummyVecEnv`` of ``Monitor``-wrapped envs
it replaced (``vec_env="dummy"``, kept for comparison), faster. They are wrapped in
``VecNormalize`` when the hyper-parameters ask for it. The evaluation env is one
``Monitor``-wrapped env in a ``DummyVecEnv``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

import cluster_envs  # noqa: F401  (registers the env ids)
from agents.config import Hyperparams
from agents.native_vec import native_vec_env
from agents.native_vec_proc import ProcNativeVecEnv
from cluster_envs.envs.registration import resolve_env_id
from cluster_envs.errors import ConfigError

#: Offset between the training seed and the evaluation env's seed.
EVAL_SEED_OFFSET = 10_000
#: How training envs are vectorised: ``native`` (the default), ``native-subproc``
#: (:data:`SUBPROC_WORKERS` processes of native vector envs) or ``dummy``.
VEC_ENV_KINDS = ("native", "native-subproc", "dummy")
#: Worker processes of ``vec_env="native-subproc"``.
SUBPROC_WORKERS = 2


def check_env_id(env_id: str) -> str:
    """The registered id of ``env_id`` (a bare ``Task-vN`` gets the ``cluster_envs/`` namespace)."""
    return resolve_env_id(env_id)


def parse_env_kwargs(text: str | None) -> dict[str, Any]:
    """``--env-kwargs`` JSON (an object) as a dict; ``None`` gives ``{}``."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--env-kwargs is not valid JSON ({exc}): {text!r}") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"--env-kwargs must be a JSON object, got {text!r}")
    return value


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    """One env, built eagerly so bad kwargs fail with the env's own message."""
    return gym.make(check_env_id(env_id), **env_kwargs)


def make_train_env(params: Hyperparams, seed: int, vec_env: str = "native") -> VecEnv:
    """``n_envs`` seeded, monitored training envs (normalised if configured).

    ``vec_env``: ``"native"`` (one batched vector env in this process),
    ``"native-subproc"`` (the envs split over :data:`SUBPROC_WORKERS` processes, each a
    native vector env) or ``"dummy"`` (``DummyVecEnv`` of ``Monitor``-wrapped
    ``gym.make`` envs); all play the same episodes.
    """
    if vec_env not in VEC_ENV_KINDS:
        raise ConfigError(f"vec_env must be one of {list(VEC_ENV_KINDS)}, got {vec_env!r}")
    make_env(params.env_id, params.env_kwargs).close()  # validate kwargs once, early
    venv: VecEnv
    if vec_env == "native":
        venv = native_vec_env(check_env_id(params.env_id), params.n_envs, seed, params.env_kwargs)
    elif vec_env == "native-subproc":
        venv = ProcNativeVecEnv(
            check_env_id(params.env_id), params.n_envs, SUBPROC_WORKERS, params.env_kwargs
        )
        venv.seed(seed)
    else:
        venv = make_vec_env(
            params.env_id,
            n_envs=params.n_envs,
            seed=seed,
            env_kwargs=params.env_kwargs,
            vec_env_cls=DummyVecEnv,
        )
    if params.normalize is not None:
        venv = VecNormalize(venv, **params.normalize)
    return venv


def make_eval_env(params: Hyperparams, seed: int) -> VecEnv:
    """One monitored eval env seeded with ``seed + EVAL_SEED_OFFSET``.

    With normalisation it is a frozen VecNormalize (no reward normalisation) whose
    statistics SB3's eval callback copies from the training env before evaluating.
    """
    eval_seed = seed + EVAL_SEED_OFFSET
    venv: VecEnv = DummyVecEnv([lambda: Monitor(make_env(params.env_id, params.env_kwargs))])
    venv.seed(eval_seed)
    if params.normalize is not None:
        venv = VecNormalize(venv, training=False, norm_reward=False, **_obs_only(params))
    return venv


def _obs_only(params: Hyperparams) -> dict[str, Any]:
    norm = dict(params.normalize or {})
    norm.pop("norm_reward", None)
    return norm


def vecnormalize_path(model_path: Path) -> Path | None:
    """The VecNormalize statistics saved with ``model_path``, if any.

    ``best_model.zip`` -> ``best_model_vecnormalize.pkl``; checkpoint
    ``model_1000_steps.zip`` -> ``model_vecnormalize_1000_steps.pkl`` (SB3's naming).
    """
    stem = model_path.stem
    candidates = [model_path.with_name(f"{stem}_vecnormalize.pkl")]
    if stem.endswith("_steps"):
        prefix, _, rest = stem.rpartition("_")  # rest == "steps"
        head, _, steps = prefix.rpartition("_")
        candidates.append(model_path.with_name(f"{head}_vecnormalize_{steps}_{rest}.pkl"))
    return next((c for c in candidates if c.is_file()), None)
