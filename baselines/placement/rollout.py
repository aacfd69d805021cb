"""The rollout placer: FIFO that puts each job where a believed play-out ends best.

At every placement decision (strict FIFO, head-of-line blocking, the requested GPU
count: what JobPlacement-v0 lets an agent choose) :class:`RolloutScheduler` takes the
head job's distinct candidate placements
(:func:`~baselines.placement.oracle.candidate_placements`: the greedy placements and
the points of the BO placer's one-job search space, at most ``max_candidates``) and, for
each, plays a *believed* copy of the cluster to the end: the copy
(:meth:`~cluster_envs.sim.view.ClusterView.believed_simulator`) holds every queued and
running job with its current estimated length as its length and no future arrivals, the
head job is put on the candidate, and FIFO with consolidated first-fit makes every later
decision. It keeps consolidated first-fit's placement unless another candidate's
believed average JCT is lower by ``improvement_margin`` (relative).

It never reads a true job length or a future arrival: it is the oracle rollout bound's
``believed`` information mode (:mod:`baselines.placement.oracle`, issue 17) as an online
policy, and with ``improvement_margin=0`` it plays that oracle's episodes exactly
(``tests/test_placement_rollout.py``). Unlike the BO placer
(:mod:`baselines.placement.online`) it projects the whole queue with the simulator's
own settings instead of a rebuilt sixteen-job projection, and it scores every
candidate instead of searching: the bound showed that this, not more information, is
what the BO placer leaves (``benchmarks/results/placement_oracle_validation_full.md``:
0.951x first-fit against ``bo-gp-ei``'s 0.977x on the same validation episodes).

Cost: per decision with more than one candidate, one deep copy of the simulation and one
play-out of the known jobs per candidate, so it grows with the queue and the workload
(``benchmarks/results/placement_rollout.md`` gives the decision times). Registered as
``fifo-rollout``.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from baselines.placement.online import whole_node_value
from baselines.placement.oracle import (
    CANDIDATE_SETS,
    MAX_CANDIDATES,
    candidate_placements,
    play_fork,
)
from cluster_envs.errors import ConfigError
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import NO_DECISION, Allocate, Decision, Placement

#: Relative believed saving a candidate needs to replace consolidated first-fit
#: (default of ``RolloutScheduler(improvement_margin=...)``, read when a placer is built).
IMPROVEMENT_MARGIN = 0.0
#: The fragmentation guard's weight (default of
#: ``RolloutScheduler(fragmentation_weight=...)``, read when a placer is built; 0: off).
FRAGMENTATION_WEIGHT = 1.0
#: Small clusters (default of ``RolloutScheduler(small_cluster_nodes=...)``, read when a
#: placer is built): on a cluster of at most this many nodes the margin is
#: :data:`SMALL_CLUSTER_MARGIN` instead; None: never.
SMALL_CLUSTER_NODES: int | None = 8
#: The margin on small clusters (default of ``RolloutScheduler(small_cluster_margin=...)``).
SMALL_CLUSTER_MARGIN = 0.05
#: The spread guard (default of ``RolloutScheduler(max_extra_nodes=...)``, read when a
#: placer is built): a candidate may use at most this many more nodes than consolidated
#: first-fit's placement; None: no guard.
MAX_EXTRA_NODES: int | None = 0
#: The spread guard acts only on clusters of at most this many nodes (default of
#: ``RolloutScheduler(spread_guard_nodes=...)``); None: on every cluster.
SPREAD_GUARD_NODES: int | None = None


class RolloutScheduler:
    """Strict FIFO at the requested GPU counts, placing each job by believed rollouts.

    Args:
        candidates: Which placements are rolled out: ``"full"`` (greedy + the BO
            placer's search space), ``"greedy"`` (the four greedy placements) or
            ``"base"`` (first-fit only: plays FIFO exactly); one of
            :data:`~baselines.placement.oracle.CANDIDATE_SETS`.
        max_candidates: Most distinct placements rolled out per decision (>= 1; the
            greedy ones always, the rest drawn by the placer's seeded generator).
        improvement_margin: Relative believed saving in [0, 1) a candidate needs to
            replace consolidated first-fit's placement; None:
            :data:`IMPROVEMENT_MARGIN`.
        fragmentation_weight: The fragmentation guard (the BO placer's,
            :meth:`~baselines.placement.online.BOPlacement._required_saving`): a believed
            fork has no future arrivals, so while jobs are still to arrive a candidate
            that keeps fewer fully free nodes than first-fit must also save this weight
            times the cluster share of the whole nodes it breaks, each weighted by the
            share of the jobs seen so far that request at least that node's GPUs
            (:func:`~baselines.placement.online.whole_node_value`); 0: off. None:
            :data:`FRAGMENTATION_WEIGHT`.
        small_cluster_nodes: On a cluster of at most this many nodes (>= 1) the margin is
            ``small_cluster_margin``: there one whole node is a large share of the cluster
            and a bet the believed fork cannot see (the next big job has not arrived)
            can block the queue for hours; None: never. Default
            :data:`SMALL_CLUSTER_NODES`.
        small_cluster_margin: The margin on small clusters, in [0, 1); None:
            :data:`SMALL_CLUSTER_MARGIN`.
        max_extra_nodes: The spread guard: a candidate on more than this many nodes
            beyond first-fit's is never taken (the believed lengths are estimates, and a
            job spread over more nodes runs slower for as long as it really lasts);
            None: off. Default :data:`MAX_EXTRA_NODES`.
        spread_guard_nodes: The spread guard acts only on clusters of at most this many
            nodes (>= 1); None: every cluster. Default :data:`SPREAD_GUARD_NODES`.

    One placement per :meth:`decide` call (the runner asks again at the same instant),
    so each placement is scored on a copy that holds the ones made before it.
    """

    def __init__(
        self,
        candidates: str = "full",
        max_candidates: int = MAX_CANDIDATES,
        improvement_margin: float | None = None,
        fragmentation_weight: float | None = None,
        small_cluster_nodes: int | None | str = "default",
        small_cluster_margin: float | None = None,
        max_extra_nodes: int | None | str = "default",
        spread_guard_nodes: int | None | str = "default",
    ) -> None:
        if candidates not in CANDIDATE_SETS:
            raise ConfigError(
                f"fifo-rollout: unknown candidates {candidates!r}; "
                f"choose one of {', '.join(CANDIDATE_SETS)}"
            )
        if (
            isinstance(max_candidates, bool)
            or not isinstance(max_candidates, int)
            or max_candidates < 1
        ):
            raise ConfigError(
                f"fifo-rollout: max_candidates must be an integer >= 1, got {max_candidates!r}"
            )
        margin = IMPROVEMENT_MARGIN if improvement_margin is None else improvement_margin
        small_margin = (
            SMALL_CLUSTER_MARGIN if small_cluster_margin is None else small_cluster_margin
        )
        for label, value in (
            ("improvement_margin", margin),
            ("small_cluster_margin", small_margin),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0.0 <= value < 1.0
            ):
                raise ConfigError(
                    f"fifo-rollout: {label} must be a number in [0, 1), got {value!r}"
                )
        weight = FRAGMENTATION_WEIGHT if fragmentation_weight is None else fragmentation_weight
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise ConfigError(
                f"fifo-rollout: fragmentation_weight must be a finite number >= 0, got {weight!r}"
            )
        self.fragmentation_weight = float(weight)
        extra = MAX_EXTRA_NODES if max_extra_nodes == "default" else max_extra_nodes
        small = SPREAD_GUARD_NODES if spread_guard_nodes == "default" else spread_guard_nodes
        tiny = SMALL_CLUSTER_NODES if small_cluster_nodes == "default" else small_cluster_nodes
        for label, count, low in (
            ("max_extra_nodes", extra, 0),
            ("spread_guard_nodes", small, 1),
            ("small_cluster_nodes", tiny, 1),
        ):
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or count < low
            ):
                raise ConfigError(
                    f"fifo-rollout: {label} must be None or an integer >= {low}, got {count!r}"
                )
        self.max_extra_nodes: int | None = extra  # type: ignore[assignment]
        self.spread_guard_nodes: int | None = small  # type: ignore[assignment]
        self.small_cluster_nodes: int | None = tiny  # type: ignore[assignment]
        self.small_cluster_margin = float(small_margin)
        self.candidates = candidates
        self.max_candidates = max_candidates
        self.improvement_margin = float(margin)
        self.name = "fifo-rollout"
        self.reset(0)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the candidate draw and clear the counters."""
        self._rng = np.random.default_rng(0 if seed is None else int(seed))
        self.num_decisions = 0
        self.num_rollouts = 0
        self.num_deviations = 0
        # GPU requests of the jobs seen this episode, by id (the fragmentation guard).
        self._demand: dict[int, int] = {}
        self._demand_time = -math.inf

    def decide(self, view: ClusterView) -> Decision:
        """Place the head-of-line job if it fits (else nothing: FIFO waits)."""
        if not view.queued_ids:
            return NO_DECISION
        head = view.queued_ids[0]
        free = view.free_gpus.copy()
        if view.requested_gpus(head) > int(free.sum()):
            return NO_DECISION
        options = candidate_placements(
            view, head, free, self.candidates, self.max_candidates, self._rng
        )
        if not options:
            return NO_DECISION
        if self.max_extra_nodes is not None and (
            self.spread_guard_nodes is None or len(free) <= self.spread_guard_nodes
        ):  # the spread guard: never rolled out
            limit = len(options[0]) + self.max_extra_nodes
            options = [p for i, p in enumerate(options) if not i or len(p) <= limit]
        self.num_decisions += 1
        if self.fragmentation_weight:
            self._note_demand(view)
        chosen = options[0] if len(options) == 1 else self._best(view, head, free, options)
        return Decision((Allocate(head, chosen),))

    def _best(
        self, view: ClusterView, head: int, free: np.ndarray, options: list[Placement]
    ) -> Placement:
        """The cheapest candidate by believed rollout that beats first-fit's
        (``options[0]``) by its required saving; else first-fit's."""
        believed = view.believed_simulator()
        costs = []
        for i, placement in enumerate(options):
            fork = believed if i == len(options) - 1 else copy.deepcopy(believed)
            costs.append(play_fork(fork, FifoScheduler(), Decision((Allocate(head, placement),))))
        self.num_rollouts += len(options)
        # Cheapest first; equal costs keep the candidate order (first-fit's first).
        for i in sorted(range(1, len(options)), key=lambda k: (costs[k], k)):
            if costs[i] >= costs[0]:
                break
            need = self._required_saving(view, free, options[0], options[i])
            if costs[i] < (1.0 - need) * costs[0]:
                self.num_deviations += 1
                return options[i]
        return options[0]

    def _required_saving(
        self, view: ClusterView, free: np.ndarray, first_fit: Placement, candidate: Placement
    ) -> float:
        """The margin plus the fragmentation guard's share (the class docstring)."""
        small = self.small_cluster_nodes is not None and len(free) <= self.small_cluster_nodes
        need = self.small_cluster_margin if small else self.improvement_margin
        if self.fragmentation_weight and view.num_pending > 0:
            demand = np.sort(np.fromiter(self._demand.values(), dtype=np.int64))
            total = view.total_gpus
            lost = whole_node_value(free, total, first_fit, demand) - whole_node_value(
                free, total, candidate, demand
            )
            if lost > 0:
                need += self.fragmentation_weight * lost / max(int(total.sum()), 1)
        return need

    def _note_demand(self, view: ClusterView) -> None:
        """Remember the GPU request of every job seen queued or running (new ids only)."""
        if view.time_s < self._demand_time:  # a new episode without reset()
            self._demand = {}
        self._demand_time = view.time_s
        for j in (*view.queued_ids, *view.running_ids):
            if j not in self._demand:
                self._demand[j] = view.requested_gpus(j)


__all__ = [
    "FRAGMENTATION_WEIGHT",
    "IMPROVEMENT_MARGIN",
    "MAX_EXTRA_NODES",
    "RolloutScheduler",
    "SMALL_CLUSTER_MARGIN",
    "SMALL_CLUSTER_NODES",
    "SPREAD_GUARD_NODES",
]
