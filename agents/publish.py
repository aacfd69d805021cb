"""Publish a run's best model as the shipped pretrained agent, with its JSON card.

``python -m agents.publish RUN_DIR [--seeds 100-119] [--wall-s S] [--model FILE]`` copies
``RUN_DIR/best_model.zip`` (or ``--model``: ``last_model.zip``, ``pretrained_model.zip``) to ``agents/pretrained/<EnvName-vN>.zip`` and writes
``<EnvName-vN>.json``: env id and kwargs, algorithm, training command, seed, budget,
wall time, and the agent's test metrics next to uniformly random masked actions on
held-out seeds (disjoint from the training seeds 0.. and the eval seeds 10,000..).
Used by ``scripts/train_pretrained.sh``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from agents.algos import CONFIG_FILE, get_algo
from agents.envs import make_env, vecnormalize_path
from agents.evaluate import parse_seeds
from agents.policy import PRETRAINED_DIR, RandomMaskedAgent, load_agent
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ConfigError
from cluster_envs.harness.stats import mean_ci

#: Metrics reported on the card.
CARD_METRICS = (
    "avg_jct_s",
    "p95_jct_s",
    "gpu_utilization",
    "jct_ratio_to_lower_bound",
    "quality_auc",
    "time_to_quality_s",
)


def score(agent: Any, env_id: str, env_kwargs: dict[str, Any], seeds: Sequence[int]) -> dict:
    """Mean and 95% CI half-width of the card metrics over ``seeds``."""
    env = make_env(env_id, env_kwargs)
    rows = [rollout(env, agent, s).metrics for s in seeds]
    env.close()
    out = {}
    for key in (k for k in CARD_METRICS if k in rows[0]):
        ci = mean_ci([r[key] for r in rows])
        out[key] = {"mean": round(ci.mean, 4), "ci95": round(ci.half_width, 4)}
    return out


def save_without_optimizer_state(source: Path, algo: str, target: Path) -> None:
    """Save the model at ``source`` to ``target`` with a fresh optimizer.

    Adam's moment estimates double the size of a saved model and play no part in
    acting; a shipped agent that is trained further starts new moments (as ``--resume``
    from a checkpoint would not).
    """
    model = get_algo(algo).load(source, device="cpu")
    optimizer = model.policy.optimizer
    model.policy.optimizer = type(optimizer)(model.policy.parameters(), **optimizer.defaults)
    model.save(target)


#: What ``--model`` may name, and how the card describes the choice.
SELECTIONS = {
    "best_model.zip": "best_model.zip (best mean eval return on seeds from 10000)",
    "last_model.zip": "last_model.zip (the end of training)",
    "pretrained_model.zip": "pretrained_model.zip (the warm start: cloned from the heuristic "
    "+ DAgger, before RL: chosen when the RL model is worse on the validation seeds 10000+)",
}


def publish(
    run_dir: Path, seeds: Sequence[int], wall_s: float | None, model: str = "best_model.zip"
) -> Path:
    """Copy the run's ``model`` into ``agents/pretrained`` and write its card."""
    if model not in SELECTIONS:
        raise ConfigError(f"--model must be one of {', '.join(SELECTIONS)}, got {model!r}")
    config = yaml.safe_load((run_dir / CONFIG_FILE).read_text())
    env_id, env_kwargs = config["env_id"], config["env_kwargs"]
    name = env_id.split("/", 1)[-1]
    source = run_dir / model
    agent, algo = load_agent(source)
    card = {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "algo": algo,
        "seed": config["seed"],
        "timesteps": config["timesteps"],
        "n_envs": config["n_envs"],
        "train_command": (run_dir / "command.txt").read_text().strip().splitlines()[0],
        "train_wall_s": wall_s,
        "selected": SELECTIONS[model],
        "pretrain": config.get("pretrain"),
        "test_seeds": f"{seeds[0]}..{seeds[-1]} ({len(seeds)} episodes)",
        "test": score(agent, env_id, env_kwargs, seeds),
        "random_masked": score(RandomMaskedAgent(), env_id, env_kwargs, seeds),
        "versions": json.loads((run_dir / "versions.json").read_text()),
    }
    PRETRAINED_DIR.mkdir(exist_ok=True)
    target = PRETRAINED_DIR / f"{name}.zip"
    save_without_optimizer_state(source, algo, target)
    stats = vecnormalize_path(source)
    if stats is not None:
        shutil.copyfile(stats, target.with_name(f"{name}_vecnormalize.pkl"))
    target.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--seeds", default="100-119")
    parser.add_argument("--wall-s", type=float, default=None, help="training wall time")
    parser.add_argument("--model", default="best_model.zip", choices=list(SELECTIONS))
    args = parser.parse_args(argv)
    target = publish(args.run_dir, parse_seeds(args.seeds), args.wall_s, args.model)
    print(target.with_suffix(".json").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
