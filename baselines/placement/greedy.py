"""Greedy placement heuristics for a batch (one configuration each, no search).

* ``greedy-consolidate`` -- consolidated first-fit, fastest GPU type first: each job in
  batch order goes whole onto the first node (lowest id) of the fastest type with room;
  failing that, onto the fewest nodes (most free first) of one type, else of any type
  (the project's default placement, :class:`~cluster_envs.policies.ConsolidatedPlacement`).
* ``greedy-spread`` -- load balancing: each GPU of each job goes to the node with the
  fewest jobs (existing and placed), then the most free GPUs, then the lowest id, not
  reusing a node of the same job while another has room.
* ``greedy-tetris`` -- Tetris-style (Grandl et al., SIGCOMM'14): repeatedly place the
  (job, node) pair with the largest alignment between the job's demand and the node's
  free resources -- ``(g / total) * (free / total)`` for GPUs plus ``speed / max speed``
  for compute, both in ``[0, 1]`` -- over single-node fits; a job that fits on no single
  node is placed like ``greedy-consolidate``.
* ``greedy-optimus`` -- Optimus-style marginal gain: among the unplaced jobs, place the one
  whose best candidate placement saves the most estimated time (worst feasible candidate
  minus best, ``estimated iterations / contended throughput``) on that best placement;
  candidates are every point of the job's slice of the search space
  (:class:`~baselines.placement.encoding.PlacementEncoding`) against the GPUs left, and
  throughput includes the simulator's contention factors from the jobs placed so far.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from baselines.placement.cost import Configuration
from baselines.placement.encoding import PlacementEncoding
from baselines.placement.problem import PlacementInstance
from cluster_envs.perf import zoo
from cluster_envs.policies.placement import consolidate
from cluster_envs.sim.contention import Contention
from cluster_envs.types import Placement

#: Weight of the compute-speed term in the Tetris alignment score.
TETRIS_SPEED_WEIGHT = 1.0


def consolidate_one(free: np.ndarray, speed: np.ndarray, num_gpus: int) -> Placement:
    """Consolidated first-fit of one job, fastest type first (module docstring)."""
    best = consolidate(free, speed, num_gpus, "first-fit")
    assert best is not None, "instance guarantees the batch fits"
    return best


def _take(free: np.ndarray, placement: Placement) -> None:
    for node, gpus in placement:
        free[node] -= gpus


def greedy_consolidate(instance: PlacementInstance) -> Configuration:
    """``greedy-consolidate`` (module docstring)."""
    free, speed = instance.free_gpus, instance.node_speed
    out = []
    for g in instance.num_gpus:
        placement = consolidate_one(free, speed, g)
        _take(free, placement)
        out.append(placement)
    return tuple(out)


def greedy_spread(instance: PlacementInstance) -> Configuration:
    """``greedy-spread`` (module docstring)."""
    free, load = instance.free_gpus, instance.node_load.copy()
    out = []
    for g in instance.num_gpus:
        taken = np.zeros_like(free)
        for _ in range(g):
            fresh = (free > 0) & (taken == 0)
            pool = np.flatnonzero(fresh) if fresh.any() else np.flatnonzero(free > 0)
            node = int(pool[np.lexsort((pool, -free[pool], load[pool]))[0]])
            free[node] -= 1
            taken[node] += 1
        nodes = np.flatnonzero(taken)
        load[nodes] += 1
        out.append(tuple((int(n), int(taken[n])) for n in nodes))
    return tuple(out)


def greedy_tetris(instance: PlacementInstance) -> Configuration:
    """``greedy-tetris`` (module docstring)."""
    free, total, speed = instance.free_gpus, instance.total_gpus, instance.node_speed
    gpus = instance.num_gpus
    out: list[Placement | None] = [None] * len(gpus)
    left = set(range(len(gpus)))
    while left:
        best, best_score = None, -np.inf
        for j in sorted(left):
            fits = np.flatnonzero(free >= gpus[j])
            if not fits.size:
                continue
            score = (gpus[j] / total[fits]) * (free[fits] / total[fits])
            score = score + TETRIS_SPEED_WEIGHT * speed[fits] / speed.max()
            k = int(np.argmax(score))
            if score[k] > best_score:
                best, best_score = (j, int(fits[k])), float(score[k])
        if best is None:  # nothing fits on one node: consolidate the first left job
            j = min(left)
            placement = consolidate_one(free, speed, gpus[j])
        else:
            j, node = best
            placement = ((node, gpus[j]),)
        _take(free, placement)
        out[j] = placement
        left.discard(j)
    return tuple(p for p in out if p is not None)


def projected_time_s(
    instance: PlacementInstance, j: int, placement: Placement, contention: Contention
) -> float:
    """Estimated run time (s) of batch job ``j`` on ``placement`` given ``contention``."""
    job = instance.batch[j]
    shape = tuple(sorted((g for _, g in placement), reverse=True))
    speed = float(min(instance.node_speed[n] for n, _ in placement))
    compute_div, network_div = contention.factors(-1 - j, placement)
    network = instance.cluster.inter_node_gbps / 50.0
    rate = zoo.speed_model(job.model, job.batch_size).throughput(
        shape, speed / compute_div, network / network_div
    )
    return job.estimated_iterations / rate


def greedy_optimus(instance: PlacementInstance) -> Configuration:
    """``greedy-optimus`` (module docstring)."""
    free = instance.free_gpus
    contention = Contention(
        instance.cluster.num_nodes, instance.link_contention, instance.node_interference
    )
    for i, job in enumerate(instance.existing):
        contention.add(i, job.placement)
    out: list[Placement | None] = [None] * len(instance.batch)
    left = set(range(len(instance.batch)))
    while left:
        enc = PlacementEncoding(
            [instance.batch[j].num_gpus for j in sorted(left)],
            free,
            instance.node_speed,
            instance.node_load,
        )
        best: tuple[float, int, Placement] | None = None
        by_size: dict[int, list[Placement]] = {}
        for j in sorted(left):
            g = instance.batch[j].num_gpus
            if g not in by_size:
                by_size[g] = _candidates(enc, g, free)
            times = [(_time_with(instance, j, p, contention), p) for p in by_size[g]]
            times.sort(key=lambda t: t[0])
            gain = times[-1][0] - times[0][0]
            if best is None or gain > best[0]:
                best = (gain, j, times[0][1])
        assert best is not None
        _, j, placement = best
        _take(free, placement)
        contention.add(-1 - j, placement)
        out[j] = placement
        left.discard(j)
    return tuple(p for p in out if p is not None)


def _time_with(
    instance: PlacementInstance, j: int, placement: Placement, contention: Contention
) -> float:
    """:func:`projected_time_s` with job ``j`` tentatively added to ``contention``."""
    contention.add(-1 - j, placement)
    try:
        return projected_time_s(instance, j, placement, contention)
    finally:
        contention.remove(-1 - j)


def _candidates(enc: PlacementEncoding, num_gpus: int, free: np.ndarray) -> list[Placement]:
    seen: dict[Placement, None] = {}
    for anchor in range(len(enc.order)):
        for spread in range(1, min(num_gpus, enc.max_spread, len(enc.order)) + 1):
            seen[enc.place_one(num_gpus, anchor, spread, free.copy())] = None
    return list(seen)


GREEDY: dict[str, Callable[[PlacementInstance], Configuration]] = {
    "greedy-consolidate": greedy_consolidate,
    "greedy-spread": greedy_spread,
    "greedy-tetris": greedy_tetris,
    "greedy-optimus": greedy_optimus,
}
