"""Sampled future arrivals for a believed fork: future load from what a scheduler knows now.

A believed fork (:func:`cluster_envs.sim.fork.fork_believed`) drops the arrivals still to
come, so a lookahead played on it sees an ever-emptier cluster (spreading a job or giving
it many GPUs looks free). :func:`add_sampled_arrivals` puts a *guess* of the future back:
``count`` jobs drawn with replacement from the jobs already submitted in this episode
(their requests, models and believed lengths: the frozen estimate of a queued or running
job, the observed length of a finished one), arriving after ``now`` with exponential gaps
at the empirical arrival rate so far (jobs arrived / time elapsed).

It never reads a job that has not arrived yet: the sampled jobs take over the slots
(job ids) of not-yet-arrived jobs, whose specs are *overwritten* with the copies, never
read. (The number of such slots caps ``count``: near an episode's end fewer are added.)
Call it only on a fork on which ``believe_estimates`` has run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.types import JobState

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

_PENDING = int(JobState.PENDING)


def add_sampled_arrivals(sim: Simulator, count: int, seed: int | tuple[int, ...]) -> np.ndarray:
    """Add up to ``count`` sampled future arrivals to the believed fork ``sim``.

    Args:
        sim: A believed fork (its future arrivals already dropped).
        count: How many future jobs to draw (``0``: none).
        seed: Seeds the draw (e.g. ``(episode_seed, decision_index)``): same seed, same jobs.

    Returns:
        The job ids (slots) of the sampled jobs, in arrival order.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ConfigError(f"sampled arrivals count must be an int >= 0, got {count!r}")
    state = sim.state
    arrived = np.flatnonzero(state != _PENDING)
    slots = np.flatnonzero(state == _PENDING)  # ids of jobs not arrived: written, never read
    now = float(sim.now_s)
    count = min(count, len(slots))
    if count == 0 or len(arrived) == 0 or now <= 0:
        return np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    rate = len(arrived) / now  # empirical arrivals per second so far
    times = now + np.cumsum(rng.exponential(1.0 / rate, size=count))
    sources = rng.choice(arrived, size=count, replace=True)
    slots = slots[:count]
    # Believed lengths: a believed fork's queued/running jobs last their frozen estimates,
    # a finished job its observed length.
    jobs, specs = sim.jobs, {}
    for slot, src, t in zip(slots.tolist(), sources.tolist(), times.tolist(), strict=True):
        specs[slot] = replace(
            jobs[src], job_id=slot, submit_time_s=t, name=f"sampled-{slot}-of-{src}",
            total_iterations=max(float(jobs[src].total_iterations), 1e-9),
        )  # fmt: skip
    sim.replace_future(specs)
    return slots
