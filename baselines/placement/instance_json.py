"""Placement instances as JSON: the file format and a reader that names every bad key.

JSON file format (``cluster-envs place --instance FILE``; every key is checked, unknown
keys are rejected with the closest valid name)::

    {
      "name": "my-instance",                       # optional
      "cluster": "hetero-small",                   # preset name or a ClusterConfig mapping:
                                                   # {"name": ..., "node_groups": [{"num_nodes": 2,
                                                   #  "gpus_per_node": 4, "gpu_type": "A100"}],
                                                   #  "inter_node_gbps": 25.0}
      "node_interference": 0.1, "link_contention": true,        # optional (SimConfig)
      "observed_fraction": 0.2, "loss_noise_std": 0.03, "seed": 0,  # optional
      "existing": [{"model": "cifar10", "batch_size": 256,
                    "placement": [[0, 2]], "remaining_iterations": 5000}],
      "batch": [{"model": "bert", "num_gpus": 2,
                 "batch_size": 24,                 # optional: the model's default
                 "total_iterations": 8000,         # optional: the model's full run
                 "estimated_iterations": 7500,     # optional: else fitted (seeded)
                 "name": "bert-a"}]                # optional
    }
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.placement.convergence import estimate_iterations
from baselines.placement.problem import (
    DEFAULT_LOSS_NOISE_STD,
    DEFAULT_OBSERVED_FRACTION,
    BatchJob,
    ExistingJob,
    PlacementInstance,
)
from cluster_envs.config import (
    get_cluster,
    suggest,
)
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.types import Placement, make_placement

_TOP_KEYS = (
    "name",
    "cluster",
    "node_interference",
    "link_contention",
    "observed_fraction",
    "loss_noise_std",
    "seed",
    "existing",
    "batch",
)
_BATCH_KEYS = (
    "name",
    "model",
    "num_gpus",
    "batch_size",
    "total_iterations",
    "estimated_iterations",
)
_EXISTING_KEYS = ("name", "model", "batch_size", "placement", "remaining_iterations")


def _keys(where: str, data: Any, valid: Sequence[str], required: Sequence[str]) -> None:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected an object, got {type(data).__name__}")
    for key in data:
        if key not in valid:
            raise ConfigError(
                f"{where}: unknown key {key!r}{suggest(str(key), list(valid))}; "
                f"valid keys: {', '.join(valid)}"
            )
    for key in required:
        if key not in data:
            raise ConfigError(f"{where}: missing required key {key!r}")


def _number(where: str, value: Any, *, positive: bool = True, integer: bool = False) -> Any:
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{where}: expected {kind}, got {value!r}")
    if not np.isfinite(value) or (positive and not value > 0):
        raise ConfigError(f"{where}: must be finite and > 0, got {value!r}")
    return value


def _model(where: str, name: Any) -> str:
    if not isinstance(name, str) or name not in zoo.ZOO_MODELS:
        raise ConfigError(
            f"{where}: unknown zoo model {name!r}{suggest(str(name), zoo.ZOO_MODELS)}; "
            f"models: {', '.join(zoo.ZOO_MODELS)}"
        )
    return name


def _placement(where: str, data: Any) -> Placement:
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{where}: expected a non-empty list of [node, gpus] pairs")
    pairs = []
    for i, pair in enumerate(data):
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise ConfigError(f"{where}[{i}]: expected [node, gpus], got {pair!r}")
        node = _number(f"{where}[{i}] node", pair[0], positive=False, integer=True)
        gpus = _number(f"{where}[{i}] gpus", pair[1], integer=True)
        if node < 0:
            raise ConfigError(f"{where}[{i}]: node must be >= 0, got {node}")
        pairs.append((node, gpus))
    return make_placement(pairs)


def instance_from_dict(data: Mapping[str, Any], source: str = "instance") -> PlacementInstance:
    """Build and validate an instance from plain data (the JSON format above).

    Args:
        data: The parsed JSON object.
        source: Prefix of error messages (e.g. the file name).

    Raises:
        ConfigError: naming the offending key, e.g. ``"f.json: batch[1].model: unknown
            zoo model 'bret' (did you mean 'bert'?)"``.
    """
    _keys(source, data, _TOP_KEYS, ("cluster", "batch"))
    try:
        cluster = get_cluster(data["cluster"])
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{source}: cluster: {exc}") from None
    options: dict[str, float] = {}
    for key in ("node_interference", "loss_noise_std"):
        if key in data:
            options[key] = float(_number(f"{source}: {key}", data[key], positive=False))
            if options[key] < 0:
                raise ConfigError(f"{source}: {key} must be >= 0, got {data[key]!r}")
    fraction = float(
        _number(
            f"{source}: observed_fraction", data.get("observed_fraction", DEFAULT_OBSERVED_FRACTION)
        )
    )
    if fraction > 1:
        raise ConfigError(f"{source}: observed_fraction must be in (0, 1], got {fraction}")
    seed = int(_number(f"{source}: seed", data.get("seed", 0), positive=False, integer=True))
    link = data.get("link_contention", True)
    if not isinstance(link, bool):
        raise ConfigError(f"{source}: link_contention must be true or false, got {link!r}")
    noise = options.get("loss_noise_std", DEFAULT_LOSS_NOISE_STD)
    existing_data = data.get("existing", [])
    if not isinstance(existing_data, list):
        raise ConfigError(f"{source}: existing must be a list")
    existing = []
    for i, raw in enumerate(existing_data):
        where = f"{source}: existing[{i}]"
        _keys(where, raw, _EXISTING_KEYS, ("model", "placement", "remaining_iterations"))
        model = _model(f"{where}.model", raw["model"])
        existing.append(
            ExistingJob(
                name=str(raw.get("name", f"existing-{i}")),
                model=model,
                batch_size=int(
                    _number(
                        f"{where}.batch_size",
                        raw.get("batch_size", zoo.get_model(model).default_batch_size),
                        integer=True,
                    )
                ),
                placement=_placement(f"{where}.placement", raw["placement"]),
                remaining_iterations=float(
                    _number(f"{where}.remaining_iterations", raw["remaining_iterations"])
                ),
            )
        )
    batch_data = data["batch"]
    if not isinstance(batch_data, list) or not batch_data:
        raise ConfigError(f"{source}: batch must be a non-empty list of jobs")
    batch = []
    for i, raw in enumerate(batch_data):
        where = f"{source}: batch[{i}]"
        _keys(where, raw, _BATCH_KEYS, ("model", "num_gpus"))
        model = _model(f"{where}.model", raw["model"])
        size = int(
            _number(
                f"{where}.batch_size",
                raw.get("batch_size", zoo.get_model(model).default_batch_size),
                integer=True,
            )
        )
        total = float(
            _number(
                f"{where}.total_iterations",
                raw.get("total_iterations", zoo.iterations_to_complete(model, size)),
            )
        )
        job_rng = np.random.default_rng([seed, 2, i])
        if "estimated_iterations" in raw:
            estimate = float(_number(f"{where}.estimated_iterations", raw["estimated_iterations"]))
        else:
            estimate = estimate_iterations(model, size, total, fraction, noise, job_rng)
        batch.append(
            BatchJob(
                name=str(raw.get("name", f"{model}-{i}")),
                model=model,
                num_gpus=int(_number(f"{where}.num_gpus", raw["num_gpus"], integer=True)),
                batch_size=size,
                total_iterations=total,
                estimated_iterations=estimate,
            )
        )
    try:
        return PlacementInstance(
            name=str(data.get("name", Path(source).stem)),
            cluster=cluster,
            existing=tuple(existing),
            batch=tuple(batch),
            link_contention=link,
            observed_fraction=fraction,
            seed=seed,
            **options,
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def load_instance(path: str | Path) -> PlacementInstance:
    """Read and validate an instance JSON file (errors start with the file name)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"instance file {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    return instance_from_dict(data, source=str(path))
