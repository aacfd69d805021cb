"""An oracle rollout placer: how low can placement alone take the JCT? (issue 17's bound)

Not a comparator. At every placement decision of a FIFO episode (strict head-of-line, the
requested GPU counts: exactly what JobPlacement-v0 lets an agent choose), it forks the
*true* simulator once per candidate placement of the head job, plays each fork to the end
of the episode with a fixed base policy (FIFO + consolidated first-fit by default) and
keeps the candidate whose realised average JCT is lowest. It reads true job lengths and
the future arrivals (:func:`cluster_envs.sim.fork.play_candidate`), which no placer may,
so its JCT is what *some* sequence of placements reaches on that episode: an achievable
target that tells how much of a placer's gap to a goal is left to win.

Because the base policy's own placement is always a candidate and forks are exact, the
rollout never ends worse than the base policy on the same episode (the rollout
improvement property); with the base policy's placement as the only candidate it replays
the base episode exactly (both are tested). It is one-step lookahead over a finite
candidate set, so the best placement sequence may be better still: a bound from above on
the optimum, not the optimum.

Candidates (:func:`candidate_placements`): the greedy placements (consolidated first-fit
fastest GPUs first, best-fit, first-fit in node order, spread) and every point of the BO
placer's one-job search space (anchor node rank x number of nodes, at most
:data:`~baselines.placement.encoding.MAX_SPREAD`), with placements that look the same
(per used node: GPU speed, free GPUs, running jobs, GPUs taken) kept once, at most
``max_candidates`` (the greedy ones always, the rest drawn by a seeded generator).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.placement.encoding import PlacementEncoding
from cluster_envs.errors import ConfigError
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import ConsolidatedPlacement, SpreadPlacement
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import fork, fork_believed, play_ahead, play_candidate, settle
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.sim.sampled import add_sampled_arrivals
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import Allocate, Decision, Placement

#: The greedy placements every decision considers, first-fit (the base's) first.
GREEDY = (
    ConsolidatedPlacement("first-fit"),
    ConsolidatedPlacement("best-fit"),
    ConsolidatedPlacement("first-fit", prefer_fast=False),
    SpreadPlacement(),
)
#: Default cap on distinct candidates per decision.
MAX_CANDIDATES = 12
#: What a fork knows (the information ablation): ``"true"`` (true lengths and the future
#: arrivals: the full oracle), ``"lengths"`` (true lengths of the jobs submitted so far,
#: no future arrivals), ``"believed"`` (the scheduler's frozen estimates, no future
#: arrivals: what an online placer may consult, the ``lookahead`` teacher's world); with
#: ``+sampled`` the fork gets :data:`SAMPLED_ARRIVALS` future jobs resampled from those
#: submitted so far (:func:`cluster_envs.sim.sampled.add_sampled_arrivals`; the same draw
#: for every candidate of a decision): arrival *statistics*, which a placer may learn.
INFORMATION = ("true", "lengths", "believed", "lengths+sampled", "believed+sampled")
#: Future jobs a ``+sampled`` fork gets (the ``lookahead-arrivals`` teacher's number).
SAMPLED_ARRIVALS = 16
#: Candidate-set names: ``"base"`` (the base policy's placement only: replays the base
#: episode), ``"greedy"`` (:data:`GREEDY`), ``"full"`` (greedy + the search space).
CANDIDATE_SETS = ("base", "greedy", "full")


@dataclass
class OracleResult:
    """One oracle episode: its metrics and what the search did."""

    metrics: dict[str, float]
    decisions: int = 0
    deviations: int = 0
    rollouts: int = 0
    wall_s: float = 0.0
    candidates_per_decision: list[int] = field(default_factory=list)
    #: ``(time_s, job_id, first candidate (first-fit's), chosen)`` of each deviation.
    deviated: list[tuple[float, int, Placement, Placement]] = field(default_factory=list)


def _node_load(view: ClusterView, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Running jobs per node and distributed (multi-node) running jobs per node."""
    load = np.zeros(num_nodes, dtype=np.int64)
    dist = np.zeros(num_nodes, dtype=np.int64)
    for status in view.running:
        multi = len(status.placement) > 1
        for node, _ in status.placement:
            load[node] += 1
            dist[node] += multi
    return load, dist


def candidate_placements(
    view: ClusterView,
    job_id: int,
    free: np.ndarray,
    candidates: str = "full",
    max_candidates: int = MAX_CANDIDATES,
    rng: np.random.Generator | None = None,
) -> list[Placement]:
    """The head job's distinct candidate placements on ``free``, first-fit's first.

    Args:
        view: The cluster now.
        job_id: The job to place (it must fit in ``free``).
        free: Free GPUs per node.
        candidates: One of :data:`CANDIDATE_SETS`.
        max_candidates: Most distinct placements returned (>= 1).
        rng: Draws which search-space points are kept when there are too many
            (``None``: a generator seeded with 0).

    Raises:
        ConfigError: An unknown candidate set or a cap below 1.
    """
    if candidates not in CANDIDATE_SETS:
        raise ConfigError(
            f"oracle placer: unknown candidate set {candidates!r}; "
            f"choose one of {', '.join(CANDIDATE_SETS)}"
        )
    if (
        isinstance(max_candidates, bool)
        or not isinstance(max_candidates, int)
        or max_candidates < 1
    ):
        raise ConfigError(
            f"oracle placer: max_candidates must be an integer >= 1, got {max_candidates!r}"
        )
    job = view.job(job_id)
    num_gpus = job.num_gpus
    greedy = GREEDY[:1] if candidates == "base" else GREEDY
    found = [g.place(view, job, num_gpus, free.copy()) for g in greedy]
    fixed: list[Placement] = [p for p in found if p is not None]
    extra: list[Placement] = []
    if candidates == "full":
        load, _ = _node_load(view, len(free))
        enc = PlacementEncoding([num_gpus], free, view.node_speed, load)
        extra = [enc.decode(x)[0] for x in enc.grid()] if enc.num_dims else []
    load, dist = _node_load(view, len(free))
    speed = view.node_speed

    def looks(p: Placement) -> tuple[Any, ...]:
        return tuple(
            sorted((float(speed[n]), int(free[n]), int(load[n]), int(dist[n]), g) for n, g in p)
        )

    seen: dict[tuple[Any, ...], Placement] = {}
    for p in fixed:
        seen.setdefault(looks(p), p)
    head = list(seen.values())[:max_candidates]
    rest: dict[tuple[Any, ...], Placement] = {}
    for p in extra:
        key = looks(p)
        if key not in seen:
            rest.setdefault(key, p)
    pool = list(rest.values())
    room = max_candidates - len(head)
    if len(pool) > room:
        gen = rng if rng is not None else np.random.default_rng(0)
        keep = sorted(gen.choice(len(pool), size=room, replace=False).tolist()) if room > 0 else []
        pool = [pool[i] for i in keep]
    return head + pool


def _check_information(information: str) -> None:
    if information not in INFORMATION:
        raise ConfigError(
            f"oracle placer: unknown information {information!r}; choose one of {', '.join(INFORMATION)}"
        )


def rollout_cost(
    sim: Simulator,
    base: Any,
    decision: Decision,
    information: str = "true",
    draw: int | tuple[int, ...] = 0,
) -> float:
    """Average JCT if ``decision`` were applied now and ``base`` did the rest, in a fork
    that knows ``information`` (:data:`INFORMATION`); ``sim`` and ``base`` are untouched.

    Without the true future the average is over the jobs submitted so far and the
    sampled ones (the same jobs for every candidate of one decision given the same
    ``draw``, the sampled arrivals' seed, so costs compare).
    """
    _check_information(information)
    if information == "true":
        return float(play_candidate(sim, base, decision)["avg_jct_s"])
    lengths, _, sampled = information.partition("+")
    if lengths == "lengths":
        sim_copy, base_copy = fork(sim, base)
        sim_copy.drop_arrivals()
    else:
        sim_copy, base_copy = fork_believed(sim, base)
    if sampled:
        add_sampled_arrivals(sim_copy, SAMPLED_ARRIVALS, draw)
    return play_fork(sim_copy, base_copy, decision)


def play_fork(sim_copy: Simulator, base_copy: Any, decision: Decision) -> float:
    """Apply ``decision`` to the fork ``sim_copy``, let ``base_copy`` make every later
    decision until nothing is left to happen, and return the fork's average JCT (both
    are mutated: pass copies)."""
    sim_copy.apply(decision)
    if sim_copy.queue:
        settle(sim_copy, base_copy)
    play_ahead(sim_copy, base_copy, math.inf)
    return float(compute_metrics(sim_copy)["avg_jct_s"])


def play_oracle(
    sim: Simulator,
    base: Any | None = None,
    candidates: str = "full",
    max_candidates: int = MAX_CANDIDATES,
    seed: int = 0,
    information: str = "true",
    progress: Callable[[OracleResult], None] | None = None,
) -> OracleResult:
    """Play ``sim`` (at its start) to the end with the oracle rollout placer.

    Every head-of-line job that fits is placed at the candidate whose fork, played out
    by ``base``, ends with the lowest average JCT (ties: the earlier candidate, so
    first-fit's placement is kept unless another is strictly better).

    Args:
        sim: A fresh simulator (mutated: it holds the oracle's episode afterwards).
        base: The policy that plays every fork out (default FIFO + consolidated first-fit).
        candidates: One of :data:`CANDIDATE_SETS`.
        max_candidates: Most candidates rolled out per decision.
        seed: Seeds the choice of candidates when there are too many.
        information: What the forks know (:data:`INFORMATION`); only ``"true"`` has the
            rollout improvement property.
        progress: Called after each decision with the result so far.
    """
    _check_information(information)
    base = base if base is not None else FifoScheduler()
    if hasattr(base, "reset"):
        base.reset(seed)
    rng = np.random.default_rng(seed)
    result = OracleResult(metrics={})
    start = time.perf_counter()
    while not sim.done:
        if sim.next_event_time() == math.inf:
            break
        sim.step()
        while sim.queue:
            view = sim.view()
            head = view.queued_ids[0]
            free = view.free_gpus.copy()
            if view.requested_gpus(head) > int(free.sum()):
                break  # head-of-line blocking, as FIFO
            options = candidate_placements(view, head, free, candidates, max_candidates, rng)
            if not options:
                break  # first-fit finds no room either: FIFO waits too
            best: tuple[float, Placement] | None = None
            if len(options) == 1:
                best = (0.0, options[0])
            else:
                for p in options:
                    decision = Decision((Allocate(head, p),))
                    jct = rollout_cost(sim, base, decision, information, (seed, result.decisions))
                    result.rollouts += 1
                    if best is None or jct < best[0]:
                        best = (jct, p)
            assert best is not None
            result.decisions += 1
            if best[1] != options[0]:
                result.deviations += 1
                result.deviated.append((float(sim.now_s), int(head), options[0], best[1]))
            result.candidates_per_decision.append(len(options))
            sim.apply(Decision((Allocate(head, best[1]),)))
            if progress is not None:
                progress(result)
    sim.record.sample(sim)
    result.metrics = compute_metrics(sim)
    result.wall_s = time.perf_counter() - start
    return result


__all__ = [
    "CANDIDATE_SETS",
    "GREEDY",
    "INFORMATION",
    "MAX_CANDIDATES",
    "OracleResult",
    "SAMPLED_ARRIVALS",
    "candidate_placements",
    "play_fork",
    "play_oracle",
    "rollout_cost",
]
