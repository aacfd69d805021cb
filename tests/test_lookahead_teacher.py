"""Believed forks, the lookahead teacher and input-dependent baselines."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import DummyVecEnv

import cluster_envs  # noqa: F401
from agents.grouped_rollouts import InputDependentBaseline, SharedSeedWrapper
from agents.set_policy import SetPolicy
from agents.teacher import LookaheadTeacher, make_teacher
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError
from cluster_envs.sim.fork import fork_believed, play_ahead, settle

MOLDABLE = "cluster_envs/MoldableScheduling-v0"


def _env(num_jobs: int = 12) -> gym.Env:
    return gym.make(MOLDABLE, family="mixed", split="train", observation="scale_free",
                    num_jobs=num_jobs)  # fmt: skip


def _mid_episode(env: gym.Env, steps: int = 6) -> gym.Env:
    obs, info = env.reset(seed=4)
    agent = HeuristicAgent(env.unwrapped.policy("sjf"))
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(agent.act(env, obs, info))
        assert not (term or trunc)
    return env


def test_believed_fork_uses_estimates_and_drops_future_arrivals() -> None:
    env = _mid_episode(_env(num_jobs=40))
    sim = env.unwrapped.sim
    known = [*sim.queue, *sim.active]
    estimates = {j: sim.estimator.estimate(j).total_iterations for j in known}
    true_before = [job.total_iterations for job in sim.jobs]
    assert sim.num_arrived < len(sim.jobs)  # some arrivals are still to come
    fork, _ = fork_believed(sim, None)
    for j in known:
        assert fork.jobs[j].total_iterations == max(estimates[j], 1e-9)
    assert any(estimates[j] != true_before[j] for j in known)  # estimates are not truth
    assert [job.total_iterations for job in sim.jobs] == true_before  # original untouched
    arrived = fork.num_arrived
    play_ahead(fork, env.unwrapped.policy("fifo"), float("inf"))
    assert fork.num_arrived == arrived  # no future job ever arrives in the fork
    assert np.isfinite(fork.finish_s[known]).all()  # the known jobs all finish
    assert sim.num_arrived == arrived and sim.now_s < fork.now_s


def test_single_candidate_lookahead_is_that_heuristic() -> None:
    env = _env()
    plain = rollout(env, HeuristicAgent(env.unwrapped.policy("sjf")), seed=2).metrics
    taught = rollout(env, LookaheadTeacher(("sjf",)), seed=2).metrics
    assert taught["avg_jct_s"] == plain["avg_jct_s"]


def test_lookahead_acts_within_mask_and_picks_among_candidates() -> None:
    env = _env()
    teacher = LookaheadTeacher(("sjf", "max-parallelism", "threshold-eta"))
    obs, info = env.reset(seed=1)
    teacher.reset(env.unwrapped.episode_seed)
    for _ in range(5):
        action = teacher.act(env, obs, info)
        assert info["action_mask"][action]
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    assert sum(teacher.choices.values()) >= 1
    assert set(teacher.choices) <= set(teacher.candidates)


def test_committed_lookahead_looks_ahead_every_commit_decisions() -> None:
    env = _env()
    teacher = LookaheadTeacher(("sjf", "max-parallelism", "threshold-eta"), commit=3)
    rollout(env, teacher, seed=1)
    acts = sum(teacher.choices.values())
    assert acts > 6 and teacher._decision == -(-acts // 3)  # one lookahead in three
    with pytest.raises(ConfigError, match="commit"):
        LookaheadTeacher(("sjf",), commit=0)
    with pytest.raises(ConfigError, match="margin"):
        LookaheadTeacher(("sjf",), margin=1.0)


class _Scripted(LookaheadTeacher):
    """Costs scripted per lookahead decision and candidate (no fork is played)."""

    COSTS = {1: {"sjf": 100.0, "tetris": 120.0},  # sjf chosen
             2: {"sjf": 100.0, "tetris": 98.0},  # tetris 2 % better
             3: {"sjf": 100.0, "tetris": 90.0}}  # tetris 10 % better  # fmt: skip

    def _cost(self, sim, policy, decision, known):  # type: ignore[no-untyped-def]
        return self.COSTS[min(self._decision, 3)][policy.name]


def test_margin_keeps_the_incumbent_unless_a_challenger_is_better_by_the_margin() -> None:
    env = _env()
    picks = {}
    for margin in (0.0, 0.05):
        teacher = _Scripted(("sjf", "tetris"), margin=margin)
        obs, info = env.reset(seed=1)
        teacher.reset(env.unwrapped.episode_seed)
        names = []
        for _ in range(3):
            before = dict(teacher.choices)
            obs, _, term, trunc, info = env.step(teacher.act(env, obs, info))
            names += [n for n in teacher.choices if teacher.choices[n] != before.get(n, 0)]
            assert not (term or trunc)
        picks[margin] = names
    assert picks[0.0] == ["sjf", "tetris", "tetris"]
    assert picks[0.05] == ["sjf", "sjf", "tetris"]


def _believed_cost(sim, decision, continuation) -> float:  # type: ignore[no-untyped-def]
    """Total believed completion time of the jobs known now: ``decision``, then
    ``continuation`` to the end, on a believed fork (written out here, not the teacher's)."""
    known = [*sim.queue, *sim.active]
    fork, policy = fork_believed(sim, continuation)
    fork.apply(decision)
    settle(fork, policy)
    play_ahead(fork, policy, float("inf"))
    return float(np.sum(fork.finish_s[known] - sim.now_s))


def test_multi_continuation_lookahead_keeps_the_first_action_with_the_best_continuation() -> None:
    env = _env(num_jobs=40)
    obs, info = env.reset(seed=4)
    base = env.unwrapped
    first, then = ("sjf", "max-parallelism", "tetris"), ("sjf", "threshold-eta")
    walker = HeuristicAgent(base.policy("sjf"))
    for _ in range(40):  # find a decision where scoring by the best continuation matters
        view = base.sim.view()
        costs: dict[str, list[float]] = {}
        for name in first:
            proposer = base.policy(name)
            proposer.reset(None)
            decision = proposer.decide(view)
            key = repr(base.action_for(decision))
            if key not in costs:
                conts = [base.policy(c) for c in then]
                for c in conts:
                    c.reset(None)
                costs[key] = [_believed_cost(base.sim, decision, c) for c in conts]
        by_best = min(costs, key=lambda k: min(costs[k]))
        by_worst = min(costs, key=lambda k: max(costs[k]))
        if by_best != by_worst:
            break
        obs, _, term, trunc, info = env.step(walker.act(env, obs, info))
        assert not (term or trunc), "no decision where the continuations disagree"
    teacher = LookaheadTeacher(first, continuations=then)
    teacher.reset(None)
    assert repr(teacher.act(env, obs, info)) == by_best
    assert teacher.name == "lookahead(sjf,max-parallelism,tetris;then=sjf,threshold-eta)"


def test_multi_continuation_lookahead_is_checked() -> None:
    with pytest.raises(ConfigError, match="continuations"):
        LookaheadTeacher(("sjf",), continuations=())
    with pytest.raises(ConfigError, match="objective='jct'"):
        LookaheadTeacher(("slaq",), continuations=("slaq",), objective="quality")
    with pytest.raises(ConfigError, match="MoldableScheduling only"):
        make_teacher("lookahead-multi", "cluster_envs/JobPlacement-v0")
    teacher = make_teacher("lookahead-multi:sjf,tetris", MOLDABLE)
    assert teacher.candidates == teacher.continuations == ("sjf", "tetris")


class _Snapshot(BaseCallback):
    """The buffer's advantages and returns as ``train`` will see them."""

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buf = self.model.rollout_buffer
        self.advantages, self.returns = buf.advantages.copy(), buf.returns.copy()


def test_shared_seeds_and_sibling_baseline() -> None:
    envs = [lambda g=g: SharedSeedWrapper(_env(), 7, g) for g in (0, 0, 1, 1)]
    venv = DummyVecEnv(envs)
    first = venv.reset()
    assert np.array_equal(first[0], first[1]) and not np.array_equal(first[0], first[2])
    model = MaskablePPO(SetPolicy, venv, n_steps=16, batch_size=32, n_epochs=1, seed=0,
                        device="cpu", policy_kwargs={"hidden": 8})  # fmt: skip
    baseline, seen = InputDependentBaseline(group_size=2), _Snapshot()
    model.learn(64, callback=CallbackList([baseline, seen]))
    assert baseline.replaced_share[-1] > 0.5
    buf = seen
    # Step 0 of env 0 and env 1: the same workload at the same time, so each one's
    # advantage is its return minus the other's.
    assert np.isclose(buf.advantages[0, 0], buf.returns[0, 0] - buf.returns[0, 1], atol=1e-5)
    assert np.isclose(buf.advantages[0, 1], buf.returns[0, 1] - buf.returns[0, 0], atol=1e-5)
