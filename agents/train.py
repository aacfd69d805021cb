"""Train an SB3 agent on a cluster-envs env into a run folder (``cluster-envs train``).

One call resolves the hyper-parameters (:mod:`agents.config`), builds seeded envs
(:mod:`agents.envs`), trains with TensorBoard cluster metrics, periodic evaluation on
held-out seeds and checkpoints (:mod:`agents.callbacks`), and saves ``last_model.zip``.
Same seed and arguments give the same final parameters on the CPU: torch runs on one
thread with deterministic algorithms, and every RNG is seeded from ``seed``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecNormalize

from agents.algos import MASKABLE, OFF_POLICY, check_model_path, detect_algo, get_algo
from agents.callbacks import ClusterMetricsCallback, SaveVecNormalizeCallback, make_eval_callback
from agents.config import Hyperparams, resolve_hyperparams
from agents.envs import (
    EVAL_SEED_OFFSET,
    VEC_ENV_KINDS,
    check_env_id,
    make_eval_env,
    make_train_env,
    vecnormalize_path,
)
from agents.imitation import PretrainSettings, warm_start
from agents.runs import prepare_run_dir, write_run_files
from cluster_envs.errors import ConfigError

#: Default evaluation period, in env steps over all training envs.
DEFAULT_EVAL_FREQ = 10_000
#: Default episodes per periodic evaluation.
DEFAULT_EVAL_EPISODES = 5
#: Checkpoints per run when ``checkpoint_freq`` is not given.
CHECKPOINTS_PER_RUN = 5
#: TensorBoard / CSV log folder inside the run folder.
LOG_DIR = "tensorboard"


@dataclass(frozen=True)
class TrainResult:
    """What a training run produced.

    Attributes:
        out_dir: The run folder.
        last_model: Path of ``last_model.zip``.
        best_model: Path of ``best_model.zip`` (``None`` if no evaluation ran).
        num_timesteps: Env steps trained in total (including resumed ones).
        wall_s: Training wall time of this call, seconds.
        fps: Env steps per second of this call.
        last_episode_metrics: Cluster metrics of the last finished training episode.
    """

    out_dir: Path
    last_model: Path
    best_model: Path | None
    num_timesteps: int
    wall_s: float
    fps: float
    last_episode_metrics: dict[str, float]


def set_deterministic() -> None:
    """One torch thread and deterministic kernels (same seed -> same parameters)."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)


@dataclass(frozen=True)
class RunSpec:
    """Everything one training run is asked to do (``cluster-envs train``'s flags).

    Attributes:
        algo: ``maskable_ppo``, ``ppo``, ``a2c`` or ``dqn``.
        env_id: Env id (``cluster_envs/MoldableScheduling-v0`` or ``MoldableScheduling-v0``).
        out_dir: Run folder; refused if it holds a run, unless ``force`` or resuming
            from a checkpoint inside it.
        timesteps: Env steps to train (more steps when resuming); ``None``: the YAML's
            ``n_timesteps``.
        seed: Training seed; training env ``i`` gets ``seed + i``, the eval env
            ``seed + 10_000``.
        env_kwargs: ``gym.make`` overrides (merged over the YAML's ``env_kwargs``).
        hyperparams: User hyper-parameters (YAML file, inline YAML or a mapping).
        n_envs: Number of training envs (overrides the YAML).
        eval_freq: Evaluate every this many env steps (0: never). A run shorter than
            this still evaluates once, at its end, so ``best_model.zip`` always exists
            when evaluation is on.
        eval_episodes: Episodes per evaluation.
        checkpoint_freq: Save a checkpoint every this many env steps (default: 5 per run).
        resume: Checkpoint zip to continue from (its num_timesteps carries on).
        force: Overwrite a run folder.
        progress_bar: Show SB3's progress bar.
        argv: The command line, recorded in ``command.txt``.
        pretrain: Clone a heuristic before RL (:mod:`agents.imitation`); not with
            ``resume``.
        vec_env: How the training envs are vectorised: ``"native"`` (one batched
            :class:`~cluster_envs.envs.vector.ClusterVectorEnv`, the default) or
            ``"dummy"`` (SB3 ``DummyVecEnv``); both play the same episodes
            (:func:`agents.envs.make_train_env`).
    """

    algo: str
    env_id: str
    out_dir: Path
    timesteps: int | None = None
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: str | Path | dict[str, Any] | None = None
    n_envs: int | None = None
    eval_freq: int = DEFAULT_EVAL_FREQ
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    checkpoint_freq: int | None = None
    resume: str | Path | None = None
    force: bool = False
    progress_bar: bool = True
    argv: Sequence[str] = ()
    pretrain: PretrainSettings | None = None
    vec_env: str = "native"


@dataclass(frozen=True)
class _Plan:
    """A RunSpec checked and resolved: hyper-parameters, budget, resume checkpoint."""

    spec: RunSpec
    env_id: str
    params: Hyperparams
    budget: int
    resume: Path | None

    @property
    def per_env(self) -> int:
        return max(self.params.n_envs, 1)

    @property
    def eval_freq(self) -> int:
        """Env steps between evaluations, capped at the budget (0: never)."""
        return min(self.spec.eval_freq, self.budget)


def train(algo: str, env_id: str, out_dir: str | Path, **options: Any) -> TrainResult:
    """Train ``algo`` on ``env_id`` into ``out_dir``; ``options`` are :class:`RunSpec` fields."""
    if options.get("env_kwargs") is None:
        options.pop("env_kwargs", None)
    return run_training(RunSpec(algo, env_id, Path(out_dir), **options))


def run_training(spec: RunSpec) -> TrainResult:
    """Run ``spec``: check it, build the model, train, save ``last_model.zip``."""
    plan = plan_run(spec)
    out = spec.out_dir
    prepare_run_dir(out, spec.force, plan.resume)
    set_deterministic()
    train_env = make_train_env(plan.params, spec.seed, spec.vec_env)
    model = _build_model(plan.params, train_env, spec.seed, plan.resume)
    model.set_logger(configure(str(out / LOG_DIR), ["tensorboard", "csv"]))
    config = _run_config(plan, model)
    if spec.pretrain is not None:
        start = time.perf_counter()
        config["pretrain"] = warm_start(
            model, plan.env_id, plan.params.env_kwargs, spec.pretrain, spec.seed
        )
        config["pretrain"]["wall_s"] = round(time.perf_counter() - start, 2)
        model.save(out / "pretrained_model.zip")
    write_run_files(out, config, spec.argv, spec.seed, append=plan.resume is not None)

    metrics_cb = ClusterMetricsCallback()
    eval_env = make_eval_env(plan.params, spec.seed) if plan.eval_freq > 0 else None
    callbacks = [metrics_cb, _checkpoint_callback(plan)]
    if eval_env is not None:
        callbacks.append(_eval_callback(plan, eval_env))
    start_steps = model.num_timesteps
    start = time.perf_counter()
    with warnings.catch_warnings():
        # The eval env is one Monitor-wrapped env in a DummyVecEnv on purpose, while training
        # steps the native vector env: SB3's EvalCallback warns that the types differ.
        warnings.filterwarnings("ignore", "Training and eval env are not of the same type")
        model.learn(
            total_timesteps=plan.budget,
            callback=callbacks,
            reset_num_timesteps=plan.resume is None,
            progress_bar=spec.progress_bar,
        )
    wall_s = time.perf_counter() - start
    last = _save_last(model, train_env, out)
    train_env.close()
    if eval_env is not None:
        eval_env.close()
    best = out / "best_model.zip"
    return TrainResult(
        out_dir=out,
        last_model=last,
        best_model=best if best.is_file() else None,
        num_timesteps=int(model.num_timesteps),
        wall_s=wall_s,
        fps=(model.num_timesteps - start_steps) / max(wall_s, 1e-9),
        last_episode_metrics=metrics_cb.last_metrics,
    )


def plan_run(spec: RunSpec) -> _Plan:
    """Check ``spec`` (before any file is written) and resolve what it leaves to the YAML."""
    get_algo(spec.algo)
    env_id = check_env_id(spec.env_id)
    if spec.vec_env not in VEC_ENV_KINDS:
        raise ConfigError(f"vec_env must be one of {list(VEC_ENV_KINDS)}, got {spec.vec_env!r}")
    resume = check_model_path(spec.resume) if spec.resume is not None else None
    if resume is not None and detect_algo(resume) != spec.algo:
        raise ConfigError(
            f"--resume {str(spec.resume)!r} was trained with {detect_algo(resume)!r}, "
            f"not {spec.algo!r}"
        )
    params = resolve_hyperparams(spec.algo, env_id, spec.hyperparams, spec.env_kwargs, spec.n_envs)
    budget = spec.timesteps if spec.timesteps is not None else params.n_timesteps
    if budget is None or budget < 1:
        raise ConfigError("give --timesteps N (>= 1) or n_timesteps in the hyper-parameters")
    if spec.eval_freq < 0 or spec.eval_episodes < 1:
        raise ConfigError("--eval-freq must be >= 0 and --eval-episodes >= 1")
    if spec.pretrain is not None and resume is not None:
        raise ConfigError("--pretrain starts a new run; it cannot be combined with --resume")
    return _Plan(spec, env_id, params, int(budget), resume)


def _checkpoint_callback(plan: _Plan) -> BaseCallback:
    save_every = plan.spec.checkpoint_freq or max(plan.budget // CHECKPOINTS_PER_RUN, 1)
    return CheckpointCallback(
        save_freq=max(save_every // plan.per_env, 1),
        save_path=str(plan.spec.out_dir / "checkpoints"),
        name_prefix="model",
        save_vecnormalize=plan.params.normalize is not None,
    )


def _eval_callback(plan: _Plan, eval_env: Any) -> BaseCallback:
    out = plan.spec.out_dir
    on_best = (
        SaveVecNormalizeCallback(out / "best_model_vecnormalize.pkl")
        if plan.params.normalize is not None
        else None
    )
    return make_eval_callback(
        eval_env,
        maskable=plan.params.algo in MASKABLE,
        eval_seed=plan.spec.seed + EVAL_SEED_OFFSET,
        eval_freq=max(plan.eval_freq // plan.per_env, 1),
        n_eval_episodes=plan.spec.eval_episodes,
        out_dir=out,
        on_new_best=on_best,
    )


def _save_last(model: BaseAlgorithm, train_env: Any, out: Path) -> Path:
    last = out / "last_model.zip"
    model.save(last)
    if isinstance(train_env, VecNormalize):
        train_env.save(str(out / "last_model_vecnormalize.pkl"))
    return last


def _build_model(params: Hyperparams, env: Any, seed: int, resume: Path | None) -> BaseAlgorithm:
    cls = get_algo(params.algo)
    if resume is None:
        return cls(env=env, seed=seed, device="cpu", verbose=0, **params.model_kwargs())
    if isinstance(env, VecNormalize):
        stats = vecnormalize_path(resume)
        if stats is not None:
            loaded = VecNormalize.load(str(stats), env.venv)
            env.obs_rms, env.ret_rms = loaded.obs_rms, loaded.ret_rms
    model = cls.load(resume, env=env, device="cpu")
    model.set_random_seed(seed)
    return model


def _run_config(plan: _Plan, model: BaseAlgorithm) -> dict[str, Any]:
    spec, params = plan.spec, plan.params
    config: dict[str, Any] = {
        **params.to_dict(),
        "timesteps": plan.budget,
        "seed": spec.seed,
        "train_env_seeds": f"{spec.seed}..{spec.seed + params.n_envs - 1}",
        "eval_seed": spec.seed + EVAL_SEED_OFFSET,
        "eval_freq": plan.eval_freq,
        "eval_episodes": spec.eval_episodes,
        "resumed_from": str(plan.resume) if plan.resume is not None else None,
        "start_timesteps": int(model.num_timesteps),
    }
    if plan.resume is not None and params.algo in OFF_POLICY:
        config["replay_buffer"] = "empty at resume (replay buffers are not checkpointed)"
    return config
