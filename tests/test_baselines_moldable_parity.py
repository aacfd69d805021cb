"""Moldable baselines: identical metrics through MoldableScheduling-v0 and the runner.

Every baseline is played through the env (``HeuristicAgent`` + ``rollout``, one start
per env step) and replayed through the no-gym runner (all starts of an instant at once)
on the env's own workload, cluster, simulator settings and seed.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from helpers import make_job

import cluster_envs  # noqa: F401  (registers the env ids)
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import NO_DECISION, Allocate, Decision, JobKind

ENV_ID = "cluster_envs/MoldableScheduling-v0"
DETERMINISTIC = (
    "sjf",
    "max-parallelism",
    "min-parallelism",
    "tetris",
    "easy-backfill",
    "threshold-eta",
    "threshold-queue",
    "best-threshold",
    "best-threshold-pollux",
)
WINDOW = 8
ONE_NODE_TWO_GPUS = {"name": "one", "node_groups": [{"num_nodes": 1, "gpus_per_node": 2}]}


class EpisodeSeededAgent(HeuristicAgent):
    """Seeds the policy with the env's episode seed, as ``run_episode(seed=...)`` does.

    ``rollout`` reseeds an agent with the *env* seed, while the runner seeds the policy
    with the *simulator* seed (the env's ``episode_seed``); a random policy needs the same
    seed on both paths to draw the same numbers.
    """

    def __init__(self, policy: Any, env: gym.Env, seed: int) -> None:
        super().__init__(policy)
        env.reset(seed=seed)
        self.policy_seed = env.unwrapped.episode_seed

    def reset(self, seed: int | None) -> None:
        self.policy.reset(self.policy_seed)


def _both(name: str, env_kwargs: dict[str, Any], seed: int, window: int | None) -> tuple:
    env = gym.make(ENV_ID, **env_kwargs)
    kwargs = {} if window is None else {"window": window}
    agent = (
        EpisodeSeededAgent(make_policy(name, **kwargs), env, seed)
        if name == "random"
        else HeuristicAgent(make_policy(name, **kwargs))
    )
    through_env = rollout(env, agent, seed=seed)
    base = env.unwrapped
    through_runner = run_episode(
        base.workload, make_policy(name, **kwargs), base.cluster, base.sim_config,
        seed=base.episode_seed,
    )  # fmt: skip
    return through_env, through_runner.metrics


@pytest.mark.parametrize("name", [*DETERMINISTIC, "random"])
def test_parity_on_larger_presets(name: str) -> None:
    # The default preset and one Pollux workload: longer episodes, so running jobs' loss
    # curves get fitted (EASY reads them) and queues exceed the window.
    for kwargs in ({"preset": "default", "window": WINDOW}, {"preset": "pollux", "window": 16}):
        through_env, metrics = _both(name, kwargs, 3, kwargs["window"])
        assert through_env.metrics == metrics, kwargs


@pytest.mark.parametrize("name", ["sjf", "tetris", "easy-backfill", "random"])
def test_parity_with_the_whole_queue_when_the_window_holds_it(name: str) -> None:
    # toy has 20 jobs; a 32-slot env window holds the whole queue, so the baselines'
    # default (no window) picks are always in it.
    through_env, metrics = _both(name, {"preset": "toy", "window": 32}, 4, None)
    assert through_env.metrics == metrics


def test_random_is_seeded() -> None:
    env = gym.make(ENV_ID, preset="toy")
    env.reset(seed=0)
    base = env.unwrapped

    def avg_jct(seed: int) -> float:
        result = run_episode(base.workload, make_policy("random"), base.cluster, seed=seed)
        return result.metrics["avg_jct_s"]

    assert avg_jct(11) == avg_jct(11)
    assert len({avg_jct(s) for s in (11, 12, 13)}) == 3


def test_random_draws_nothing_when_nothing_fits() -> None:
    # The runner asks at events where every GPU is busy; the env does not. Drawing there
    # would desynchronise the two paths.
    jobs = [
        make_job(0, 0.0, 100.0, num_gpus=2),
        make_job(1, 0.0, 100.0, kind=JobKind.MOLDABLE, min_gpus=1, max_gpus=2),
    ]
    sim = Simulator(jobs, ONE_NODE_TWO_GPUS)
    while sim.next_event_time() == 0.0:
        sim.step()
    policy = make_policy("random")
    policy.reset(5)
    fresh = policy._rng.bit_generator.state
    first = policy.decide(sim.view())  # both jobs fit: a number is drawn
    assert policy._rng.bit_generator.state != fresh
    sim.apply(Decision((Allocate(0, ((0, 2),)),)))
    drawn = policy._rng.bit_generator.state
    assert policy.decide(sim.view()) == NO_DECISION
    assert policy._rng.bit_generator.state == drawn
    assert first.actions == () or first.actions[0].job_id in (0, 1)
