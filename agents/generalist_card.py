"""Ship a generalist (``agents/generalist.py``) as ``agents/pretrained/<EnvName-vN>``.

``python -m agents.generalist_card RUN_DIR --test FILE [--model best_model.zip]
[--wall-s S] [--command CMD] [--evaluate-command CMD]`` copies the run's chosen
checkpoint (without optimizer state) to ``agents/pretrained/<EnvName-vN>.zip`` and
writes its card ``<EnvName-vN>.json``: env id and the observation it plays in, training
command, budget and wall time, the warm start and the validation curve's choice, the
per-family results of the ``evaluate`` file ``--test`` (every test family, each seed's
metric (average JCT; MetisAllocation: quality AUC) of the agent and of every heuristic, the ratio to the env's reference
heuristic with its paired bootstrap interval) and, as the other cards, the test metrics
on the env's default preset (seeds 100-119) next to random masked actions.

:func:`replay` plays the agent again on a card's family and seeds; the test
``tests/test_generalist_placement.py`` checks that the card's numbers come back exactly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents.generalist import _ModelAgent, env_kwargs_of, make_env, play, spec_of, summarize
from agents.policy import PRETRAINED_DIR, RandomMaskedAgent, load_agent
from agents.publish import save_without_optimizer_state, score
from agents.runs import versions
from agents.set_policy import adapt
from cluster_envs.envs.rollout import HeuristicAgent

#: Seeds of the default-preset metrics (as the other cards').
PRESET_SEEDS = tuple(range(100, 120))


def family_results(test_file: Path) -> dict[str, Any]:
    """Per family of an ``evaluate`` file: seeds' JCTs and the ratios of :func:`summarize`."""
    data = json.loads(test_file.read_text())
    summary = summarize(str(test_file))
    metric = spec_of(data["env"]).metric
    unit = "_s" if metric.endswith("_s") else ""
    out: dict[str, Any] = {}
    for fam, res in data["rows"].items():
        s = summary["families"][fam]
        out[fam] = {
            metric: {p: [float(v) for v in vals] for p, vals in res.items()},
            f"agent_mean{unit}": float(np.mean(res["agent"])),
            f"reference_mean{unit}": float(np.mean(res[summary["single"]])),
            "agent_to_reference": s["agent_to_single"],
            "paired_geo_to_reference": s["paired_geo_to_single"],
            "paired_ci95": s["paired_ci95"],
            "best_heuristic": s["best_heuristic"],
            "agent_to_best": s["agent_to_best"],
        }
    return out


def publish(run_dir: Path, test_file: Path, model: str, wall_s: float | None,
            command: str, evaluate_command: str) -> Path:  # fmt: skip
    """Write ``agents/pretrained/<EnvName-vN>.{zip,json}`` (see the module docstring)."""
    record = json.loads((run_dir / "train.json").read_text())
    data = json.loads(test_file.read_text())
    spec = spec_of(record["env_id"])
    if data.get("env") != spec.env_id or data.get("split") != "test" or data.get("quick"):
        raise SystemExit(f"{test_file}: not a full test-split evaluate file of {spec.env_id}")
    name = spec.env_id.split("/", 1)[1]
    args = record["args"]
    agent, algo = load_agent(run_dir / model)
    # The env settings the run trained with (its record; older records: the spec's), e.g.
    # MoldableScheduling's scale_free_hints with --hints, MetisAllocation's action="hints".
    kwargs = dict(record.get("env_kwargs") or env_kwargs_of(spec))
    plain = {k: v for k, v in kwargs.items() if k != "action"}  # heuristics: the env's action
    card = {
        "env_id": spec.env_id,
        "env_kwargs": kwargs,
        "algo": algo,
        "policy": "SetPolicy (agents/set_policy.py), adapted to each cluster's shape",
        "seed": args["seed"],
        "train_command": command,
        "train_wall_s": wall_s,
        "budget": {
            "train_family": args["family"],
            "teacher": record.get("warm_start", {}).get("teacher"),
            "demo_episodes_per_round": args["pretrain_episodes"],
            "dagger_rounds": args["dagger_rounds"],
            "demo_steps": record.get("warm_start", {}).get("steps"),
            "ppo_timesteps": record["timesteps"],
            "train_wall_s_in_run": record["train_wall_s"],
        },
        "selected": _selected(model, record),
        "validation_curve": record["curve"],
        "warm_start": record.get("warm_start"),
        "reference_heuristic": spec.reference,
        "test_families": {
            "command": evaluate_command,
            "split": "test",
            "seeds": data["seeds"],
            "cpu_s": data.get("cpu_s"),
            "families": family_results(test_file),
        },
        "test_seeds": f"{PRESET_SEEDS[0]}..{PRESET_SEEDS[-1]} ({len(PRESET_SEEDS)} episodes, "
        "the default preset)",
        "test": _score(agent, spec.env_id, kwargs),
        "test_reference": _score(HeuristicAgent(spec.reference), spec.env_id, plain),
        "random_masked": _score(RandomMaskedAgent(), spec.env_id, kwargs),
        "versions": versions(),
    }
    PRETRAINED_DIR.mkdir(exist_ok=True)
    target = PRETRAINED_DIR / f"{name}.zip"
    save_without_optimizer_state(run_dir / model, algo, target)
    target.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    return target


def _selected(model: str, record: dict[str, Any]) -> str:
    """How the run's checkpoint ``model`` was chosen (validation splits only)."""
    args = record["args"]
    families = ", ".join(record["curve"][-1]["val_families"]) if record["curve"] else ""
    where = f"validation splits only ({families or args['family']}; seeds 500-507)"
    if len(record["curve"]) <= 1:  # no PPO step: the BC/DAgger policy is the only one
        return f"{model}: the run's only checkpoint (its BC/DAgger policy), scored on {where}"
    return (f"{model}: the checkpoint with the lowest worst-family validation ratio to the "
            f"reference heuristic (then the lowest geometric mean), on {where}")  # fmt: skip


def _score(agent: Any, env_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """:func:`agents.publish.score` on the default preset, the agent fitted to its shapes."""
    fit = getattr(agent, "fit_env", None)
    if fit is not None:
        fit(gym.make(env_id, **kwargs))
    return score(agent, env_id, kwargs, PRESET_SEEDS)


def replay(
    card: dict[str, Any], family: str, seeds: Sequence[int], model_path: Path
) -> list[float]:
    """The agent at ``model_path`` on ``family``'s test split, a card's way: each seed's
    metric (average JCT; MetisAllocation: quality AUC), full episodes."""
    from sb3_contrib import MaskablePPO

    spec = dataclasses.replace(spec_of(card["env_id"]), **card["env_kwargs"])
    model = MaskablePPO.load(model_path, device="cpu")
    env = make_env(family, "test", None, spec)
    return play(env, _ModelAgent(adapt(model, env)), seeds, spec.metric)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agents.generalist_card")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--test", type=Path, required=True, help="agents.generalist evaluate file")
    ap.add_argument("--model", default="best_model.zip")
    ap.add_argument("--wall-s", type=float, default=None, help="training wall time")
    ap.add_argument("--command", default="", help="the one command that trains it")
    ap.add_argument("--evaluate-command", default="", help="the command that wrote --test")
    args = ap.parse_args(argv)
    target = publish(args.run_dir, args.test, args.model, args.wall_s, args.command,
                     args.evaluate_command)  # fmt: skip
    print(target, target.with_suffix(".json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
