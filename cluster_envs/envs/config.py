"""Env kwargs -> validated configs, with named presets.

Every env takes JSON-serialisable kwargs: ``preset`` (a named bundle of defaults), then
overrides of the env's own fields, or ``family`` + ``split`` (a workload family of
:mod:`cluster_envs.workload.families`, resolved by :mod:`cluster_envs.envs.family_source`)
instead of ``preset``; then of the workload source (``workload``, ``trace``,
``num_jobs``, ``load``, ...), ``cluster`` and ``sim`` (a SimConfig mapping). Unknown keys
raise a ConfigError naming the key and the closest valid one; a value of the wrong kind
(``num_jobs=2.5``, ``window="8"``, a NaN) is rejected here, when the env is made.

``horizon_s`` (every env) is an alias of ``sim={"horizon_s": ...}``: the one horizon of
an episode is ``SimConfig.horizon_s``. Giving both with different values is an error.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from cluster_envs.config import SimConfig, from_dict, suggest
from cluster_envs.envs.episodes import WorkloadSource, as_tuple
from cluster_envs.envs.family_source import ENV_OF_CONFIG, FamilySource, family_kwargs
from cluster_envs.errors import ConfigError
from cluster_envs.workload.families import FAMILIES

T = TypeVar("T")


def split_kwargs(
    env_cls: type[T],
    kwargs: Mapping[str, Any],
    presets: Mapping[str, Mapping[str, Any]],
    sim_defaults: Mapping[str, Any] | None = None,
) -> tuple[T, WorkloadSource, SimConfig]:
    """Resolve ``preset`` + overrides into (env config, workload source, sim config)."""
    kwargs = dict(kwargs)
    family, split = kwargs.pop("family", None), kwargs.pop("split", None)
    if family is not None:
        if "preset" in kwargs:
            raise ConfigError("give either family=... or preset=..., not both")
        env = ENV_OF_CONFIG[env_cls.__name__]
        merged = {**family_kwargs(env, family, split or "train"), **kwargs}
    elif split is not None:
        raise ConfigError(f"split={split!r} needs family=NAME (families: {', '.join(FAMILIES)})")
    else:
        preset = kwargs.pop("preset", "default")
        if preset not in presets:
            raise ConfigError(
                f"unknown preset {preset!r}{suggest(preset, presets)}; presets: "
                + ", ".join(presets)
            )
        merged = {**presets[preset], **kwargs}
    env_fields = {f.name for f in dataclasses.fields(env_cls)}  # type: ignore[arg-type]
    source_fields = {f.name for f in dataclasses.fields(WorkloadSource)}
    env_kw: dict[str, Any] = {}
    source_kw: dict[str, Any] = {}
    sim_kw: dict[str, Any] = dict(sim_defaults or {})
    horizon = merged.pop("horizon_s", None)
    for key, value in merged.items():
        if key == "sim":
            if not isinstance(value, Mapping):
                raise ConfigError(f"sim must be a mapping of SimConfig fields, got {value!r}")
            sim_kw.update(value)
        elif key in env_fields:
            env_kw[key] = tuple(value) if isinstance(value, list) else value
        elif key in source_fields:
            source_kw[key] = as_tuple(value) if key == "workload" else value
        else:
            extra = {"sim", "preset", "render_mode", "family", "split", "horizon_s"}
            valid = sorted(env_fields | source_fields | extra)
            raise ConfigError(
                f"unknown {env_cls.__name__} kwarg {key!r}{suggest(key, valid)}; valid: "
                + ", ".join(valid)
            )
    if horizon is not None:
        if sim_kw.get("horizon_s") not in (None, horizon):
            raise ConfigError(
                f"horizon_s={horizon} and sim={{'horizon_s': {sim_kw['horizon_s']}}} disagree; "
                "give the horizon once"
            )
        sim_kw["horizon_s"] = horizon
    check_types(env_cls, env_kw)
    check_types(WorkloadSource, source_kw)
    check_types(SimConfig, sim_kw)
    source = WorkloadSource(**source_kw)
    if family is not None:
        source = FamilySource.wrap(source, family, split or "train", env, kwargs)
    return env_cls(**env_kw), source, from_dict(SimConfig, sim_kw)


def _kind(value: Any, annotation: Any) -> str | None:
    """Why ``value`` cannot be of the (simple) ``annotation``, or None if it can."""
    args = typing.get_args(annotation)
    if type(None) in args:
        if value is None:
            return None
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return "an integer"
        if not (math.isfinite(value) and value == math.floor(value)):
            return "an integer"
    elif annotation is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return "a number"
        if math.isnan(value):
            return "a number (not NaN)"
    elif annotation is bool and not isinstance(value, bool):
        return "true or false"
    elif typing.get_origin(annotation) is tuple and typing.get_args(annotation)[:1] == (int,):
        bad = not isinstance(value, tuple) or any(_kind(v, int) for v in value)
        return "a list of integers" if bad else None
    elif typing.get_origin(annotation) is tuple and typing.get_args(annotation)[:1] == (str,):
        bad = not isinstance(value, tuple) or any(not isinstance(v, str) for v in value)
        return "a list of names" if bad else None
    return None


def check_types(cls: type, kwargs: dict[str, Any]) -> None:
    """Reject (ConfigError) values of the wrong kind for ``cls``'s typed fields."""
    hints = typing.get_type_hints(cls)
    for key, value in kwargs.items():
        want = _kind(value, hints.get(key))
        if want is not None:
            raise ConfigError(f"{cls.__name__}.{key} must be {want}, got {value!r}")
        if hints.get(key) in (int, int | None) and isinstance(value, float):
            kwargs[key] = int(value)  # 8.0 -> 8
