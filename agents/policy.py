"""SB3 models as env agents, and the agent loaders ``sb3:`` and ``pretrained:``.

``make_agent("sb3:runs/x/best_model.zip")`` and
``make_agent("pretrained:MoldableScheduling-v0")`` (:mod:`cluster_envs.policies.trained`,
which finds these loaders through this package's ``cluster_envs.agent_loaders`` entry
points) return an :class:`Sb3Agent`: an *env agent* with ``act(env, obs, info) ->
action``, played through a Gymnasium env with :func:`cluster_envs.envs.rollout.rollout`.
SB3 agents act on observations, so they run through envs only; an Sb3Agent is not a
``SchedulingPolicy`` (it has no ``decide``), and ``make_policy`` / the no-gym runner
reject it with a ConfigError that says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from agents.algos import MASKABLE, agent_card, check_model_path, load_model
from agents.envs import vecnormalize_path
from agents.set_policy import SetPolicy, adapt
from cluster_envs.envs.base import unwrap_cluster_env
from cluster_envs.envs.registration import short_env_id
from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name

PRETRAINED_DIR = Path(__file__).parent / "pretrained"


class Sb3Agent:
    """A trained SB3 model choosing env actions (masked for MaskablePPO).

    Args:
        model: A loaded SB3 model.
        deterministic: Take the most likely action (else sample; seeded by ``reset``).
        name: Display name.
        maskable: Pass the env's action mask to ``predict`` (default: MaskablePPO only).
        obs_normalizer: VecNormalize statistics the model was trained with, if any.
        observation: The env's ``observation`` setting the model was trained with (from
            its card); None: the env's default.
        action: The env's ``action`` setting the model was trained with (from its card:
            MetisAllocation's ``"hints"``); None: the env's default.
        hint_policies: MetisAllocation's ``hint_policies`` the model was trained with
            (from its card); None: the env's default.
        observe_slice: MetisAllocation's ``observe_slice`` the model was trained with
            (from its card): its observation holds the slice length.
    """

    def __init__(
        self,
        model: BaseAlgorithm,
        deterministic: bool = True,
        name: str = "sb3",
        maskable: bool | None = None,
        obs_normalizer: VecNormalize | None = None,
        observation: str | None = None,
        action: str | None = None,
        hint_policies: tuple[str, ...] | None = None,
        observe_slice: bool = False,
    ) -> None:
        #: The model as trained; :meth:`fit_env` may rebuild ``model`` from it.
        self.trained = model
        self.model = model
        self.observation = observation
        self.action = action
        self.hint_policies = hint_policies
        self.observe_slice = observe_slice
        self.deterministic = deterministic
        self.name = name
        #: The model zip this agent was loaded from (set by :func:`load_agent`).
        self.path: Path | None = None
        if maskable is None:
            maskable = isinstance(model, MaskablePPO)
        self.maskable = maskable
        self.obs_normalizer = obs_normalizer

    def reset(self, seed: int | None = None) -> None:
        """Seed the action sampling (matters only when not deterministic)."""
        if seed is not None:
            torch.manual_seed(seed)

    def fit_env(self, env: gym.Env) -> None:
        """Act in ``env`` from now on, or raise a ConfigError saying why the model cannot.

        A SetPolicy model is rebuilt for ``env``'s spaces with the same weights
        (:func:`agents.set_policy.adapt`; a ConfigError naming both shapes if its weights
        cannot serve them); any other model's spaces must equal the env's.
        """
        if isinstance(self.trained.policy, SetPolicy):
            shape = self.trained.observation_space.shape
            if self.obs_normalizer is not None and shape != env.observation_space.shape:
                raise ConfigError(
                    f"{self.name}: its observation statistics (VecNormalize) fit only "
                    f"observation {shape}, the env gives {env.observation_space.shape}"
                )
            self.model = adapt(self.trained, env)
            return
        for what in ("observation_space", "action_space"):
            ours, theirs = getattr(self.trained, what), getattr(env, what)
            if ours != theirs:
                raise ConfigError(
                    f"{self.name}: the model's {what} {ours} does not match the env's "
                    f"{theirs}; evaluate with the env kwargs it was trained with"
                )

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        """The model's action for ``obs`` (within ``env``'s mask if maskable)."""
        if self.obs_normalizer is not None:
            obs = np.asarray(self.obs_normalizer.normalize_obs(obs))
        if self.maskable:
            mask = info.get("action_mask")
            if mask is None:
                mask = unwrap_cluster_env(env).action_masks()
            action, _ = self.model.predict(  # type: ignore[call-arg]
                obs, deterministic=self.deterministic, action_masks=mask
            )
        else:
            action, _ = self.model.predict(obs, deterministic=self.deterministic)
        if isinstance(env.action_space, gym.spaces.MultiDiscrete):
            return np.asarray(action, dtype=np.int64)
        return int(action)


class RandomMaskedAgent:
    """Uniformly random among the feasible actions (the floor a trained agent must beat).

    Args:
        seed: Seed of the action draws; ``reset(seed)`` reseeds per episode.
    """

    def __init__(self, seed: int = 0) -> None:
        self.name = "random-masked"
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the draws (same episode seed -> same actions)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        """A uniformly random feasible action (per dimension for MultiDiscrete masks)."""
        mask = info.get("action_mask")
        if mask is None:
            mask = unwrap_cluster_env(env).action_masks()
        space = env.action_space
        if isinstance(space, gym.spaces.MultiDiscrete):
            splits = np.split(np.asarray(mask, dtype=bool), np.cumsum(space.nvec)[:-1])
            return np.array([self.rng.choice(np.flatnonzero(m)) for m in splits], dtype=np.int64)
        return int(self.rng.choice(np.flatnonzero(mask)))


def card_observation(card: dict[str, Any], key: str = "observation") -> str | None:
    """The ``observation`` (or ``key``) env kwarg a card's agent was trained with (None:
    not set)."""
    value = (card.get("env_kwargs") or {}).get(key)
    return None if value is None else str(value)


def card_hint_policies(card: dict[str, Any]) -> tuple[str, ...] | None:
    """MetisAllocation's ``hint_policies`` a card's agent was trained with (None: not set,
    the env's default)."""
    value = (card.get("env_kwargs") or {}).get("hint_policies")
    return None if value is None else tuple(str(v) for v in value)


def load_agent(
    path: str | Path,
    deterministic: bool = True,
    name: str | None = None,
    env: gym.Env | None = None,
) -> tuple[Sb3Agent, str]:
    """An Sb3Agent for the model zip at ``path``; returns (agent, algo name).

    The agent takes its observation setting from the model's card
    (:func:`agents.algos.agent_card`). Given ``env``, it is fitted to it
    (:meth:`Sb3Agent.fit_env`: a SetPolicy model is adapted to other shapes, any other
    model with other spaces raises a ConfigError).
    """
    model_path = check_model_path(path)
    model, algo = load_model(model_path)
    stats = vecnormalize_path(model_path)
    normalizer = None
    if stats is not None:
        # A spaces-only stand-in for the VecEnv that load() wants (it reads only the spaces).
        normalizer = VecNormalize.load(str(stats), _PlaceholderVecEnv(model))  # type: ignore[arg-type]
        normalizer.training = False
    agent = Sb3Agent(
        model,
        deterministic=deterministic,
        name=name or f"sb3:{path}",
        maskable=algo in MASKABLE,
        obs_normalizer=normalizer,
        observation=card_observation(card := agent_card(model_path)),
        action=card_observation(card, "action"),
        hint_policies=card_hint_policies(card),
        observe_slice=bool((card.get("env_kwargs") or {}).get("observe_slice", False)),
    )
    agent.path = Path(path)
    if env is not None:
        agent.fit_env(env)
    return agent, algo


def sb3_agent(path: str, deterministic: bool = True) -> Sb3Agent:
    """Registry factory of ``sb3:PATH``."""
    return load_agent(path, deterministic)[0]


def pretrained_names() -> list[str]:
    """Env names (``MoldableScheduling-v0``) that have a shipped pretrained agent."""
    return sorted(p.stem for p in PRETRAINED_DIR.glob("*.zip"))


def pretrained_path(env_name: str) -> Path:
    """The shipped model zip for ``env_name`` (a ``cluster_envs/`` namespace is allowed)."""
    name = short_env_id(env_name)
    names = pretrained_names()
    if name not in names:
        raise unknown_name("pretrained agent", env_name, names, listed="shipped")
    return PRETRAINED_DIR / f"{name}.zip"


def pretrained_info(env_name: str) -> dict[str, Any]:
    """The JSON card shipped with a pretrained agent (env id, kwargs, training, scores)."""
    path = pretrained_path(env_name).with_suffix(".json")
    return json.loads(path.read_text()) if path.is_file() else {}


def pretrained_agent(env_name: str, deterministic: bool = True) -> Sb3Agent:
    """Registry factory of ``pretrained:<EnvName-vN>``."""
    return load_agent(pretrained_path(env_name), deterministic, f"pretrained:{env_name}")[0]


class _PlaceholderVecEnv:
    """Spaces-only stand-in so VecNormalize statistics load without building an env."""

    def __init__(self, model: BaseAlgorithm) -> None:
        self.observation_space = model.observation_space
        self.action_space = model.action_space
        self.num_envs = 1
        self.render_mode = None
