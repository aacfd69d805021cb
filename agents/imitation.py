"""Warm-start an agent from a heuristic: behaviour cloning before RL (``--pretrain``).

DL2 (Peng et al., 2019) trains its scheduler first by supervised learning on the decisions
of the cluster's existing scheduler and only then by RL, because an RL policy started from
random weights spends most of its budget starving jobs. This module does the same for any
cluster-envs env whose heuristics play through it (``action_for``):

1. :func:`collect_demonstrations` plays a registered heuristic (the *teacher*, configured
   by the env's ``policy(name)``) through the real env on dedicated seeds
   (``seed + DEMO_SEED_OFFSET + k``, disjoint from training, evaluation and benchmark
   seeds) and records observations, the teacher's actions, action masks and discounted
   returns-to-go of the env's own reward.
2. :func:`pretrain` fits the SB3 model to them: actor-critic policies (PPO, A2C,
   MaskablePPO) by maximum likelihood of the teacher's actions plus a value regression
   onto the returns (so the first RL updates see sensible advantages); DQN by a regression
   of ``Q(s, a_teacher)`` onto the returns plus DQfD's large-margin loss, which makes the
   teacher's action greedy (Hester et al., 2018), then its target network is synced.

The RL phase (``model.learn``) then starts from the cloned policy. Everything is seeded.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize
from torch.nn import functional as F  # noqa: N812

from cluster_envs.envs.base import unwrap_cluster_env
from cluster_envs.envs.rollout import HeuristicAgent
from cluster_envs.errors import ConfigError, InfeasibleDecisionError

#: Demonstration episodes use seeds ``seed + DEMO_SEED_OFFSET + k``.
DEMO_SEED_OFFSET = 20_000
#: DQfD margin between the teacher's action and any other (in return units).
DQN_MARGIN = 0.1


@dataclass(frozen=True)
class PretrainSettings:
    """How to warm-start.

    Attributes:
        teacher: Registered heuristic name (``slaq``, ``fifo``, ...).
        episodes: Demonstration episodes.
        epochs: Passes over the demonstrations.
        batch_size: Minibatch size.
        learning_rate: Adam step size of the supervised phase.
        value_coef: Weight of the value (or Q) regression.
        dagger_rounds: DAgger rounds after cloning (Ross et al., 2011): the cloned
            agent plays ``episodes`` more episodes, the teacher labels the states *it*
            reached (so the agent learns to recover from its own mistakes, which plain
            cloning never shows it), and the agent is refitted on all data so far.
        regret_coef: Weight of the cost-sensitive term (actor-critic policies with masks,
            demonstrations with ``regrets``: a lookahead teacher on MetisAllocation's
            options): the policy's expected regret per action entry, the teacher's own
            relative regrets scaled so that the mean of each row's largest is 1. A
            departure then costs what the lookahead says it loses, so a rare costly one
            weighs more than many ties; ``0``: plain cloning.
        max_rows_per_epoch: At most this many rows per epoch, a fresh seeded draw without
            replacement each epoch (``None``: every row); with several families (one pass
            each in turn, or interleaved), per family (``--demo-rows-per-epoch``), so a
            family with long episodes (MetisAllocation's pollux: 60 s slices, 67 % of the
            rows) does not outweigh the others by its row count alone (on the Metis
            clones it changed nothing: ``benchmarks/results/generalist_metis.md``).
    """

    teacher: str
    episodes: int = 50
    epochs: int = 20
    batch_size: int = 256
    learning_rate: float = 1e-3
    value_coef: float = 0.5
    dagger_rounds: int = 0
    regret_coef: float = 0.0
    max_rows_per_epoch: int | None = None

    def __post_init__(self) -> None:
        cap = self.max_rows_per_epoch
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigError(f"pretrain max_rows_per_epoch must be an int >= 1, got {cap!r}")
        if self.dagger_rounds < 0:
            raise ConfigError(f"pretrain dagger_rounds must be >= 0, got {self.dagger_rounds}")
        for name in ("episodes", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"pretrain {name} must be >= 1, got {getattr(self, name)}")
        if not self.learning_rate > 0 or self.value_coef < 0:
            raise ConfigError("pretrain learning_rate must be > 0 and value_coef >= 0")
        if not self.regret_coef >= 0:
            raise ConfigError(f"pretrain regret_coef must be >= 0, got {self.regret_coef}")


@dataclass
class Demonstrations:
    """A teacher's play: one row per env step; ``regrets`` (optional, the masks' layout):
    the teacher's relative regret of every action entry (zeros where it had none)."""

    observations: np.ndarray
    actions: np.ndarray
    masks: np.ndarray | None
    returns: np.ndarray
    episode_metrics: list[dict[str, float]] = field(default_factory=list)
    num_dropped: int = 0
    regrets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.actions)

    def __add__(self, other: Demonstrations) -> Demonstrations:
        masks = None
        if self.masks is not None and other.masks is not None:
            masks = np.concatenate([self.masks, other.masks])
        regrets = None
        if masks is not None and (self.regrets is not None or other.regrets is not None):
            regrets = np.concatenate([_regrets_or_zeros(d) for d in (self, other)])
        return Demonstrations(
            observations=np.concatenate([self.observations, other.observations]),
            actions=np.concatenate([self.actions, other.actions]),
            masks=masks,
            returns=np.concatenate([self.returns, other.returns]),
            episode_metrics=self.episode_metrics + other.episode_metrics,
            num_dropped=self.num_dropped + other.num_dropped,
            regrets=regrets,
        )


def _regrets_or_zeros(demos: Demonstrations) -> np.ndarray:
    if demos.regrets is not None:
        return demos.regrets
    assert demos.masks is not None
    return np.zeros(demos.masks.shape, dtype=np.float32)


def collect_demonstrations(
    env_id: str,
    env_kwargs: dict[str, Any],
    teacher: str,
    episodes: int,
    seed: int,
    gamma: float,
    student: BaseAlgorithm | None = None,
) -> Demonstrations:
    """Record ``teacher``'s actions over ``episodes`` episodes of ``env_id``.

    The teacher plays, unless a ``student`` model is given: then the student's
    deterministic actions drive the env and the teacher only labels the states (DAgger);
    episode metrics and returns are the student's, and a label the env's mask forbids (a
    heuristic's multi-step plan gone stale after the student's own steps) is dropped and
    counted in ``num_dropped``.
    """
    env = gym.make(env_id, **env_kwargs)
    base = unwrap_cluster_env(env)
    if not hasattr(base, "action_for"):
        raise ConfigError(f"{env_id} cannot replay heuristics (no action_for); no --pretrain")
    from agents.teacher import make_teacher  # a lookahead teacher, or None: a heuristic

    agent: Any = make_teacher(teacher, env_id, base) or HeuristicAgent(base.policy(teacher))
    obs_rows: list[np.ndarray] = []
    act_rows: list[np.ndarray] = []
    mask_rows: list[np.ndarray] = []
    regret_rows: list[np.ndarray | None] = []
    returns: list[float] = []
    metrics: list[dict[str, float]] = []
    returns_at: list[int] = []
    dropped = 0
    for k in range(episodes):
        obs, info = env.reset(seed=seed + DEMO_SEED_OFFSET + k)
        agent.reset(base.episode_seed)
        rewards: list[float] = []
        done = bool(info.get("episode_metrics"))
        while not done:
            try:
                action = agent.act(env, obs, info)
            except InfeasibleDecisionError as exc:
                raise ConfigError(
                    f"teacher {teacher!r} cannot be replayed through {env_id} ({exc}); "
                    "pick a heuristic whose decisions the env can express"
                ) from exc
            mask = info.get("action_mask")
            if student is None or mask is None or _allowed(env.action_space, action, mask):
                obs_rows.append(np.asarray(obs, dtype=np.float32))
                act_rows.append(np.asarray(action).reshape(-1))
                returns_at.append(len(rewards))
                if mask is not None:
                    mask_rows.append(np.asarray(mask, dtype=bool))
                regret_rows.append(getattr(agent, "regrets", None))
            else:  # a plan made for the teacher's own earlier steps, stale after the agent's
                dropped += 1
            if student is not None:
                action = _student_action(student, obs, info)
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(float(reward))
            done = terminated or truncated
        acc, ahead = 0.0, []
        for r in reversed(rewards):
            acc = r + gamma * acc
            ahead.append(acc)
        ahead.reverse()
        returns += [ahead[t] for t in returns_at]
        returns_at = []
        metrics.append(dict(info.get("episode_metrics") or base.episode_metrics()))
    env.close()
    if not act_rows:
        raise ConfigError(f"teacher {teacher!r} took no decision in {episodes} episodes")
    masks = np.stack(mask_rows) if len(mask_rows) == len(act_rows) else None
    regrets = None
    if masks is not None and any(r is not None for r in regret_rows):
        regrets = np.zeros(masks.shape, dtype=np.float32)
        for i, row in enumerate(regret_rows):
            if row is not None:
                regrets[i] = row
    return Demonstrations(
        observations=np.stack(obs_rows),
        actions=np.stack(act_rows),
        masks=masks,
        returns=np.asarray(returns, dtype=np.float32),
        episode_metrics=metrics,
        num_dropped=dropped,
        regrets=regrets,
    )


DEMO_CACHE_FORMAT = 2  # 2: with the teacher's regrets


def cached_demonstrations(
    cache: str | Path | None,
    env_id: str,
    env_kwargs: dict[str, Any],
    teacher: str,
    episodes: int,
    seed: int,
    gamma: float,
) -> Demonstrations:
    """:func:`collect_demonstrations` of the teacher's own play, kept in ``cache`` (a folder).

    A lookahead teacher's episode costs minutes, and the same teacher on the same episodes
    gives the same rows (each episode is seeded on its own), so refits with other networks
    or epochs can read them back. One ``.npz`` per episode (so the entries do not depend
    on how the episodes were split among ``--demo-workers``), named by a digest of
    everything its rows depend on that the caller passes (env id, env kwargs, teacher, the
    episode's seed, gamma) and the package version; the file records those inputs and a
    read checks them. A change to the simulator or the teacher's code is not in the key:
    use a new folder after one. DAgger's rows depend on the student: never cached.
    """
    if cache is None:
        return collect_demonstrations(env_id, env_kwargs, teacher, episodes, seed, gamma)
    if Path(cache).exists() and not Path(cache).is_dir():
        raise ConfigError(f"--demo-cache {cache}: not a folder")
    parts = [
        _cached_episode(Path(cache), env_id, env_kwargs, teacher, seed + k, gamma)
        for k in range(episodes)
    ]
    demos = parts[0]
    for more in parts[1:]:
        demos = demos + more
    return demos


def _cached_episode(
    folder: Path, env_id: str, env_kwargs: dict[str, Any], teacher: str, seed: int, gamma: float
) -> Demonstrations:
    from cluster_envs import __version__

    key = json.dumps(
        {
            "format": DEMO_CACHE_FORMAT,
            "version": __version__,
            "env_id": env_id,
            "env_kwargs": env_kwargs,
            "teacher": teacher,
            "episodes": 1,
            "seed": seed,
            "gamma": gamma,
        },
        sort_keys=True,
    )
    path = folder / f"demos-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            if str(data["key"]) != key:
                raise ConfigError(f"{path}: demonstration cache entry for other inputs")
            masks = data["masks"] if bool(data["has_masks"]) else None
            return Demonstrations(
                observations=data["observations"],
                actions=data["actions"],
                masks=masks,
                returns=data["returns"],
                episode_metrics=json.loads(str(data["episode_metrics"])),
                num_dropped=int(data["num_dropped"]),
                regrets=data["regrets"] if bool(data["has_regrets"]) else None,
            )
    demos = collect_demonstrations(env_id, env_kwargs, teacher, 1, seed, gamma)
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npz")
    np.savez_compressed(
        partial,
        key=np.asarray(key),
        observations=demos.observations,
        actions=demos.actions,
        masks=demos.masks if demos.masks is not None else np.zeros(0, dtype=bool),
        has_masks=np.asarray(demos.masks is not None),
        returns=demos.returns,
        episode_metrics=np.asarray(json.dumps(demos.episode_metrics)),
        num_dropped=np.asarray(demos.num_dropped),
        regrets=demos.regrets if demos.regrets is not None else np.zeros(0, dtype=np.float32),
        has_regrets=np.asarray(demos.regrets is not None),
    )
    os.replace(partial, path)  # whole or absent, even with workers writing side by side
    return demos


def _allowed(space: gym.Space, action: Any, mask: np.ndarray) -> bool:
    """Whether ``action`` is allowed by the env's flat ``mask``."""
    mask = np.asarray(mask, dtype=bool)
    if isinstance(space, gym.spaces.MultiDiscrete):
        offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
        return bool(mask[offsets + np.asarray(action).reshape(-1)].all())
    return bool(mask[int(np.asarray(action).reshape(-1)[0])])


class _Fit:
    """One model's demonstrations as tensors, and the loss of a minibatch of them."""

    def __init__(
        self,
        model: BaseAlgorithm,
        demos: Demonstrations,
        value_coef: float,
        regret_coef: float = 0.0,
    ) -> None:
        policy: Any = (
            model.policy
        )  # BasePolicy in SB3's types; DQN's has q_net, PPO's evaluate_actions
        obs = demos.observations
        env = model.get_env()
        if isinstance(env, VecNormalize):
            if env.norm_obs:
                env.obs_rms.update(obs)
                obs = np.asarray(env.normalize_obs(obs))
            if env.norm_reward:  # the critic's targets would be on another scale
                value_coef = 0.0
        self.model, self.demos, self.obs, self.policy = model, demos, obs, policy
        self.value_coef = value_coef
        device = policy.device
        self.obs_t = torch.as_tensor(obs, dtype=torch.float32, device=device)
        self.is_q = hasattr(policy, "q_net")
        act_t = torch.as_tensor(demos.actions, device=device).long()
        if self.is_q or act_t.shape[1] == 1:
            act_t = act_t[:, 0]
        self.act_t = act_t
        self.ret_t = torch.as_tensor(demos.returns, device=device)
        masks = demos.masks
        self.use_masks = (not self.is_q and masks is not None
                          and _takes_masks(policy.evaluate_actions))  # fmt: skip
        self.mask_t = torch.as_tensor(masks, device=device) if self.use_masks else None
        self.regret_coef, self.regret_t, self.entries = regret_coef, None, 1
        if regret_coef > 0 and self.use_masks and demos.regrets is not None:
            peaks = demos.regrets.max(axis=1)
            scale = float(peaks[peaks > 0].mean()) if (peaks > 0).any() else 1.0
            self.regret_t = torch.as_tensor(demos.regrets / scale, dtype=torch.float32,
                                            device=device)  # fmt: skip
            space = model.action_space
            if isinstance(space, gym.spaces.MultiDiscrete):
                self.entries = len(space.nvec)

    def parameters(self) -> Any:
        return self.policy.q_net.parameters() if self.is_q else self.policy.parameters()

    def loss(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(total, imitation, value) losses of the rows ``idx``."""
        if self.is_q:
            imitation, value = _dqn_losses(self.policy, self.obs_t[idx], self.act_t[idx],
                                           self.ret_t[idx])  # fmt: skip
        else:
            kwargs = (
                {"action_masks": self.mask_t[idx].cpu().numpy()} if self.mask_t is not None else {}
            )
            if self.regret_t is None:
                values, log_prob, _ = self.policy.evaluate_actions(
                    self.obs_t[idx], self.act_t[idx], **kwargs
                )
                imitation = -log_prob.mean()
            else:  # plus the expected regret of each entry's choice (regret_coef)
                values, log_prob, probs = _evaluate_with_probs(
                    self.policy, self.obs_t[idx], self.act_t[idx], kwargs["action_masks"]
                )
                regret = (probs * self.regret_t[idx]).sum(dim=1) / self.entries
                imitation = -log_prob.mean() + self.regret_coef * regret.mean()
            value = F.mse_loss(values.flatten(), self.ret_t[idx])
        return imitation + self.value_coef * value, imitation, value

    def finish(self) -> float:
        """Training mode off, DQN's target synced; the teacher agreement."""
        self.policy.set_training_mode(False)
        if self.is_q:
            self.policy.q_net_target.load_state_dict(self.policy.q_net.state_dict())
        return _agreement(self.model, self.obs, self.demos, self.use_masks)


def pretrain(
    model: BaseAlgorithm,
    demos: Demonstrations,
    settings: PretrainSettings,
    seed: int,
) -> dict[str, float]:
    """Fit ``model``'s policy to ``demos`` in place; returns the final losses and
    ``teacher_agreement``, the share of demonstrated action entries (one per step, or one
    per slot of a MultiDiscrete action) where the model's deterministic action is the
    teacher's."""
    fit = _Fit(model, demos, settings.value_coef, settings.regret_coef)
    optimizer = torch.optim.Adam(fit.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    fit.policy.set_training_mode(True)
    losses = {"imitation_loss": float("nan"), "value_loss": float("nan")}
    for _ in range(settings.epochs):
        order = torch.randperm(len(demos), generator=generator)[: settings.max_rows_per_epoch]
        for idx in order.split(settings.batch_size):
            loss, imitation, value = fit.loss(idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses = {"imitation_loss": imitation.item(), "value_loss": value.item()}
    losses["teacher_agreement"] = fit.finish()
    return losses


def pretrain_interleaved(
    models: dict[str, BaseAlgorithm],
    demos: dict[str, Demonstrations],
    settings: PretrainSettings,
    seed: int,
) -> dict[str, dict[str, float]]:
    """Fit one set of weights to several datasets at once (``--demo-fit interleaved``).

    ``models[k]`` are views of *one* policy whose parameters are shared
    (:func:`agents.set_policy.adapt` with ``tie=True``: each view has its own
    observation and action spaces, e.g. one per cluster shape). Every epoch draws each
    dataset's minibatches in a fresh random order and visits all of them in one shuffled
    sequence, with one Adam optimizer over the shared weights for the whole fit: no
    dataset gets the last word, and the optimizer's moments are never reset between
    datasets. Returns each dataset's last losses and teacher agreement.
    """
    if set(models) != set(demos) or not models:
        raise ConfigError(f"pretrain_interleaved needs one model per dataset, got models "
                          f"{sorted(models)} and demonstrations {sorted(demos)}")  # fmt: skip
    names = list(demos)
    fits = {k: _Fit(models[k], demos[k], settings.value_coef, settings.regret_coef)
            for k in names}  # fmt: skip
    first = fits[names[0]]
    shared = {id(p) for p in first.parameters()}
    for k in names[1:]:
        if {id(p) for p in fits[k].parameters()} != shared:
            raise ConfigError(
                f"pretrain_interleaved: model {k!r} does not share its weights "
                f"with {names[0]!r} (build the views with adapt(..., tie=True))"
            )
    optimizer = torch.optim.Adam(first.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    for fit in fits.values():
        fit.policy.set_training_mode(True)
    losses = {k: {"imitation_loss": float("nan"), "value_loss": float("nan")} for k in names}
    for _ in range(settings.epochs):
        batches = [(k, idx) for k in names
                   for idx in torch.randperm(len(demos[k]), generator=generator)
                   [: settings.max_rows_per_epoch].split(settings.batch_size)]  # fmt: skip
        for b in torch.randperm(len(batches), generator=generator).tolist():
            k, idx = batches[b]
            loss, imitation, value = fits[k].loss(idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[k] = {"imitation_loss": imitation.item(), "value_loss": value.item()}
    for k in names:
        losses[k]["teacher_agreement"] = fits[k].finish()
    return losses


def _evaluate_with_probs(
    policy: Any, obs: torch.Tensor, actions: torch.Tensor, masks: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """MaskableActorCriticPolicy.evaluate_actions' values and log-likelihoods, and the
    masked distribution's probabilities, flat in the mask's layout (one forward pass)."""
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        latent_pi = policy.mlp_extractor.forward_actor(features[0])
        latent_vf = policy.mlp_extractor.forward_critic(features[1])
    distribution = policy._get_action_dist_from_latent(latent_pi)
    distribution.apply_masking(masks)
    parts = getattr(distribution, "distributions", None) or [distribution.distribution]
    probs = torch.cat([p.probs for p in parts], dim=1)
    return policy.value_net(latent_vf), distribution.log_prob(actions), probs


def _student_action(model: BaseAlgorithm, obs: np.ndarray, info: dict[str, Any]) -> Any:
    env = model.get_env()
    if isinstance(env, VecNormalize) and env.norm_obs:
        obs = np.asarray(env.normalize_obs(obs))
    kwargs: dict[str, Any] = {}
    if _takes_masks(model.predict) and "action_mask" in info:
        kwargs["action_masks"] = info["action_mask"]
    action, _ = model.predict(obs, deterministic=True, **kwargs)
    return action


def _takes_masks(method: Any) -> bool:
    """Whether ``method`` (MaskablePPO's ``predict`` / ``evaluate_actions``) takes masks."""
    return "action_masks" in inspect.signature(method).parameters


def _dqn_losses(
    policy: Any, obs: torch.Tensor, act: torch.Tensor, ret: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    q = policy.q_net(obs)
    q_teacher = q.gather(1, act[:, None]).squeeze(1)
    margin = torch.full_like(q, DQN_MARGIN)
    margin.scatter_(1, act[:, None], 0.0)
    large_margin = ((q + margin).max(dim=1).values - q_teacher).mean()
    return large_margin, F.mse_loss(q_teacher, ret)


def teacher_agreement(model: BaseAlgorithm, demos: Demonstrations) -> float:
    """The share of ``demos``' action entries where ``model``'s deterministic action (with
    the demonstrations' masks where its policy takes them) is the teacher's: the
    ``teacher_agreement`` of :func:`pretrain`, for weights as they are now (e.g. after
    other datasets' passes changed them)."""
    obs = demos.observations
    env = model.get_env()
    if isinstance(env, VecNormalize) and env.norm_obs:
        obs = np.asarray(env.normalize_obs(obs))
    policy: Any = model.policy
    masks = (not hasattr(policy, "q_net") and demos.masks is not None
             and _takes_masks(policy.evaluate_actions))  # fmt: skip
    policy.set_training_mode(False)
    return _agreement(model, obs, demos, masks)


def _agreement(model: BaseAlgorithm, obs: np.ndarray, demos: Demonstrations, masks: bool) -> float:
    kwargs: dict[str, Any] = {"action_masks": demos.masks} if masks else {}
    predicted, _ = model.policy.predict(obs, deterministic=True, **kwargs)
    predicted = np.asarray(predicted).reshape(len(demos), -1)
    return float(np.mean(predicted == demos.actions.reshape(len(demos), -1)))


def warm_start(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any],
    settings: PretrainSettings,
    seed: int,
) -> dict[str, Any]:
    """Collect the teacher's demonstrations and clone them into ``model``; a record of
    what was done (for the run's files)."""
    gamma = float(getattr(model, "gamma", 0.99))
    n = settings.episodes
    demos = collect_demonstrations(env_id, env_kwargs, settings.teacher, n, seed, gamma)
    rounds = [{"round": 0, "player": settings.teacher, **_summary(demos.episode_metrics)}]
    losses = pretrain(model, demos, settings, seed)
    rounds[0].update(losses)
    for r in range(1, settings.dagger_rounds + 1):
        more = collect_demonstrations(env_id, env_kwargs, settings.teacher, n,
                                      seed + r * n, gamma, student=model)  # fmt: skip
        demos = demos + more
        rounds.append({"round": r, "player": "agent", **_summary(more.episode_metrics),
                       "labels_dropped": more.num_dropped})  # fmt: skip
        losses = pretrain(model, demos, settings, seed + r)
        rounds[-1].update(losses)
    last = seed + DEMO_SEED_OFFSET + (settings.dagger_rounds + 1) * n - 1
    return {
        "teacher": settings.teacher,
        "episodes_per_round": n,
        "dagger_rounds": settings.dagger_rounds,
        "demo_seeds": f"{seed + DEMO_SEED_OFFSET}..{last}",
        "steps": len(demos),
        "epochs": settings.epochs,
        "batch_size": settings.batch_size,
        "learning_rate": settings.learning_rate,
        "value_coef": settings.value_coef,
        "rounds": rounds,
    }


def _summary(metrics: list[dict[str, float]]) -> dict[str, float]:
    """Mean episode metrics of one round (whichever of them the env reports)."""
    out = {}
    for key in ("quality_auc", "time_to_quality_s", "avg_jct_s"):
        values = [m[key] for m in metrics if key in m]
        if values:  # NaN (e.g. some job never reached its quality) counts as NaN
            out[key] = float(np.mean(values))
    return out
