"""The generalization suite: every env x every family's test split x baselines and agents.

* ``SUITES["generalization"]`` (:mod:`cluster_envs.harness.suites`) builds the grid
  from the family registry (``--quick``: 12 jobs per episode instead of the family's
  own count; ``--no-agents``: heuristics only).
* Agents play every family with the observation setting of their card (e.g. scale-free
  observations); :func:`split_incompatible` keeps out of the grid the shipped agents that
  cannot run on a family's cluster shape (their observation or action space differs and
  their policy is not a set policy that adapts to it) and gives them an honest row each
  (``status: incompatible``, what they were trained for).
* :func:`analyze` scores every run by its **ratio to the best heuristic for that family
  in hindsight** (the heuristic with the best mean on it): ``avg_jct_s / best`` (JCT
  envs) or ``best / quality_auc`` (MetisAllocation), so 1.0 is the best heuristic and
  larger is worse. Per family: mean ratio ± Student t; across families: the geometric
  mean and the worst family, the interquartile mean with a stratified bootstrap
  interval, the probability of improving on the best single heuristic, and the
  performance profile (:mod:`cluster_envs.harness.rl_stats`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.harness import rl_stats
from cluster_envs.harness.stats import group_rows, mean_ci

#: Env id -> short name in the family registry, and its key metric.
ENV_SHORT = {
    "cluster_envs/MoldableScheduling-v0": "moldable",
    "cluster_envs/MetisAllocation-v0": "metis",
    "cluster_envs/JobPlacement-v0": "placement",
}
#: Jobs per episode of ``--quick`` (the full run uses each family's own count).
QUICK_NUM_JOBS = 12
#: Seeds of the suite when ``--seeds`` is not given (>= 10 per family).
DEFAULT_SEEDS = "100-109"
#: Ratios at which the performance profile is tabulated.
PROFILE_TAUS = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0)


def key_metric(env_id: str) -> str:
    """The metric ranked on ``env_id``: quality AUC on Metis, else average JCT."""
    return "quality_auc" if "Metis" in env_id else "avg_jct_s"


def ratio(value: float, best: float, metric: str) -> float:
    """Ratio to the best heuristic, >= 1 is worse (see the module docstring)."""
    if metric == "quality_auc":
        return best / value if value > 0 else math.inf
    return value / best


def split_incompatible(cells: Sequence[Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(cells to run, rows of agents that cannot run on the cell's env shape)``.

    Each agent is judged on the env built with its own observation setting, as its cells
    run: a set-policy agent that adapts to the family's shapes runs there.
    """
    import gymnasium as gym

    from cluster_envs.policies.trained import agent_env_kwargs, make_agent

    keep: list[Any] = []
    rows: list[dict[str, Any]] = []
    verdict: dict[tuple[str, str, str], str | None] = {}
    for cell in cells:
        if not cell.policy.startswith("pretrained:"):
            keep.append(cell)
            continue
        key = (cell.env_id, cell.workload, cell.policy)
        if key not in verdict:
            agent: Any = make_agent(cell.policy)  # pretrained: agents carry their SB3 model
            env = gym.make(cell.env_id, **agent_env_kwargs(agent, cell.env_kwargs))
            try:
                agent.fit_env(env)
                verdict[key] = None
            except ConfigError:
                verdict[key] = _trained_for(agent, env)
        if verdict[key] is None:
            keep.append(cell)
        else:
            rows.append(
                {"env": cell.env_id, "workload": cell.workload, "policy": cell.policy,
                 "seed": cell.seed, "status": "incompatible", "error": verdict[key],
                 "metrics": {}}
            )  # fmt: skip
    return keep, rows


def _trained_for(agent: Any, env: Any) -> str:
    """Why ``agent`` cannot play ``env``, naming what it was trained for (from its card)."""
    model = agent.model
    path = getattr(agent, "path", None)
    meta_path = Path(path).with_suffix(".json") if path is not None else Path("/nonexistent")
    trained = json.loads(meta_path.read_text()).get("env_kwargs", {}) if meta_path.exists() else {}
    where = json.dumps(trained) if trained else "the env's default preset"
    return (
        f"incompatible: trained for {where} (observation "
        f"{model.observation_space.shape}, {model.action_space}); this family gives "
        f"observation {env.observation_space.shape}, {env.action_space}"
    )


def _scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per (env, family): best heuristic, per-policy ratio lists; plus incompatible notes."""
    out: dict[str, Any] = {}
    ok = [r for r in rows if r.get("status") == "ok"]
    for (env, family), cell in group_rows(ok, ("env", "workload")).items():
        metric = key_metric(env)
        by_policy = group_rows(cell, ("policy",))
        means = {
            p: float(np.mean([r["metrics"][metric] for r in prs]))
            for (p,), prs in by_policy.items()
        }
        heuristics = {p: m for p, m in means.items() if ":" not in p}
        pick = max if metric == "quality_auc" else min
        best = pick(heuristics, key=heuristics.__getitem__)
        ratios = {
            p: {r["seed"]: ratio(r["metrics"][metric], heuristics[best], metric) for r in prs}
            for (p,), prs in by_policy.items()
        }
        out[f"{env}|{family}"] = {
            "env": env, "family": family, "metric": metric, "best_heuristic": best,
            "best_mean": heuristics[best], "means": means, "ratios": ratios,
        }  # fmt: skip
    return out


def _matrix(tasks: list[dict], policy: str, seeds: list[int]) -> np.ndarray:
    return np.array(
        [[t["ratios"].get(policy, {}).get(s, np.nan) for t in tasks] for s in seeds], dtype=float
    )


def analyze(rows: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Every statistic of the module docstring, as one JSON-able document."""
    tasks_by_env: dict[str, list[dict]] = {}
    for task in _scores(rows).values():
        tasks_by_env.setdefault(task["env"], []).append(task)
    incompatible = {
        (r["env"], r["workload"], r["policy"]): r["error"]
        for r in rows
        if r.get("status") == "incompatible"
    }
    seeds = list(seeds)
    report: dict[str, Any] = {"envs": {}}
    for env, tasks in tasks_by_env.items():
        policies = list(dict.fromkeys(p for t in tasks for p in t["ratios"]))
        per_family = []
        for t in tasks:
            entry = {"family": t["family"], "best_heuristic": t["best_heuristic"],
                     "best_mean": t["best_mean"], "metric": t["metric"], "ratios": {}}  # fmt: skip
            for p in policies:
                vals = list(t["ratios"].get(p, {}).values())
                if vals:
                    ci = mean_ci(vals)
                    entry["ratios"][p] = {"mean": ci.mean, "ci95": ci.half_width, "n": ci.n}
            per_family.append(entry)
        single = _best_single(tasks, policies)
        overall = {}
        for p in policies:
            m = _matrix(tasks, p, seeds)
            fam_means = np.nanmean(m, axis=0)
            point, low, high = rl_stats.stratified_bootstrap_ci(m, rl_stats.iqm)
            ref = _matrix(tasks, single, seeds) if single else m
            overall[p] = {
                "geomean": float(np.exp(np.nanmean(np.log(fam_means)))),
                "worst": float(np.nanmax(fam_means)),
                "worst_family": tasks[int(np.nanargmax(fam_means))]["family"],
                "iqm": point, "iqm_ci95": [low, high],
                "prob_improvement_vs_best_single": rl_stats.probability_of_improvement(m, ref),
                "profile": dict(zip(map(str, PROFILE_TAUS),
                                    rl_stats.performance_profile(m, np.array(PROFILE_TAUS)).tolist(),
                                    strict=True)),
                "families": int(np.sum(~np.isnan(fam_means))),
            }  # fmt: skip
        notes = {f"{w}: {p}": e for (e_, w, p), e in incompatible.items() if e_ == env}
        report["envs"][env] = {
            "families": per_family,
            "overall": overall,
            "best_single_heuristic": single,
            "room_geomean": overall[single]["geomean"] if single else float("nan"),
            "incompatible": notes,
        }
    return report


def _best_single(tasks: list[dict], policies: list[str]) -> str | None:
    """The heuristic with the lowest geometric-mean ratio across the env's families."""
    best, best_g = None, math.inf
    for p in policies:
        if ":" in p:
            continue
        means = [np.mean(list(t["ratios"][p].values())) for t in tasks if p in t["ratios"]]
        if len(means) == len(tasks):
            g = float(np.exp(np.mean(np.log(means))))
            if g < best_g:
                best, best_g = p, g
    return best
