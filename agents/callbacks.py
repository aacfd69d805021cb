"""Training callbacks: cluster metrics in TensorBoard, evaluation on fixed held-out seeds.

* :class:`ClusterMetricsCallback` records, at every episode end, each numeric entry of
  ``info["episode_metrics"]`` (``avg_jct_s``, ``p95_jct_s``, ``gpu_utilization``,
  ``jct_ratio_to_lower_bound``, and ``quality_auc`` / ``time_to_quality_s`` on quality
  workloads) plus ``num_invalid_actions`` under ``cluster/``. Episodes that end between two
  log dumps are averaged (SB3's ``record_mean``). It also writes a TensorBoard
  custom-scalars layout (the "Custom Scalars" tab) grouping them.
* :func:`make_eval_callback` builds ``MaskableEvalCallback`` for maskable algorithms
  (the plain EvalCallback ignores masks) or ``EvalCallback``, reseeding the eval env
  before every evaluation so each one plays the same held-out episodes: the best model
  is picked on a fixed test set, not on whichever episodes came up.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.logger import TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv

#: TensorBoard tag prefix of the cluster metrics.
PREFIX = "cluster/"

#: Charts of the custom-scalars layout: title -> tags (regexes are allowed).
LAYOUT_CHARTS: dict[str, list[str]] = {
    "job completion time (s)": ["cluster/avg_jct_s", "cluster/p95_jct_s"],
    "JCT / lower bound": ["cluster/jct_ratio_to_lower_bound"],
    "GPU utilisation": ["cluster/gpu_utilization"],
    "invalid actions per episode": ["cluster/num_invalid_actions"],
    "model quality": ["cluster/quality_auc", "cluster/time_to_quality_s"],
    "evaluation return": ["eval/mean_reward"],
}


class ClusterMetricsCallback(BaseCallback):
    """Log every numeric episode metric under ``cluster/`` at each episode end."""

    def __init__(self, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.num_episodes = 0
        self.last_metrics: dict[str, float] = {}

    def _on_training_start(self) -> None:
        for fmt in self.logger.output_formats:
            if isinstance(fmt, TensorBoardOutputFormat):
                layout = {
                    "cluster": {title: ["Multiline", tags] for title, tags in LAYOUT_CHARTS.items()}
                }
                fmt.writer.add_custom_scalars(layout)

    def _on_step(self) -> bool:
        infos: list[dict[str, Any]] = self.locals.get("infos", [])
        dones = self.locals.get("dones", [False] * len(infos))
        for done, info in zip(dones, infos, strict=False):
            metrics = info.get("episode_metrics")
            if not done or not metrics:
                continue
            self.num_episodes += 1
            values = episode_scalars(metrics, info)
            for key, value in values.items():
                self.logger.record_mean(PREFIX + key, value)
            self.last_metrics = values
        return True

    def _on_training_end(self) -> None:
        # Flush episodes that ended after the last regular dump.
        if self.num_episodes:
            self.logger.dump(self.num_timesteps)


def episode_scalars(metrics: dict[str, Any], info: dict[str, Any]) -> dict[str, float]:
    """The numeric metrics of one finished episode (booleans and non-numbers dropped)."""
    out = {
        key: float(value)
        for key, value in metrics.items()
        if isinstance(value, numbers.Real) and not isinstance(value, bool)
    }
    out["num_invalid_actions"] = float(info.get("num_invalid_actions", 0))
    return out


class _ReseedBeforeEval:
    """Mixin: reseed the eval env before each evaluation (same episodes every time)."""

    eval_env: VecEnv
    eval_freq: int
    n_calls: int

    def _reseed_if_due(self) -> None:
        if self.eval_freq > 0 and self.n_calls % self.eval_freq == 0:
            self.eval_env.seed(self.eval_seed)  # type: ignore[attr-defined]


class FixedSeedEvalCallback(_ReseedBeforeEval, EvalCallback):
    """EvalCallback on the same held-out episodes each time."""

    def __init__(self, *args: Any, eval_seed: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eval_seed = eval_seed

    def _on_step(self) -> bool:
        self._reseed_if_due()
        return super()._on_step()


class FixedSeedMaskableEvalCallback(_ReseedBeforeEval, MaskableEvalCallback):
    """MaskableEvalCallback (masked predictions) on the same held-out episodes each time."""

    def __init__(self, *args: Any, eval_seed: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eval_seed = eval_seed

    def _on_step(self) -> bool:
        self._reseed_if_due()
        return super()._on_step()


def make_eval_callback(
    eval_env: VecEnv,
    *,
    maskable: bool,
    eval_seed: int,
    eval_freq: int,
    n_eval_episodes: int,
    out_dir: Path,
    on_new_best: BaseCallback | None = None,
) -> EvalCallback:
    """Periodic evaluation that saves ``best_model.zip`` into ``out_dir``.

    Args:
        eval_env: A one-env VecEnv wrapped like the training env.
        maskable: Use masked predictions (MaskablePPO).
        eval_seed: Seed of the eval env before each evaluation.
        eval_freq: Evaluate every this many calls (env steps / n_envs).
        n_eval_episodes: Episodes per evaluation.
        out_dir: Run folder (``best_model.zip``, ``evaluations.npz``).
        on_new_best: Called when a new best model was saved.
    """
    cls = FixedSeedMaskableEvalCallback if maskable else FixedSeedEvalCallback
    return cls(
        eval_env,
        eval_seed=eval_seed,
        eval_freq=eval_freq,
        n_eval_episodes=n_eval_episodes,
        best_model_save_path=str(out_dir),
        log_path=str(out_dir),
        deterministic=True,
        callback_on_new_best=on_new_best,
        verbose=0,
    )


class SaveVecNormalizeCallback(BaseCallback):
    """Save the VecNormalize statistics next to a newly saved best model."""

    def __init__(self, path: Path) -> None:
        super().__init__(0)
        self.path = path

    def _on_step(self) -> bool:
        vec_normalize = self.model.get_vec_normalize_env()
        if vec_normalize is not None:
            vec_normalize.save(str(self.path))
        return True
