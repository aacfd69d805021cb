"""Forks share immutable values and copy every container that can change.

A fork (``copy.deepcopy`` of the simulator and its policy) takes the per-job lists of
immutable values one level deep (``cluster_envs/sim/copying.py``) and shares the
:class:`~cluster_envs.types.Immutable` values; these tests pin that the copy is still a
deep copy: playing the fork on leaves the original exactly as it was, and the played fork
gives the same episode as the original.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the envs)
from cluster_envs.config import get_cluster
from cluster_envs.perf.throughput import PolluxThroughput
from cluster_envs.sim.fork import fork, fork_believed, play_out
from cluster_envs.types import Immutable, LossCurveParams


def _metis_midway(steps: int = 6):
    env = gym.make("cluster_envs/MetisAllocation-v0")
    env.reset(seed=3)
    base = env.unwrapped
    policy = base.policy("slaq")
    policy.reset(3)
    for _ in range(steps):
        env.step(base.action_for(policy.decide(base.sim.view())))
    return base.sim, policy


def test_immutable_values_are_their_own_deep_copy() -> None:
    curve = LossCurveParams(1e-3, 1.0, 0.1)
    speed = PolluxThroughput(0.1, 0.01, 0.2, 0.01, 0.1, 0.01, 1.5, 64, 32)
    for value in (curve, speed, get_cluster("small")):
        assert isinstance(value, Immutable)
        assert copy.deepcopy(value) is value


def test_playing_a_fork_leaves_the_original_untouched_and_reproduces_it() -> None:
    sim, policy = _metis_midway()
    before = pickle.dumps((sim, policy))
    sim_copy, policy_copy = fork(sim, policy)
    # Containers that change are new; the values in them, and the jobs, are shared.
    assert sim_copy.jobs is sim.jobs
    for name in ("_placement", "_speeds", "_goodput"):
        mine, theirs = getattr(sim, name), getattr(sim_copy, name)
        assert mine is not theirs and mine == theirs
    est, est_copy = sim._estimator, sim_copy._estimator
    assert est_copy.sim is sim_copy and est_copy._fit is not est._fit
    assert sim_copy._events.heap is not sim._events.heap
    observed = [j for j, chunks in est._k.items() if chunks]
    assert observed, "the episode logged no loss observations"
    chunk = est._k[observed[0]][0]
    assert est_copy._k[observed[0]][0] is chunk and est_copy._k is not est._k
    with pytest.raises(ValueError):
        chunk[0] = -1.0  # shared chunks are read-only
    forked = play_out(sim_copy, policy_copy)
    assert pickle.dumps((sim, policy)) == before  # the original did not move
    assert forked == play_out(sim, policy)
    # The fork's noise streams (restored from their states) drew what the original's did.
    for j in range(len(sim.jobs)):
        for mine, theirs in zip(est.observations(j), est_copy.observations(j), strict=True):
            assert np.array_equal(mine, theirs)


def test_sampled_arrivals_in_a_fork_leave_the_originals_columns_alone() -> None:
    sim, policy = _metis_midway(steps=2)  # at 1,200 s: jobs yet to arrive
    sim.view()  # builds the static columns the views read
    table = sim.__dict__["_spec_table"]
    before = {key: copy.deepcopy(column) for key, column in table.items()}
    sim_copy, _ = fork_believed(sim, policy, sampled_arrivals=8, seed=1)
    copied = sim_copy.__dict__["_spec_table"]
    assert any(  # the sampled jobs were written into the fork's columns
        not np.array_equal(np.asarray(copied[key]), np.asarray(before[key])) for key in before
    )
    for key, column in table.items():
        assert np.array_equal(np.asarray(column), np.asarray(before[key]))
