"""Run folders: never overwrite a run by accident; record what reproduces it.

A run folder holds ``config.yml`` (resolved hyper-parameters, env kwargs, seeds),
``command.txt`` (the exact argv, one line per invocation: a resumed run appends),
``versions.json`` (python and library versions), ``seed``, the models
(``best_model.zip``, ``last_model.zip``, ``checkpoints/model_<N>_steps.zip``), the
evaluation log (``evaluations.npz``) and TensorBoard events (``tensorboard/``).
"""

from __future__ import annotations

import json
import platform
import shlex
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from agents.algos import CONFIG_FILE
from cluster_envs.errors import ConfigError

#: Distributions whose versions every run records.
VERSIONED = ("numpy", "torch", "gymnasium", "stable-baselines3", "sb3-contrib", "cluster-envs")


def holds_run(out_dir: Path) -> bool:
    """``out_dir`` already has a run (a config or any model zip)."""
    if not out_dir.is_dir():
        return False
    return (out_dir / CONFIG_FILE).exists() or any(out_dir.rglob("*.zip"))


def prepare_run_dir(out_dir: Path, force: bool, resume_from: Path | None = None) -> None:
    """Create ``out_dir``, refusing to reuse a run folder unless allowed.

    Allowed: ``force``, or resuming from a checkpoint that lies inside ``out_dir`` (the
    run continues where it stopped; its files are updated, its history kept).
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {str(out_dir)!r} exists and is not a folder")
    continuing = resume_from is not None and out_dir.resolve() in resume_from.resolve().parents
    if holds_run(out_dir) and not (force or continuing):
        raise ConfigError(
            f"{str(out_dir)!r} already holds a run (config.yml or model zips); pass --force "
            "to overwrite it, or choose another --out"
        )
    out_dir.mkdir(parents=True, exist_ok=True)


def versions() -> dict[str, str]:
    """Python, platform and library versions."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def write_run_files(
    out_dir: Path, config: dict[str, Any], argv: Sequence[str], seed: int, append: bool
) -> None:
    """Write ``config.yml``, ``command.txt``, ``versions.json`` and ``seed``."""
    with (out_dir / CONFIG_FILE).open("w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    line = shlex.join(["cluster-envs", *argv]) + "\n"
    with (out_dir / "command.txt").open("a" if append else "w") as f:
        f.write(line)
    (out_dir / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
    (out_dir / "seed").write_text(f"{seed}\n")
