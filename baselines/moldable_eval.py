"""Evaluate moldable heuristics on the episodes of ``MoldableScheduling-v0``, no gym loop.

:func:`env_episodes` draws each seed's workload exactly as the env does (reset with that
seed), and :func:`evaluate` replays them through the no-gym runner -- which gives the
same metrics as playing the policy through the env (the parity tests check this), only
faster. Used by ``scripts/tune_thresholds.py`` and ``benchmarks/bench_moldable_baselines.py``.

Seeds: ``0..99`` are for training and tuning; ``EVAL_SEED_START`` and above are held
out for evaluation and must never be used to choose anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_envs.config import ClusterConfig, SimConfig
from cluster_envs.errors import ConfigError
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.runner import run_episode
from cluster_envs.workload import Workload

#: First held-out evaluation seed; tuning must use seeds below it.
EVAL_SEED_START = 100
#: The env id the episodes come from.
MOLDABLE_ENV_ID = "cluster_envs/MoldableScheduling-v0"
#: Confidence level of the intervals over seeds.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Episode:
    """One env episode, replayable by the runner.

    Attributes:
        seed: The env reset seed.
        workload: The (snapped) jobs of the episode.
        cluster: The env's cluster.
        sim_config: The env's simulator settings.
        episode_seed: The simulator seed the env derived from ``seed``.
    """

    seed: int
    workload: Workload
    cluster: ClusterConfig
    sim_config: SimConfig
    episode_seed: int


def env_episodes(seeds: Iterable[int], **env_kwargs: Any) -> list[Episode]:
    """The episodes ``MoldableScheduling-v0(**env_kwargs)`` plays for each reset seed."""
    import gymnasium as gym

    import cluster_envs  # noqa: F401  (registers the env ids)
    from cluster_envs.envs.base import unwrap_cluster_env

    env = gym.make(MOLDABLE_ENV_ID, **env_kwargs)
    out = []
    for seed in seeds:
        env.reset(seed=int(seed))
        base = unwrap_cluster_env(env)
        out.append(
            Episode(int(seed), base.workload, base.cluster, base.sim_config, base.episode_seed)
        )
    env.close()
    return out


def check_training_seeds(seeds: Sequence[int]) -> None:
    """Raise a ConfigError if any seed is a held-out evaluation seed."""
    held_out = sorted(s for s in seeds if s >= EVAL_SEED_START)
    if held_out:
        raise ConfigError(
            f"seeds {held_out} are held-out evaluation seeds (>= {EVAL_SEED_START}); "
            "tune on seeds below it"
        )


def evaluate(
    make: Callable[[], SchedulingPolicy], episodes: Sequence[Episode]
) -> list[dict[str, float]]:
    """The runner's metrics of a fresh ``make()`` policy on each episode."""
    return [
        run_episode(ep.workload, make(), ep.cluster, ep.sim_config, seed=ep.episode_seed).metrics
        for ep in episodes
    ]
