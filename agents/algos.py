"""The SB3 algorithms ``cluster-envs train`` knows, and loading a saved model by its algo.

Names are the CLI's ``--algo`` values. A saved zip is matched to its algorithm by its
card (:func:`agent_card`: ``<model>.json`` next to it, else the run's ``config.yml``,
next to the zip or one folder up for ``checkpoints/``), else by the zip's own ``data``
record (policy class and algorithm-specific attributes), so ``evaluate`` never needs to
be told what trained a model.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import yaml
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm

from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name

#: ``--algo`` name -> SB3 algorithm class.
ALGOS: dict[str, type[BaseAlgorithm]] = {
    "maskable_ppo": MaskablePPO,
    "ppo": PPO,
    "a2c": A2C,
    "dqn": DQN,
}

#: Algorithms whose ``predict`` takes ``action_masks``.
MASKABLE = frozenset({"maskable_ppo"})

#: Off-policy algorithms (replay buffer; ``train_freq`` as a tuple).
OFF_POLICY = frozenset({"dqn"})

#: Name of the resolved run configuration every run folder holds.
CONFIG_FILE = "config.yml"

#: Modules of policy classes that only MaskablePPO trains (a zip's ``policy_class``).
MASKABLE_POLICY_MODULES = ("sb3_contrib.common.maskable", "agents.set_policy")


def get_algo(name: str) -> type[BaseAlgorithm]:
    """The SB3 class of ``--algo name`` (unknown names get the closest one)."""
    if name not in ALGOS:
        raise unknown_name("algo", name, ALGOS, listed="known")
    return ALGOS[name]


def run_config_for(model_path: Path) -> dict[str, Any] | None:
    """The ``config.yml`` of the run a model zip belongs to, if there is one."""
    for folder in (model_path.parent, model_path.parent.parent):
        path = folder / CONFIG_FILE
        if path.is_file():
            with path.open() as f:
                data = yaml.safe_load(f)
            if isinstance(data, dict):
                return data
    return None


def agent_card(model_path: Path) -> dict[str, Any]:
    """A model zip's card: ``<model>.json`` next to it (shipped and published agents), else
    its run's ``config.yml``; both name ``env_id``, ``env_kwargs`` and ``algo``."""
    card = model_path.with_suffix(".json")
    if card.is_file():
        data = json.loads(card.read_text())
        return data if isinstance(data, dict) else {}
    return run_config_for(model_path) or {}


def _zip_data(model_path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(model_path) as archive:
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{model_path}: not a Stable-Baselines3 model zip ({exc})") from exc


def detect_algo(model_path: str | Path) -> str:
    """The ``--algo`` name that trained ``model_path`` (its card first, then the zip)."""
    path = Path(model_path)
    card = agent_card(path)
    if card.get("algo") in ALGOS:
        return str(card["algo"])
    data = _zip_data(path)
    policy_module = str(data.get("policy_class", {}).get("__module__", ""))
    if policy_module.startswith(MASKABLE_POLICY_MODULES):
        return "maskable_ppo"
    if "exploration_rate" in data or "target_update_interval" in data:
        return "dqn"
    if "clip_range" in data:
        return "ppo"
    if "gae_lambda" in data:
        return "a2c"
    raise ConfigError(f"{path}: cannot tell which algorithm saved this model; pass --algo")


def check_model_path(model_path: str | Path) -> Path:
    """``model_path`` as a Path to an existing zip (``.zip`` may be left out)."""
    path = Path(model_path)
    if not path.is_file() and path.with_suffix(".zip").is_file():
        path = path.with_suffix(".zip")
    if not path.is_file():
        why = ""
        if path.name == "best_model.zip" and (path.parent / "last_model.zip").is_file():
            why = (
                "; the run saved no best model because it never evaluated (trained with "
                "--eval-freq 0): use last_model.zip"
            )
        raise FileNotFoundError(f"model file {str(model_path)!r} does not exist{why}")
    return path


def load_model(
    model_path: str | Path, algo: str | None = None, **kwargs: Any
) -> tuple[BaseAlgorithm, str]:
    """Load a saved model on the CPU; returns (model, algo name)."""
    path = check_model_path(model_path)
    name = algo or detect_algo(path)
    model = get_algo(name).load(path, device="cpu", **kwargs)
    return model, name
