"""Sampled future arrivals in believed forks (issue 13): deterministic, never the truth."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from agents.teacher import LookaheadTeacher, make_teacher
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError
from cluster_envs.sim.fork import fork_believed, play_ahead
from cluster_envs.sim.sampled import add_sampled_arrivals
from cluster_envs.types import JobState

PLACEMENT = "cluster_envs/JobPlacement-v0"


def _mid_episode(steps: int = 10) -> Any:
    env = gym.make(PLACEMENT, family="synthetic-16", split="train")
    obs, info = env.reset(seed=3)
    agent = HeuristicAgent("fifo")
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(agent.act(env, obs, info))
        assert not (term or trunc)
    sim = env.unwrapped.sim
    assert 0 < sim.num_arrived < len(sim.jobs) and sim.now_s > 0
    return env, sim


def _future(sim: Any) -> np.ndarray:
    return np.flatnonzero(sim.state == int(JobState.PENDING))


def _sampled_fork(sim: Any, k: int, seed: Any) -> tuple[Any, np.ndarray]:
    fork, _ = fork_believed(sim, None)
    return fork, add_sampled_arrivals(fork, k, seed)


def test_sampled_arrivals_are_deterministic_for_a_seed() -> None:
    _, sim = _mid_episode()
    a, ids_a = _sampled_fork(sim, 6, (7, 1))
    b, ids_b = _sampled_fork(sim, 6, (7, 1))
    c, ids_c = _sampled_fork(sim, 6, (7, 2))
    assert len(ids_a) == 6 and list(ids_a) == list(ids_b)
    assert [a.jobs[j] for j in ids_a] == [b.jobs[j] for j in ids_b]
    times_a = [a.jobs[j].submit_time_s for j in ids_a]
    assert times_a != [c.jobs[j].submit_time_s for j in ids_c]  # another seed, another draw
    assert all(t > sim.now_s for t in times_a) and times_a == sorted(times_a)


def test_sampled_jobs_are_resampled_past_jobs_not_the_true_future() -> None:
    env, sim = _mid_episode()
    future = _future(sim)
    fork, ids = _sampled_fork(sim, 8, (0, 5))
    arrived = {(j.model, j.num_gpus, j.batch_size) for j in sim.jobs
               if sim.state[j.job_id] != int(JobState.PENDING)}  # fmt: skip
    for j in ids:
        spec, true = fork.jobs[int(j)], sim.jobs[int(j)]
        assert int(j) in set(future.tolist())  # it reuses a not-yet-arrived slot ...
        assert spec != true and spec.submit_time_s != true.submit_time_s  # ... not its job
        assert spec.name.startswith("sampled-")
        assert (spec.model, spec.num_gpus, spec.batch_size) in arrived
    play_ahead(fork, env.unwrapped.policy("fifo"), 1e18)
    assert np.isfinite(fork.finish_s[ids]).all()  # the sampled jobs arrive and finish
    assert fork.num_arrived == sim.num_arrived + len(ids)


class _Poison:
    """A not-yet-arrived job: reading anything of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the fork read {name!r} of a job that has not arrived")


def test_the_fork_never_reads_a_true_future_job() -> None:
    env, sim = _mid_episode()
    fork, _ = fork_believed(sim, None)
    fork.view()  # the views' static columns exist already (as in any running episode)
    pending = set(_future(sim).tolist())
    fork._jobs = tuple(_Poison() if j in pending else job for j, job in enumerate(fork.jobs))
    ids = add_sampled_arrivals(fork, 8, (1, 1))
    assert len(ids) == 8
    play_ahead(fork, env.unwrapped.policy("fifo"), 1e18)  # only sampled jobs arrive
    assert np.isfinite(fork.finish_s[ids]).all()


def test_default_fork_is_unchanged() -> None:
    env, sim = _mid_episode()
    fork, _ = fork_believed(sim, None)
    also, _ = fork_believed(sim, None, sampled_arrivals=0)
    assert fork.jobs == also.jobs and fork.next_event_time() == also.next_event_time()
    arrived = fork.num_arrived
    play_ahead(fork, env.unwrapped.policy("fifo"), 1e18)
    assert fork.num_arrived == arrived  # no arrival in the default believed fork
    with_k, _ = fork_believed(sim, None, sampled_arrivals=4, seed=(0, 0))
    assert with_k.jobs != fork.jobs


@pytest.mark.parametrize("kwargs", [{"arrivals": "future"}, {"arrivals": "sampled", "num_samples": 0},
                                    {"arrivals": "sampled", "num_samples": 2.5}])  # fmt: skip
def test_bad_arrival_options_raise_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        LookaheadTeacher(("fifo",), **kwargs)


def test_bad_sample_count_raises_config_error() -> None:
    _, sim = _mid_episode()
    fork, _ = fork_believed(sim, None)
    with pytest.raises(ConfigError, match="count"):
        add_sampled_arrivals(fork, -1, 0)


def test_lookahead_arrivals_teacher_name() -> None:
    teacher = make_teacher("lookahead-arrivals:fifo,fifo-best-fit", PLACEMENT)
    assert teacher is not None and teacher.arrivals == "sampled" and teacher.num_samples > 0
    plain = make_teacher("lookahead:fifo", PLACEMENT)
    assert plain is not None and plain.num_samples == 0


def test_multi_lookahead_with_sampled_arrivals_teacher_name() -> None:
    """``lookahead-multi-arrivals``: the rollout over every candidate's continuation, its
    forks carrying the sampled arrivals; ``lookahead-multi`` keeps the future out."""
    from agents.teacher import MOLDABLE_CANDIDATES

    moldable = "cluster_envs/MoldableScheduling-v0"
    both = make_teacher("lookahead-multi-arrivals", moldable)
    assert both is not None and both.arrivals == "sampled" and both.num_samples == 16
    assert both.candidates == both.continuations == MOLDABLE_CANDIDATES
    assert both.name.endswith(";arrivals=16;then=" + ",".join(MOLDABLE_CANDIDATES) + ")")
    listed = make_teacher("lookahead-multi-arrivals:sjf,tetris", moldable)
    assert listed.continuations == ("sjf", "tetris") and listed.num_samples == 16
    assert make_teacher("lookahead-multi", moldable).num_samples == 0
    with pytest.raises(ConfigError, match="lookahead-multi-arrivals plays MoldableScheduling"):
        make_teacher("lookahead-multi-arrivals", PLACEMENT)


def test_lookahead_follows_the_chosen_candidates_whole_placement() -> None:
    """Regression: JobPlacement's action_for stores a multi-node plan; the teacher must
    leave the chosen candidate's plan pending, not the last one tried (here spread)."""

    class PreferFirst(LookaheadTeacher):
        def _cost(self, sim: Any, policy: Any, decision: Any, known: np.ndarray) -> float:
            return 0.0  # a tie: the first candidate (first-fit) always wins

    env = gym.make(PLACEMENT, family="synthetic-16", split="validation")
    fifo = rollout(env, HeuristicAgent("fifo"), 500).metrics["avg_jct_s"]
    spread = rollout(env, HeuristicAgent("fifo-spread"), 500).metrics["avg_jct_s"]
    taught = rollout(env, PreferFirst(("fifo", "fifo-spread")), 500).metrics["avg_jct_s"]
    assert spread != fifo  # the two rules differ on this episode ...
    assert taught == fifo  # ... and the teacher plays first-fit's placements exactly
