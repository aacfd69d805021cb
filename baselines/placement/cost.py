"""The black-box cost of a batch placement: total JCT from a real simulator run.

Every evaluation builds a :class:`~cluster_envs.sim.engine.Simulator` with the existing
jobs (length: their remaining iterations) and the batch jobs (length: their *estimated*
iterations, or their true ones for evaluation), starts all of them at ``t = 0`` on their
placements, and runs it to the end. Link contention and node interference come from the
simulator (:mod:`cluster_envs.sim.contention`), so sharing a node or a link slows both
jobs, and a job runs at its slowest GPU's pace. The cost is the sum of the batch jobs'
completion times in seconds (existing jobs are load, not objective).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from baselines.placement.problem import PlacementInstance
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision, JobKind, JobSpec, Placement

Configuration = tuple[Placement, ...]
"""One placement per batch job, in batch order."""


def _spec(job_id: int, name: str, model: str, gpus: int, batch: int, iters: float) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        name=name,
        submit_time_s=0.0,
        model=model,
        num_gpus=gpus,
        min_gpus=gpus,
        max_gpus=gpus,
        kind=JobKind.RIGID,
        batch_size=batch,
        total_iterations=iters,
        speed=zoo.speed_model(model, batch),
    )


def check_configuration(instance: PlacementInstance, config: Sequence[Placement]) -> None:
    """Raise ConfigError unless ``config`` places every batch job within free capacity."""
    if len(config) != len(instance.batch):
        raise ConfigError(
            f"configuration has {len(config)} placements for {len(instance.batch)} jobs"
        )
    free = instance.free_gpus
    for job, placement in zip(instance.batch, config, strict=True):
        if sum(g for _, g in placement) != job.num_gpus:
            raise ConfigError(f"job {job.name!r} needs {job.num_gpus} GPUs, placement {placement}")
        for node, gpus in placement:
            if not 0 <= node < len(free) or gpus < 1:
                raise ConfigError(f"job {job.name!r}: bad placement entry {(node, gpus)}")
            free[node] -= gpus
    if (free < 0).any():
        raise ConfigError(
            f"configuration over capacity on nodes {np.flatnonzero(free < 0).tolist()}"
        )


class PlacementCost:
    """Total batch JCT of configurations of one instance, with a cache.

    Args:
        instance: The problem.
        truth: Use the true job lengths (evaluation) instead of the estimates.

    Attributes:
        num_evaluations: Calls so far (cache hits included: a search that proposes the
            same configuration twice pays for both proposals).
        num_simulations: Simulator runs so far.
    """

    def __init__(self, instance: PlacementInstance, truth: bool = False) -> None:
        self.instance = instance
        self.truth = truth
        existing = [
            _spec(
                i,
                j.name,
                j.model,
                sum(g for _, g in j.placement),
                j.batch_size,
                j.remaining_iterations,
            )
            for i, j in enumerate(instance.existing)
        ]
        offset = len(existing)
        batch = [
            _spec(
                offset + i,
                j.name,
                j.model,
                j.num_gpus,
                j.batch_size,
                j.total_iterations if truth else j.estimated_iterations,
            )
            for i, j in enumerate(instance.batch)
        ]
        self.jobs = tuple(existing + batch)
        self.batch_ids = np.arange(offset, offset + len(batch))
        self._existing = tuple(Allocate(i, j.placement) for i, j in enumerate(instance.existing))
        self._config = instance.sim_config()
        self._cache: dict[Configuration, np.ndarray] = {}
        self.num_evaluations = 0
        self.num_simulations = 0

    def finish_times(self, config: Sequence[Placement]) -> np.ndarray:
        """Completion time (s) of every batch job under ``config``."""
        key = tuple(tuple(sorted(p)) for p in config)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        sim = Simulator(self.jobs, self.instance.cluster, self._config)
        sim.advance_to(0.0)
        actions = self._existing + tuple(
            Allocate(int(j), p) for j, p in zip(self.batch_ids, key, strict=True)
        )
        sim.apply(Decision(actions))
        while not sim.done:
            sim.step()
        self.num_simulations += 1
        finish = sim.finish_s[self.batch_ids].copy()
        finish.setflags(write=False)
        self._cache[key] = finish
        return finish

    def __call__(self, config: Sequence[Placement]) -> float:
        """Total JCT (s) of the batch under ``config``."""
        self.num_evaluations += 1
        return float(self.finish_times(config).sum())
