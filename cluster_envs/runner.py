"""The no-gym episode loop: a workload, a cluster, a policy -> metrics.

This is the reference against which every Gymnasium env is checked: a heuristic run
through an env must give exactly the metrics it gives here on the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_envs.config import ClusterConfig, SimConfig, sim_config
from cluster_envs.driver import EpisodeDriver, SimulationStalledError
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.registry import make_policy
from cluster_envs.sim.columns import job_column
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.sim.quality import QualitySettings, quality_metrics, track_quality
from cluster_envs.types import JobSpec

__all__ = ["EpisodeResult", "SimulationStalledError", "decide_until_settled", "run_episode"]


@dataclass(frozen=True)
class EpisodeResult:
    """Everything one episode produced.

    Attributes:
        metrics: The episode metrics (see :mod:`cluster_envs.sim.metrics`).
        timeline: Arrays ``time_s, num_queued, num_running, busy_gpus``.
        jobs: Per-job arrays ``job_id, submit_time_s, first_start_s, finish_s,
            num_gpus, num_restarts`` (NaN where a job never started / finished).
        truncated: True if the horizon stopped the episode before every job finished.
        segments: ``(job_id, start_s, end_s, placement)`` of every holding of GPUs.
    """

    metrics: dict[str, float]
    timeline: dict[str, np.ndarray] = field(repr=False)
    jobs: dict[str, np.ndarray] = field(repr=False)
    truncated: bool = False
    segments: list = field(default_factory=list, repr=False)


def _job_table(sim: Simulator) -> dict[str, np.ndarray]:
    return {
        "job_id": np.arange(len(sim.jobs)),
        "submit_time_s": np.array(job_column(sim.jobs, "submit_time_s")),
        "first_start_s": sim.first_start_s.copy(),
        "finish_s": sim.finish_s.copy(),
        "num_gpus": np.array(job_column(sim.jobs, "num_gpus", np.int64)),
        "num_restarts": sim.num_restarts.copy(),
    }


#: A policy asked this many times at one instant without settling is reported as a bug.
MAX_DECISIONS_PER_INSTANT = 100_000


def decide_until_settled(sim: Simulator, policy: SchedulingPolicy) -> bool:
    """Ask ``policy`` again and again at this instant until it decides nothing.

    A policy may return all its actions at once or one at a time (as an RL agent or a
    random policy does through an env); both give the same trajectory. A decision that
    changes nothing (empty, or re-stating current placements) ends the instant; so does
    one that changed something if the policy's ``settles_in_one_decision`` is true (it
    knows its next decision here would be empty). Returns whether anything changed.
    """
    at_once = bool(getattr(policy, "settles_in_one_decision", False))
    for count in range(MAX_DECISIONS_PER_INSTANT):
        if not sim.apply(policy.decide(sim.view())):
            return count > 0
        if at_once:
            return True
    raise SimulationStalledError(
        f"policy {policy.name!r} made {MAX_DECISIONS_PER_INSTANT} decisions at "
        f"t={sim.now_s:.1f}s without settling"
    )


def _stall_message(sim: Simulator, policy: SchedulingPolicy) -> str:
    return (
        f"policy {policy.name!r} left {len(sim.queue)} job(s) queued at t={sim.now_s:.1f}s "
        f"with {sim.inventory.num_free} free GPUs and no future event"
    )


def run_episode(
    jobs: Sequence[JobSpec] | Any,
    policy: str | SchedulingPolicy = "fifo",
    cluster: str | ClusterConfig | Mapping[str, Any] = "pollux-testbed",
    config: SimConfig | Mapping[str, Any] | None = None,
    seed: int | None = 0,
    quality: bool | QualitySettings = False,
) -> EpisodeResult:
    """Simulate one episode of ``jobs`` under ``policy``.

    Args:
        jobs: A sequence of JobSpec, or a Workload (anything with a ``jobs`` attribute).
        policy: A registered policy name or a SchedulingPolicy.
        cluster: Cluster preset name, ClusterConfig or mapping.
        config: Simulator settings; ``time_slice_s`` picks event-driven or round-based.
        seed: Seeds the policy's randomness.
        quality: Also track model quality and add the quality metrics (``quality_auc``,
            ``time_to_quality_s``, ...; :mod:`cluster_envs.sim.quality`); ``True`` or a
            :class:`~cluster_envs.sim.quality.QualitySettings`.

    Returns:
        The episode's metrics, timeline and per-job table.
    """
    jobs = getattr(jobs, "jobs", jobs)
    cfg = sim_config(config)
    pol = make_policy(policy)
    pol.reset(seed)
    sim = Simulator(jobs, cluster, cfg, seed=0 if seed is None else seed)
    if quality:
        track_quality(sim, None if quality is True else quality)
    if cfg.time_slice_s is None:
        truncated = _run_events(sim, pol)
    else:
        truncated = _run_rounds(sim, pol)
    sim.record.sample(sim)
    metrics = compute_metrics(sim)
    if quality:
        metrics.update(quality_metrics(sim))
    return EpisodeResult(
        metrics, sim.record.timeline(), _job_table(sim), truncated, list(sim.record.segments)
    )


def _run_events(sim: Simulator, policy: SchedulingPolicy) -> bool:
    """Ask ``policy`` at every instant that leaves jobs queued; returns truncated."""
    driver = EpisodeDriver(
        sim, lambda: bool(sim.queue), stall_message=lambda: _stall_message(sim, policy)
    )
    while not (outcome := driver.advance(min_one_event=True)).ended:
        decide_until_settled(sim, policy)
    return outcome.truncated


def _run_rounds(sim: Simulator, policy: SchedulingPolicy) -> bool:
    """Ask ``policy`` every ``time_slice_s`` (empty rounds skipped); returns truncated."""
    driver = EpisodeDriver(sim, lambda: True)
    while not (outcome := driver.advance()).ended:
        if driver.end_round(decide_until_settled(sim, policy)):
            raise SimulationStalledError(_stall_message(sim, policy))
    return outcome.truncated
