"""Evaluate a trained or shipped agent on given seeds (``cluster-envs evaluate``).

Each seed is one episode played through the env with
:func:`cluster_envs.envs.rollout.rollout` (masked predictions for MaskablePPO). The
summary gives, per metric, the mean and the half-width of its 95% confidence interval
(Student t with n - 1 degrees of freedom; ``nan`` for a single seed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.algos import agent_card, check_model_path
from agents.envs import check_env_id, make_env
from agents.policy import Sb3Agent, load_agent, pretrained_info, pretrained_path
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ConfigError
from cluster_envs.harness.stats import mean_ci
from cluster_envs.seeds import parse_seeds as parse_seeds  # re-exported

#: Metrics shown per seed and summarised (present ones only; quality ones on quality envs).
METRICS = (
    "avg_jct_s",
    "p95_jct_s",
    "avg_queue_s",
    "bounded_slowdown",
    "gpu_utilization",
    "makespan_s",
    "jct_ratio_to_lower_bound",
    "quality_auc",
    "time_to_quality_s",
)
#: Per-episode counters added to the metrics.
COUNTERS = ("episode_return", "num_steps", "num_invalid_actions")


@dataclass(frozen=True)
class ModelSpec:
    """A model to evaluate, with the env it was trained on (if known)."""

    agent: Sb3Agent
    algo: str
    env_id: str | None
    env_kwargs: dict[str, Any]


def resolve_model(spec: str, deterministic: bool = True) -> ModelSpec:
    """``PATH``, ``sb3:PATH`` or ``pretrained:<EnvName-vN>`` -> agent and its training env."""
    prefix, sep, rest = spec.partition(":")
    if sep and prefix == "pretrained":
        agent, algo = load_agent(pretrained_path(rest), deterministic, spec)
        card = pretrained_info(rest)
        return ModelSpec(agent, algo, card.get("env_id"), dict(card.get("env_kwargs") or {}))
    path = rest if sep and prefix == "sb3" else spec
    model_path = check_model_path(path)
    agent, algo = load_agent(model_path, deterministic, spec)
    card = agent_card(model_path)
    return ModelSpec(agent, algo, card.get("env_id"), dict(card.get("env_kwargs") or {}))


def evaluate(
    spec: ModelSpec, env_id: str | None, env_kwargs: dict[str, Any] | None, seeds: Sequence[int]
) -> tuple[str, dict[str, Any], list[dict[str, float]]]:
    """Play one episode per seed; returns (env id, env kwargs used, one row per seed).

    The env id defaults to the one the model was trained on, and so do its kwargs when
    the id matches; ``env_kwargs`` override them key by key. A SetPolicy model is adapted
    to the env's shapes (:meth:`Sb3Agent.fit_env`); any other model must match them.
    """
    if env_id is None and spec.env_id is None:
        raise ConfigError("give --env: the model's training env is not recorded next to it")
    env_id = check_env_id(env_id or spec.env_id)  # type: ignore[arg-type]
    base = spec.env_kwargs if spec.env_id in (None, env_id) else {}
    kwargs = {**base, **(env_kwargs or {})}
    env = make_env(env_id, kwargs)
    spec.agent.fit_env(env)
    rows = []
    try:
        for seed in seeds:
            result = rollout(env, spec.agent, seed)
            row: dict[str, float] = {"seed": seed}
            row.update({m: float(result.metrics[m]) for m in METRICS if m in result.metrics})
            row["episode_return"] = result.episode_return
            row["num_steps"] = result.num_steps
            row["num_invalid_actions"] = result.num_invalid_actions
            rows.append(row)
    finally:
        env.close()
    return env_id, kwargs, rows


def summarise(rows: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per metric: ``mean``, ``ci95`` (half-width) and ``n``."""
    out = {}
    for key in (*METRICS, *COUNTERS):
        values = [r[key] for r in rows if key in r]
        if values:
            ci = mean_ci(values)
            out[key] = {"mean": ci.mean, "ci95": ci.half_width, "n": ci.n}
    return out
