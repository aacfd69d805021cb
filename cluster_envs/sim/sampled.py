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
from typing import Any

import numpy as np

from cluster_envs.errors import ConfigError
from cluster_envs.types import JobState

_PENDING = int(JobState.PENDING)
_SPEC_INTS = ("num_gpus", "min_gpus", "max_gpus", "batch_size")  # as sim.state_api's


def add_sampled_arrivals(sim: Any, count: int, seed: int | tuple[int, ...]) -> np.ndarray:
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
    state = sim._state
    arrived = np.flatnonzero(state != _PENDING)
    slots = np.flatnonzero(state == _PENDING)  # ids of jobs not arrived: written, never read
    now = float(sim._now_s)
    count = min(count, len(slots))
    if count == 0 or len(arrived) == 0 or now <= 0:
        return np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    rate = len(arrived) / now  # empirical arrivals per second so far
    times = now + np.cumsum(rng.exponential(1.0 / rate, size=count))
    sources = rng.choice(arrived, size=count, replace=True)
    slots = slots[:count]
    specs = {}
    for slot, src, t in zip(slots.tolist(), sources.tolist(), times.tolist(), strict=True):
        total = max(float(sim._total[src]), 1e-9)  # believed (frozen or observed) length
        specs[slot] = replace(
            sim._jobs[src], job_id=slot, submit_time_s=t, total_iterations=total,
            name=f"sampled-{slot}-of-{src}",
        )  # fmt: skip
    _install(sim, specs)
    return slots


def _install(sim: Any, specs: dict[int, Any]) -> None:
    """Overwrite the slots' specs and per-job columns; make them the fork's arrivals."""
    replace_jobs = getattr(sim._jobs, "replace_jobs", None)
    if replace_jobs is not None:
        sim._jobs = replace_jobs(specs)
    else:
        jobs = list(sim._jobs)
        for j, spec in specs.items():
            jobs[j] = spec
        sim._jobs = tuple(jobs)
    est = sim._estimator
    events = sim._events
    for j, spec in specs.items():
        sim._total[j] = spec.total_iterations
        sim._asked[j] = spec.num_gpus
        sim._batch_size[j] = spec.batch_size
        sim._speeds[j] = spec.speed
        sim._goodput[j] = hasattr(spec.speed, "goodput_rate")
        events.submit_s[j] = spec.submit_time_s
        est._total[j] = spec.total_iterations  # believed: frozen, never refitted
        est._fit_count[j] = np.iinfo(np.int64).max
        est._prior[j] = np.nan
        est._interval[j] = 0.0
    ids = np.fromiter(specs, dtype=np.int64, count=len(specs))
    times = np.array([specs[j].submit_time_s for j in ids.tolist()])
    order = np.lexsort((ids, times))
    events._arrival_s = times[order]
    events._arrival_job = ids[order]
    events._next = 0
    events._next_arrival_s = float(events._arrival_s[0])
    table = sim.__dict__.get("_spec_table")  # the views' static columns: patch the slots
    if table is not None:
        for j, spec in specs.items():
            table["submit_time_s"][j] = spec.submit_time_s
            table["ints"][:, j] = [getattr(spec, name) for name in _SPEC_INTS]
            table["model"][j], table["speed"][j] = spec.model, spec.speed
    sim.__dict__.pop("_last_rows", None)
    sim._state_version += 1
