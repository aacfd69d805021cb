"""Hyper-parameters: zoo-style YAML keyed by env id, resolved and validated.

Each algorithm has one file, ``agents/hyperparams/<algo>.yml``, whose top-level keys are
env ids plus ``default``. An entry mixes *run keys* (:data:`RUN_KEYS`: ``n_envs``,
``policy``, ``policy_kwargs``, ``env_kwargs``, ``normalize``, ``n_timesteps``) with the
algorithm's own constructor arguments (``learning_rate``, ``n_steps``, ...).

Resolution, later wins: the shipped file's ``default`` -> its entry for the env id ->
the user's ``--hyperparams`` (a file or inline YAML; keyed the same way or flat) -> CLI
flags (``--n-envs``, ``--env-kwargs``). ``env_kwargs`` and ``policy_kwargs`` merge key by
key; other keys replace. Every key is checked against the algorithm's signature, so a
typo fails at once with the closest valid name instead of deep inside SB3.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from torch import nn

from agents.algos import get_algo
from agents.slot_policy import CUSTOM_POLICIES
from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name

HYPERPARAMS_DIR = Path(__file__).parent / "hyperparams"

#: Keys handled by the trainer rather than passed to the algorithm's constructor.
RUN_KEYS = ("n_envs", "policy", "policy_kwargs", "env_kwargs", "normalize", "n_timesteps")

#: Keys merged key by key across layers instead of replaced.
MERGED_KEYS = ("env_kwargs", "policy_kwargs")

#: Constructor arguments the trainer sets itself.
RESERVED_ARGS = frozenset(
    {"self", "policy", "env", "tensorboard_log", "verbose", "seed", "device", "_init_setup_model"}
)

#: ``policy_kwargs.activation_fn`` names.
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU,
    "gelu": nn.GELU,
}

#: ``normalize`` mapping keys (VecNormalize arguments).
NORMALIZE_KEYS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon")


@dataclass(frozen=True)
class Hyperparams:
    """The resolved hyper-parameters of one training run.

    Attributes:
        algo: ``--algo`` name.
        env_id: Gymnasium env id.
        env_kwargs: Kwargs of ``gym.make`` (JSON-serialisable).
        n_envs: Parallel training envs (DummyVecEnv).
        policy: SB3 policy alias (``MlpPolicy``).
        policy_kwargs: Policy constructor kwargs (``activation_fn`` as a name).
        normalize: VecNormalize kwargs, or ``None`` for no normalisation.
        n_timesteps: Default budget in env steps when ``--timesteps`` is not given.
        algo_kwargs: Remaining algorithm constructor arguments.
    """

    algo: str
    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    n_envs: int = 1
    policy: str = "MlpPolicy"
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    normalize: dict[str, Any] | None = None
    n_timesteps: int | None = None
    algo_kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``config.yml``."""
        return asdict(self)

    def model_kwargs(self) -> dict[str, Any]:
        """Constructor kwargs of the SB3 algorithm (names turned into objects)."""
        policy_kwargs = dict(self.policy_kwargs)
        if "activation_fn" in policy_kwargs:
            policy_kwargs["activation_fn"] = ACTIVATIONS[policy_kwargs["activation_fn"]]
        kwargs = dict(self.algo_kwargs)
        if isinstance(kwargs.get("train_freq"), list):
            kwargs["train_freq"] = tuple(kwargs["train_freq"])
        policy = CUSTOM_POLICIES.get(self.policy, self.policy)
        return {"policy": policy, "policy_kwargs": policy_kwargs, **kwargs}


def read_yaml(text_or_path: str | Path, what: str = "hyperparams") -> dict[str, Any]:
    """A YAML mapping from a file path or an inline YAML string (``"{n_steps: 64}"``)."""
    path = Path(text_or_path)
    is_file = path.suffix in (".yml", ".yaml") or path.is_file()
    if is_file and not path.is_file():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text() if is_file else str(text_or_path))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what}: invalid YAML ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: expected a YAML mapping, got {type(data).__name__}")
    return data


def _is_keyed(data: Mapping[str, Any]) -> bool:
    return bool(data) and all(k == "default" or "/" in str(k) for k in data)


def _layer(data: Mapping[str, Any], env_id: str) -> list[dict[str, Any]]:
    """The ``default`` and ``env_id`` entries of a keyed file, or a flat mapping as is."""
    if not _is_keyed(data):
        return [dict(data)]
    return [dict(data.get("default") or {}), dict(data.get(env_id) or {})]


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if key in MERGED_KEYS and isinstance(value, Mapping):
            out[key] = {**(out.get(key) or {}), **value}
        else:
            out[key] = value
    return out


def resolve_hyperparams(
    algo: str,
    env_id: str,
    user: str | Path | Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    n_envs: int | None = None,
) -> Hyperparams:
    """Resolve and validate the hyper-parameters of ``algo`` on ``env_id``."""
    cls = get_algo(algo)
    shipped = read_yaml(HYPERPARAMS_DIR / f"{algo}.yml")
    merged: dict[str, Any] = {}
    layers = _layer(shipped, env_id)
    if user is not None:
        layers += _layer(user if isinstance(user, Mapping) else read_yaml(user), env_id)
    if env_kwargs:
        layers.append({"env_kwargs": dict(env_kwargs)})
    if n_envs is not None:
        layers.append({"n_envs": n_envs})
    for layer in layers:
        merged = _merge(merged, layer)
    run = {k: merged.pop(k) for k in RUN_KEYS if k in merged}
    _check_algo_kwargs(cls, algo, merged)
    params = Hyperparams(algo=algo, env_id=env_id, algo_kwargs=merged, **run)
    _check_run_keys(cls, params)
    if isinstance(params.normalize, bool):
        params = replace(params, normalize={} if params.normalize else None)
    return params


def _check_algo_kwargs(cls: type, algo: str, kwargs: Mapping[str, Any]) -> None:
    signature = inspect.signature(cls).parameters  # __init__'s, without self
    valid = [n for n in signature if n not in RESERVED_ARGS] + list(RUN_KEYS)
    for key, value in kwargs.items():
        if key not in signature or key in RESERVED_ARGS:
            raise unknown_name(f"{algo} hyper-parameter", key, valid)
        default = signature[key].default
        if key == "train_freq" and isinstance(value, list):
            if len(value) != 2 or value[1] not in ("step", "episode"):
                raise ConfigError(f"train_freq must be N or [N, 'step'|'episode'], got {value}")
            continue
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ConfigError(f"{algo} hyper-parameter {key} must be true/false, got {value!r}")
        if (
            isinstance(default, int | float)
            and not isinstance(default, bool)
            and (isinstance(value, bool) or not isinstance(value, int | float))
        ):
            raise ConfigError(f"{algo} hyper-parameter {key} must be a number, got {value!r}")


def _check_run_keys(cls: Any, params: Hyperparams) -> None:
    if not isinstance(params.n_envs, int) or params.n_envs < 1:
        raise ConfigError(f"n_envs must be an integer >= 1, got {params.n_envs!r}")
    if params.n_timesteps is not None and (
        not isinstance(params.n_timesteps, int) or params.n_timesteps < 1
    ):
        raise ConfigError(f"n_timesteps must be an integer >= 1, got {params.n_timesteps!r}")
    if not isinstance(params.env_kwargs, dict):
        raise ConfigError(f"env_kwargs must be a mapping, got {params.env_kwargs!r}")
    aliases = dict(getattr(cls, "policy_aliases", {}))
    base = aliases.get("MlpPolicy")
    known = {**aliases, **CUSTOM_POLICIES}
    if params.policy not in known:
        raise unknown_name("policy", params.policy, known, listed=f"{params.algo} offers")
    policy_cls = known[params.policy]
    if params.policy in CUSTOM_POLICIES and not (base and issubclass(policy_cls, base)):
        raise ConfigError(f"policy {params.policy!r} does not work with {params.algo}")
    if not isinstance(params.policy_kwargs, dict):
        raise ConfigError(f"policy_kwargs must be a mapping, got {params.policy_kwargs!r}")
    valid = [
        n
        for c in policy_cls.__mro__
        if "__init__" in vars(c) and c is not object
        for n, a in inspect.signature(vars(c)["__init__"]).parameters.items()
        if n not in ("self", "observation_space", "action_space")
        and a.kind not in (a.VAR_POSITIONAL, a.VAR_KEYWORD)
    ]
    for key in params.policy_kwargs:
        if key not in valid:
            raise unknown_name("policy_kwargs key", key, valid)
    activation = params.policy_kwargs.get("activation_fn")
    if activation is not None and activation not in ACTIVATIONS:
        raise unknown_name("activation_fn", activation, ACTIVATIONS, listed="known")
    norm = params.normalize
    if isinstance(norm, dict):
        for key in norm:
            if key not in NORMALIZE_KEYS:
                raise unknown_name("normalize key", key, NORMALIZE_KEYS)
    elif norm is not None and not isinstance(norm, bool):
        raise ConfigError(f"normalize must be true, false or a mapping, got {norm!r}")
