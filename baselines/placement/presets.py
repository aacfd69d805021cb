"""Generated placement instances: ``small``, ``medium`` and ``large``, from a seed.

=========  ==========================================  =========  =============
preset     cluster                                     existing   batch
=========  ==========================================  =========  =============
small      4 nodes: 2 x 4 T4, 4 V100, 4 A100; 25 Gb/s   1 job      2-3 jobs, 1-4 GPUs
medium     ``hetero-small`` (8 nodes, 40 GPUs)          4 jobs     6 jobs, 1-8 GPUs
large      ``hetero-large`` (112 nodes, 640 GPUs)       ~half full 16 jobs, 1-8 GPUs
=========  ==========================================  =========  =============

``small`` is small enough for exhaustive search over *every* feasible configuration (the
true optimum). Batch jobs are drawn from the zoo models whose full runs last hours
(``bert``, ``cifar10``, ``deepspeech2``, ``yolov3``; ``imagenet`` runs for days and
``ncf`` for minutes, so either would decide the total JCT alone); a job of ``g`` GPUs
uses its model's ``(log2 g + 1)``-th profiled batch size, and its true length is the
model's full run at that batch times a factor log-uniform in ``[0.5, 2]`` (a tighter or
looser convergence target). Existing jobs may be any zoo model and have 20-100 % of such a
run left. Every instance uses node interference 0.1 and link contention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from baselines.placement.convergence import estimate_iterations
from baselines.placement.problem import (
    DEFAULT_LOSS_NOISE_STD,
    DEFAULT_OBSERVED_FRACTION,
    BatchJob,
    ExistingJob,
    PlacementInstance,
)
from cluster_envs.config import ClusterConfig, NodeGroup, get_cluster, suggest
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo

#: Zoo models batch jobs are drawn from (see the module docstring).
BATCH_MODELS = ("bert", "cifar10", "deepspeech2", "yolov3")
#: Range of the true-length factor (log-uniform) relative to the model's full run.
LENGTH_FACTOR = (0.5, 2.0)
#: Range of the remaining fraction of an existing job's run (uniform).
REMAINING_FRACTION = (0.2, 1.0)

SMALL_CLUSTER = ClusterConfig(
    "placement-small",
    (NodeGroup(2, 4, "T4"), NodeGroup(1, 4, "V100"), NodeGroup(1, 4, "A100")),
    inter_node_gbps=25.0,
)


@dataclass(frozen=True)
class InstancePreset:
    """How to generate one family of instances.

    Attributes:
        cluster: The cluster.
        num_existing: Existing jobs to try to place (a job that fits nowhere is dropped).
        existing_gpus: GPU counts existing jobs are drawn from.
        num_batch: Batch sizes (number of jobs) drawn from.
        batch_gpus: GPU counts batch jobs are drawn from.
        max_big: At most this many batch jobs of the largest GPU count.
    """

    cluster: ClusterConfig
    num_existing: int
    existing_gpus: tuple[int, ...]
    num_batch: tuple[int, ...]
    batch_gpus: tuple[int, ...]
    max_big: int


PRESETS: dict[str, InstancePreset] = {
    "small": InstancePreset(SMALL_CLUSTER, 1, (1, 2), (2, 3, 3), (1, 2, 2, 4), 1),
    "medium": InstancePreset(get_cluster("hetero-small"), 4, (1, 2, 4), (6,), (1, 2, 4, 8), 1),
    "large": InstancePreset(get_cluster("hetero-large"), 90, (1, 2, 4, 8), (16,), (1, 2, 4, 8), 3),
}


def batch_size_for(model: str, num_gpus: int) -> int:
    """The ``(log2 num_gpus + 1)``-th profiled batch size of ``model`` (clamped)."""
    sizes = zoo.get_model(model).batch_sizes
    return sizes[min(int(math.log2(num_gpus)) + 1, len(sizes) - 1)]


def _length(model: str, batch: int, rng: np.random.Generator) -> float:
    lo, hi = LENGTH_FACTOR
    factor = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return zoo.iterations_to_complete(model, batch) * factor


def make_instance(
    preset: str,
    seed: int = 0,
    observed_fraction: float = DEFAULT_OBSERVED_FRACTION,
    loss_noise_std: float = DEFAULT_LOSS_NOISE_STD,
) -> PlacementInstance:
    """Generate the instance ``preset`` (``small``, ``medium``, ``large``) for ``seed``.

    Args:
        preset: Preset name.
        seed: Seeds the jobs, the existing load and the loss-observation noise.
        observed_fraction: Fraction of each batch job's training whose loss was observed.
        loss_noise_std: Relative noise of the loss observations.

    Raises:
        ConfigError: Unknown preset (with the closest name).
    """
    if preset not in PRESETS:
        raise ConfigError(
            f"unknown instance preset {preset!r}{suggest(preset, PRESETS)}; "
            f"presets: {', '.join(PRESETS)} (or a JSON file)"
        )
    spec = PRESETS[preset]
    jobs_rng, load_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    total = np.asarray(
        [g.gpus_per_node for g in spec.cluster.node_groups for _ in range(g.num_nodes)]
    )
    free = total.copy()
    existing = []
    for i in range(spec.num_existing):
        gpus = int(load_rng.choice(spec.existing_gpus))
        fits = np.flatnonzero(free >= gpus)
        if not fits.size:
            continue
        node = int(load_rng.choice(fits))
        free[node] -= gpus
        model = str(load_rng.choice(zoo.ZOO_MODELS))
        batch = batch_size_for(model, gpus)
        left = load_rng.uniform(*REMAINING_FRACTION)
        existing.append(
            ExistingJob(
                f"existing-{i}",
                model,
                batch,
                ((node, gpus),),
                _length(model, batch, load_rng) * left,
            )
        )
    count = int(jobs_rng.choice(spec.num_batch))
    big = max(spec.batch_gpus)
    sizes: list[int] = []
    while len(sizes) < count:
        g = int(jobs_rng.choice(spec.batch_gpus))
        if g == big and sizes.count(big) >= spec.max_big:
            continue
        sizes.append(g)
    batch_jobs = []
    for i, g in enumerate(sizes):
        model = str(jobs_rng.choice(BATCH_MODELS))
        batch = batch_size_for(model, g)
        true = _length(model, batch, jobs_rng)
        noise_rng = np.random.default_rng([seed, 2, i])
        estimate = estimate_iterations(
            model, batch, true, observed_fraction, loss_noise_std, noise_rng
        )
        batch_jobs.append(BatchJob(f"{model}-{i}", model, g, batch, true, estimate))
    return PlacementInstance(
        name=f"{preset}-seed{seed}",
        cluster=spec.cluster,
        existing=tuple(existing),
        batch=tuple(batch_jobs),
        observed_fraction=observed_fraction,
        loss_noise_std=loss_noise_std,
        seed=seed,
    )
