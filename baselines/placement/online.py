"""The Bayesian-optimisation placer inside episodes: a PlacementPolicy and a FIFO wrapper.

:class:`BOPlacement` places one job at a time. Its search space is the one-job slice of
:class:`~baselines.placement.encoding.PlacementEncoding` over the free GPUs it is given
(anchor node rank x number of nodes). Each evaluation is a short simulator projection:
the running jobs that sit on nodes with free GPUs (the only ones the new job can share a
node or link with), each with its *estimated* remaining iterations
(``view.estimate``) on its current placement, plus the jobs this policy placed earlier in
the same decision, plus the new job on the candidate placement, all run to completion.
The cost is the sum of their completion times, so a placement that slows a neighbour
pays for it. The policy never reads true job lengths.

Per decision it spends at most ``budget`` evaluations: when the space has no more points
than that it evaluates every point; otherwise it runs skopt's ask/tell ``Optimizer``
(``INITIAL_POINTS`` random points first; acquisition maximised over
``methods.ONLINE_ACQ_POINTS`` sampled points, cheaper than gp_minimize's L-BFGS restarts and enough for a space of at
most ``nodes x MAX_SPREAD`` points; the GP's kernel is fitted without restarts).

The projection is noisy (``benchmarks/results/projection_fidelity.md``), so the placer
keeps an *anchor* placement unless the best candidate is projected at least
``improvement_margin`` cheaper. By default (issue 17, chosen on training splits and seeds
only) the anchor is consolidated first-fit and the margin 5 %: every other placement,
greedy or searched, must clear it. ``anchor="best-greedy", improvement_margin=0.02`` (see
:data:`UNANCHORED`) is the setting before that: the anchor is the greedy placement the
projection ranks first. The projection cannot see jobs that have not arrived, so on top
of the margin a *fragmentation guard* (``fragmentation_weight``, issue 17) makes a
candidate that breaks fully free nodes the anchor keeps pay for the share of the cluster
they hold, weighted by how often the jobs seen so far need such a node whole, while jobs
are still to arrive: on training splits most losing deviations
spread small jobs onto whole nodes to avoid node interference (a projected 5-8 %
saving) and left later multi-GPU arrivals waiting. A *spread guard* (``max_extra_nodes``,
on by default on clusters of at most ``spread_guard_nodes`` = 8 nodes) never places a job
on more nodes than consolidated first-fit would: spreading pays on big clusters and lost
on small ones (training splits, ``benchmarks/results/placement_online_train_spread.md``).
*Robustness re-scoring* (``rescore_draws``, off by default: it lost on training) re-projects
the winning candidate under draws of the length estimates and keeps the anchor unless
the candidate wins on a quorum of them.

On a *big cluster* (more than ``big_cluster_nodes`` = 8 nodes, issue 17, chosen on
validation splits) the anchor, margin and fragmentation guard are :data:`BIG_CLUSTER`'s:
the best greedy placement by projection, replaced by one projected >= 2 % cheaper, no
guard. There many similar nodes make the projection's pick a safe bet and breaking one
whole node costs little; on small clusters the same setting loses.

*Joint queue-window placement* (``joint_window``, default 4; issue 17): at the
first placement of a decision, the head job and the queued jobs strict FIFO starts with it
now are placed as one plan (the offline instance shape), searched from the greedy joint
plans (:mod:`baselines.placement.window`, :meth:`BOPlacement._joint`).

:class:`BOScheduler` is FIFO (head-of-line blocking, requested GPU counts) with this
placer; it is registered as ``bo-gp-ei``, ``bo-gp-pi``, ``bo-gp-lcb``, ``bo-gp-hedge``,
``bo-rf`` and ``bo-et``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.placement import window as joint
from baselines.placement.encoding import PlacementEncoding
from baselines.placement.methods import (
    INITIAL_POINTS,
    SKOPT_METHODS,
    check_budget,
    check_method,
    online_optimizer,
)
from cluster_envs.config import SimConfig
from cluster_envs.errors import ConfigError
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import ConsolidatedPlacement
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.estimate import USER_OVERESTIMATE
from cluster_envs.sim.fork import settle
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Allocate, Decision, JobKind, JobSpec, Placement

#: Default evaluations per placement decision.
DEFAULT_BUDGET = 10
#: Node interference the projection assumes (the placement instances' value).
DEFAULT_NODE_INTERFERENCE = 0.1
#: Greedy placers evaluated first at every decision (consolidated first-fit on the
#: fastest GPUs, best-fit, and first-fit in node order): the search starts where they end.
WARM_START = (
    ConsolidatedPlacement("first-fit"),
    ConsolidatedPlacement("best-fit"),
    ConsolidatedPlacement("first-fit", prefer_fast=False),
)
#: Queued jobs (behind the one being placed) the projection plays out with FIFO.
QUEUE_HORIZON = 16
#: Relative projected saving a candidate needs to replace the anchor placement (default
#: of ``BOPlacement(improvement_margin=...)``, read when a placer is built).
IMPROVEMENT_MARGIN = 0.05
#: Which placement a candidate must beat by the margin (default of
#: ``BOPlacement(anchor=...)``, read when a placer is built): "first-fit" (consolidated
#: first-fit, WARM_START[0]; the other greedy placements must clear the margin too) or
#: "best-greedy" (the warm start the projection ranks first).
ANCHOR = "first-fit"
#: Extra projected saving a candidate needs per unit of *whole-node share* it takes
#: while jobs are still to arrive (default of ``BOPlacement(fragmentation_weight=...)``,
#: read when a placer is built; 0 turns the guard off). Chosen on training splits
#: (issue 17, ``benchmarks/results/placement_online_train_frag.md``).
FRAGMENTATION_WEIGHT = 1.0
#: The anchor values.
ANCHORS = ("first-fit", "best-greedy")
#: The spread guard (default of ``BOPlacement(max_extra_nodes=...)``, read when a placer
#: is built): a placement may use at most this many more nodes than consolidated
#: first-fit would; None: no guard.
MAX_EXTRA_NODES: int | None = 0
#: The spread guard acts only on clusters of at most this many nodes (default of
#: ``BOPlacement(spread_guard_nodes=...)``); None: on every cluster.
SPREAD_GUARD_NODES: int | None = 8
#: Robustness re-scoring (default of ``BOPlacement(rescore_draws=...)``, read when a
#: placer is built): a candidate that clears the margin is re-projected, against the
#: anchor, over this many draws of the length estimates; 0: off.
RESCORE_DRAWS = 0
#: Share of the draws a re-scored candidate must win (by the required saving) to replace
#: the anchor (default of ``BOPlacement(rescore_quorum=...)``).
RESCORE_QUORUM = 0.6
#: Log-normal sigma of a draw's factor on a *fitted* remaining-length estimate (default
#: of ``BOPlacement(rescore_noise=...)``). An estimate still on its prior is scaled by a
#: factor log-uniform in ``[1 / USER_OVERESTIMATE[1], 1]`` instead (the prior
#: over-estimates a job by up to that factor; ``cluster_envs.sim.estimate``).
RESCORE_NOISE = 0.3
#: The setting before issue 17's tuning (the code default until then): the best greedy
#: placement by projection, replaced by a searched one projected >= 2 % cheaper, no guard.
UNANCHORED: dict[str, Any] = {
    "anchor": "best-greedy",
    "improvement_margin": 0.02,
    "fragmentation_weight": 0.0,
    "max_extra_nodes": None,
}
#: Big clusters (default of ``BOPlacement(big_cluster_nodes=...)``, read when a placer is
#: built): on a cluster of more than this many nodes the placer plays :data:`BIG_CLUSTER`
#: instead of its anchor, margin and fragmentation guard; None: never. Chosen on
#: validation splits (issue 17, ``placement_online_validation.md``): on the 8 workloads
#: with more than 8 nodes that setting won 7 (``large`` 0.948x first-fit against the
#: anchored 0.980x, synthetic-256 0.936x / 0.989x, alibaba 0.966x / 0.988x, philly-vc
#: 0.965x / 0.990x) and lost synthetic-64 by 0.3 %; on the clusters of at most 8 nodes,
#: where the anchor and guards were tuned on training splits against bets that doubled an
#: episode's JCT, it lost synthetic-16 (1.019x / 0.972x). The same bound as the spread
#: guard's (:data:`SPREAD_GUARD_NODES`).
BIG_CLUSTER_NODES: int | None = 8
#: What a big cluster plays: the best greedy placement by projection, replaced by a
#: searched one projected >= 2 % cheaper, no fragmentation guard (:data:`UNANCHORED`'s
#: anchor, margin and guard): many similar nodes make the projection's choice a safe bet
#: and a broken whole node cheap.
BIG_CLUSTER: dict[str, Any] = {
    "anchor": "best-greedy",
    "improvement_margin": 0.02,
    "fragmentation_weight": 0.0,
}
#: Expected future arrivals the projection adds (0: none, the default; see
#: ``BOPlacement(arrivals=...)``, read when a placer is built).
ARRIVALS = 0
#: Joint queue-window placement (default of ``BOPlacement(joint_window=...)``, read when a
#: placer is built): at a decision, the head job and up to ``joint_window - 1`` queued jobs
#: that start with it are placed jointly (:mod:`baselines.placement.window`); 0: off.
#: Chosen on training splits (issue 17, ``placement_online_train_joint.md``): with the 5 %
#: margin it only moves where the joint plan is projected clearly cheaper (no training
#: episode worse, philly-vc seed 3 0.983x -> 0.971x); smaller margins lost.
JOINT_WINDOW = 4
#: Projections the joint search spends beyond its greedy seeds (default of
#: ``BOPlacement(joint_budget=...)``).
JOINT_BUDGET = 10
#: Relative projected saving over the all-first-fit window a joint plan needs (default of
#: ``BOPlacement(joint_margin=...)``; the fragmentation guard adds to it).
JOINT_MARGIN = 0.05
#: Smallest remaining length given to a projected job (iterations).
MIN_ITERATIONS = 1e-6


def _spec(
    j: int, status: JobStatus, gpus: int, iterations: float, submit_s: float = 0.0
) -> JobSpec:
    return JobSpec(
        job_id=j,
        name=status.name,
        submit_time_s=submit_s,
        model=status.model,
        num_gpus=gpus,
        min_gpus=gpus,
        max_gpus=gpus,
        kind=JobKind.RIGID,
        batch_size=status.batch_size,
        total_iterations=max(iterations, MIN_ITERATIONS),
        speed=status.speed,
    )


def whole_node_value(
    free: np.ndarray, total: np.ndarray, placement: Placement, demand: np.ndarray
) -> float:
    """GPUs of the nodes still fully free after ``placement``, each node's GPUs weighted by
    the estimated chance that a job asks for at least that many GPUs: Laplace's rule of
    succession over ``demand`` (the sorted GPU requests seen), ``(count + 1) / (n + 2)``,
    so a handful of 1-GPU jobs early in an episode does not yet mean nobody needs a node.
    """
    left = free.copy()
    for node, gpus in placement:
        left[node] -= gpus
    whole = total[left == total]
    if len(whole) == 0:
        return 0.0
    at_least = len(demand) - np.searchsorted(demand, whole, side="left")
    share = (at_least + 1.0) / (len(demand) + 2.0)
    return float((whole * share).sum())


def _flat(plan: tuple[Placement, ...]) -> Placement:
    """Every (node, GPUs) pair of a plan (what it takes from the free GPUs)."""
    return tuple(pair for placement in plan for pair in placement)


def _largest_hole(free: np.ndarray, plan: tuple[Placement, ...]) -> int:
    """Most free GPUs left on one node after ``plan``."""
    left = np.array(free, dtype=np.int64)
    for node, gpus in _flat(plan):
        left[node] -= gpus
    return int(left.max()) if len(left) else 0


class BOPlacement:
    """Bayesian-optimisation placement of one job (module docstring).

    Args:
        method: A BO method of :data:`baselines.placement.methods.SKOPT_METHODS`.
        budget: Evaluations per placement decision.
        node_interference: Interference the projection assumes.
        seed: Seeds the optimiser (also set by :meth:`reset`).
        queue_horizon: Queued jobs the projection plays out behind the placed one.
        anchor: The placement kept unless a candidate is projected ``improvement_margin``
            cheaper: "first-fit" or "best-greedy" (:data:`ANCHORS`); None: :data:`ANCHOR`.
        improvement_margin: Relative projected saving (in [0, 1)) a candidate needs to
            replace the anchor; None: :data:`IMPROVEMENT_MARGIN`.
        arrivals: Expected future arrivals the projection adds behind the queue (at most
            ``view.num_pending``): copies of the last ``arrivals`` jobs this placer has
            seen arrive (their estimated lengths when first seen), spaced by their mean
            inter-arrival time; None: :data:`ARRIVALS` (0, none).
        fragmentation_weight: The fragmentation guard (see :meth:`_required_saving`):
            while ``view.num_pending > 0``, a candidate that keeps fewer fully free
            nodes than the anchor needs an extra projected saving of this weight times
            the cluster share of the whole nodes it breaks, weighted by how many of the
            jobs seen so far need such a node whole; 0: off. None:
            :data:`FRAGMENTATION_WEIGHT`.
        max_extra_nodes: The spread guard: never return a placement on more than this
            many nodes beyond consolidated first-fit's (0: never more nodes than
            first-fit); the cheapest candidate within it is taken, first-fit if none
            clears the margin. None: off. Default :data:`MAX_EXTRA_NODES`.
        spread_guard_nodes: The spread guard acts only on clusters of at most this many
            nodes (>= 1; on big clusters spreading wins, on small ones it loses: training
            splits, issue 17); None: every cluster. Default :data:`SPREAD_GUARD_NODES`.
        rescore_draws: Robustness re-scoring (see :meth:`_robust`): the candidate that
            clears the margin is projected again, next to the anchor, under this many
            draws of the length estimates, and replaces the anchor only if it is cheaper
            by the required saving on at least ``rescore_quorum`` of them; 0: off.
            Default :data:`RESCORE_DRAWS`.
        rescore_quorum: Share of draws in (0, 1] the candidate must win; None:
            :data:`RESCORE_QUORUM`.
        rescore_noise: Log-normal sigma (>= 0) of a draw's factor on a fitted estimate;
            None: :data:`RESCORE_NOISE`.
        joint_window: Joint queue-window placement (see :meth:`_joint`): at the first
            placement of a decision, the head job and up to ``joint_window - 1`` queued
            jobs that strict FIFO starts with it are placed jointly; 0 or 1: off.
            None: :data:`JOINT_WINDOW`.
        joint_budget: Projections the joint search spends beyond its greedy seeds
            (>= 0); None: :data:`JOINT_BUDGET`.
        joint_margin: Relative projected saving (in [0, 1)) a joint plan needs over the
            window all on consolidated first-fit (plus the fragmentation guard); None:
            :data:`JOINT_MARGIN`.
        big_cluster_nodes: On a cluster of more than this many nodes (>= 1) the anchor,
            margin and fragmentation guard are :data:`BIG_CLUSTER`'s instead of the ones
            above; None: never. Default :data:`BIG_CLUSTER_NODES`.
    """

    def __init__(
        self,
        method: str = "gp-ei",
        budget: int = DEFAULT_BUDGET,
        node_interference: float = DEFAULT_NODE_INTERFERENCE,
        seed: int = 0,
        queue_horizon: int = QUEUE_HORIZON,
        anchor: str | None = None,
        improvement_margin: float | None = None,
        arrivals: int | None = None,
        fragmentation_weight: float | None = None,
        max_extra_nodes: int | None | str = "default",
        spread_guard_nodes: int | None | str = "default",
        rescore_draws: int | None = None,
        rescore_quorum: float | None = None,
        rescore_noise: float | None = None,
        joint_window: int | None = None,
        joint_budget: int | None = None,
        joint_margin: float | None = None,
        big_cluster_nodes: int | None | str = "default",
    ) -> None:
        check_method(method)
        if method not in SKOPT_METHODS:
            raise ConfigError(
                f"online placement needs a BO method, got {method!r}; "
                f"BO methods: {', '.join(SKOPT_METHODS)}"
            )
        budget = check_budget(budget, "budget")
        if queue_horizon < 0:
            raise ConfigError(f"queue_horizon must be >= 0, got {queue_horizon}")
        anchor = ANCHOR if anchor is None else anchor
        if anchor not in ANCHORS:
            raise ConfigError(f"anchor must be one of {', '.join(ANCHORS)}, got {anchor!r}")
        margin = IMPROVEMENT_MARGIN if improvement_margin is None else improvement_margin
        if not 0.0 <= margin < 1.0:
            raise ConfigError(f"improvement_margin must be in [0, 1), got {margin}")
        arrivals = ARRIVALS if arrivals is None else arrivals
        if isinstance(arrivals, bool) or not isinstance(arrivals, int) or arrivals < 0:
            raise ConfigError(f"arrivals must be an integer >= 0, got {arrivals!r}")
        frag = FRAGMENTATION_WEIGHT if fragmentation_weight is None else fragmentation_weight
        if (
            isinstance(frag, bool)
            or not isinstance(frag, int | float)
            or not math.isfinite(frag)
            or frag < 0
        ):
            raise ConfigError(f"fragmentation_weight must be a finite number >= 0, got {frag!r}")
        self.fragmentation_weight = float(frag)
        extra = MAX_EXTRA_NODES if max_extra_nodes == "default" else max_extra_nodes
        if extra is not None and (
            isinstance(extra, bool) or not isinstance(extra, int) or extra < 0
        ):
            raise ConfigError(f"max_extra_nodes must be None or an integer >= 0, got {extra!r}")
        self.max_extra_nodes: int | None = extra
        small = SPREAD_GUARD_NODES if spread_guard_nodes == "default" else spread_guard_nodes
        if small is not None and (
            isinstance(small, bool) or not isinstance(small, int) or small < 1
        ):
            raise ConfigError(f"spread_guard_nodes must be None or an integer >= 1, got {small!r}")
        self.spread_guard_nodes: int | None = small
        draws = RESCORE_DRAWS if rescore_draws is None else rescore_draws
        if isinstance(draws, bool) or not isinstance(draws, int) or draws < 0:
            raise ConfigError(f"rescore_draws must be an integer >= 0, got {draws!r}")
        quorum = RESCORE_QUORUM if rescore_quorum is None else rescore_quorum
        if (
            isinstance(quorum, bool)
            or not isinstance(quorum, int | float)
            or not 0.0 < quorum <= 1.0
        ):
            raise ConfigError(f"rescore_quorum must be a number in (0, 1], got {quorum!r}")
        noise = RESCORE_NOISE if rescore_noise is None else rescore_noise
        if (
            isinstance(noise, bool)
            or not isinstance(noise, int | float)
            or not math.isfinite(noise)
            or noise < 0
        ):
            raise ConfigError(f"rescore_noise must be a finite number >= 0, got {noise!r}")
        window = JOINT_WINDOW if joint_window is None else joint_window
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ConfigError(f"joint_window must be an integer >= 0 (0: off), got {window!r}")
        self.joint_window = window
        jbudget = JOINT_BUDGET if joint_budget is None else joint_budget
        if isinstance(jbudget, bool) or not isinstance(jbudget, int) or jbudget < 0:
            raise ConfigError(f"joint_budget must be an integer >= 0, got {jbudget!r}")
        self.joint_budget = jbudget
        jmargin = JOINT_MARGIN if joint_margin is None else joint_margin
        if (
            isinstance(jmargin, bool)
            or not isinstance(jmargin, int | float)
            or not 0.0 <= jmargin < 1.0
        ):
            raise ConfigError(f"joint_margin must be a number in [0, 1), got {jmargin!r}")
        self.joint_margin = float(jmargin)
        big = BIG_CLUSTER_NODES if big_cluster_nodes == "default" else big_cluster_nodes
        if big is not None and (isinstance(big, bool) or not isinstance(big, int) or big < 1):
            raise ConfigError(f"big_cluster_nodes must be None or an integer >= 1, got {big!r}")
        self.big_cluster_nodes: int | None = big
        # (anchor, margin, fragmentation weight) on clusters up to / above big_cluster_nodes.
        self._settings = {
            False: (anchor, float(margin), self.fragmentation_weight),
            True: (
                BIG_CLUSTER["anchor"],
                float(BIG_CLUSTER["improvement_margin"]),
                float(BIG_CLUSTER["fragmentation_weight"]),
            ),
        }
        self.rescore_draws = draws
        self.rescore_quorum = float(quorum)
        self.rescore_noise = float(noise)
        self.anchor = anchor
        self.improvement_margin = float(margin)
        self.arrivals = arrivals
        self.method = method
        self.budget = budget
        self.queue_horizon = queue_horizon
        self._rollout = FifoScheduler()
        self.name = f"bo-{method}"
        self._config = SimConfig(record_timeline=False, node_interference=node_interference)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed and forget the decision in progress."""
        self._seed = 0 if seed is None else int(seed)
        self._decisions = 0
        self._view: ClusterView | None = None
        self._pending: list[tuple[JobStatus, Placement, float]] = []
        # Jobs seen arrive this episode, by id: (status, estimated length when first seen).
        self._seen: dict[int, tuple[JobStatus, float]] = {}
        # GPU requests of the jobs seen this episode, by id (the fragmentation guard).
        self._demand: dict[int, int] = {}
        self._demand_time = -math.inf
        self._last_time = -math.inf
        self.num_evaluations = 0
        self.num_searches = 0
        self.num_rescored = 0
        self.num_rescore_vetoes = 0
        # The committed joint plan's placements of the window jobs after the head, by id.
        self._plan: dict[int, Placement] = {}
        self.num_joint = 0
        self.num_joint_moves = 0

    def place(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement | None:
        """A placement of ``num_gpus`` GPUs of ``job`` on ``free``, or None if none fits."""
        if int(free.sum()) < num_gpus:
            return None
        if view is not self._view:
            self._view, self._pending = view, []
            big = self.big_cluster_nodes is not None and len(free) > self.big_cluster_nodes
            self.anchor, self.improvement_margin, self.fragmentation_weight = self._settings[big]
            self._observe(view)
            self._plan = {}
            if self.fragmentation_weight:
                self._note_demand(view)
        planned = self._plan.pop(job.job_id, None)
        if (
            planned is not None
            and sum(g for _, g in planned) == num_gpus
            and all(g <= free[node] for node, g in planned)
        ):
            placement = planned  # this decision's joint plan (see _joint)
        else:
            placement = self._single(view, job, num_gpus, free)
            if self.joint_window > 1 and not self._pending:
                placement = self._joint(view, job, num_gpus, free, placement)
        self._pending.append((job, placement, view.estimate(job.job_id).remaining_iterations))
        self._decisions += 1
        return placement

    def _load(self, view: ClusterView, free: np.ndarray) -> np.ndarray:
        """Running jobs per node (the encoding's ranking tie-break)."""
        load = np.zeros(len(free), dtype=np.int64)
        for status in view.running:
            for node, _ in status.placement:
                load[node] += 1
        return load

    def _single(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> Placement:
        """The one-job decision (module docstring): search, anchor, margin and guards."""
        enc = PlacementEncoding([num_gpus], free, view.node_speed, self._load(view, free))
        project = self._projection(view, job, num_gpus, free)
        seeds = [(p,) for p in (g.place(view, job, num_gpus, free) for g in WARM_START) if p]
        if enc.num_dims == 0:
            candidates = [enc.decode([])]
        elif enc.size() + len(set(seeds)) <= self.budget:
            candidates = [enc.decode(x) for x in enc.grid()]
        else:
            candidates = [self._search(enc, project, self.budget - len(set(seeds)))]
        # The anchor stays unless the best candidate's projected cost is lower by the
        # margin (the projection is noisy; fidelity benchmark). The anchor is the first
        # warm start, consolidated first-fit ("first-fit": the other greedy placements
        # must then clear the margin too) or the best greedy by projection ("best-greedy").
        if self.anchor == "first-fit" and seeds:
            greedy: tuple[Placement, ...] | None = seeds[0]
            candidates = [*candidates, *seeds[1:]]
        else:
            greedy = min(seeds, key=project) if seeds else None
        placement = greedy[0] if greedy is not None else min(candidates, key=project)[0]
        limit = self._node_limit(view, job, num_gpus, free)
        if greedy is not None and limit is not None and len(greedy[0]) > limit:
            greedy = seeds[0]  # a best-greedy anchor spread wider: anchor first-fit instead
            placement = greedy[0]
        if greedy is not None:
            base = project(greedy)
            for config in sorted(candidates, key=project):
                if limit is not None and len(config[0]) > limit:
                    continue
                need = self._required_saving(view, free, greedy[0], config[0])
                if project(config) < (1.0 - need) * base:
                    if self._robust(view, job, num_gpus, free, greedy[0], config[0], need):
                        placement = config[0]
                    break
        return placement

    def _joint(
        self,
        view: ClusterView,
        job: JobStatus,
        num_gpus: int,
        free: np.ndarray,
        single: Placement,
    ) -> Placement:
        """Joint queue-window placement: the head's placement, committing a joint plan.

        The window is the head job plus the queued jobs strict FIFO starts with it now
        (at most ``joint_window`` jobs; :func:`~baselines.placement.window.window_jobs`).
        With one job there is nothing to do. Otherwise the plans are projected with
        every window job fixed on its placement: the one-job decision (``single`` for
        the head, consolidated first-fit for the rest, which is what the one-job
        projection assumes), the window placed by each greedy placer of
        :data:`WARM_START`, and ``joint_budget`` more from the joint search
        (:func:`~baselines.placement.window.joint_search`). The anchor is the window
        all on consolidated first-fit. The cheapest plan that is cheaper than the one-job
        plan, passes the spread guard job by job and is projected cheaper than the
        anchor by the required saving (the margin plus the fragmentation guard on the
        whole plan) and, while jobs are still to arrive, leaves a node with as many free
        GPUs as the anchor's largest free block (the *hole guard*: on training, joint
        plans that moved small jobs onto the node that first-fit kept a 4-GPU hole on,
        for a projected 3 % saving from less node interference, left the next 4-GPU
        arrivals waiting; ``default`` seed 0 1.49x) is committed: the head gets its part
        now, the other window jobs theirs when FIFO places them in this decision. Else
        ``single`` (no plan).
        """
        skip = {status.job_id for status, _, _ in self._pending}
        rest = joint.window_jobs(
            view, job.job_id, int(free.sum()) - num_gpus, self.joint_window, skip
        )
        if not rest:
            return single
        self.num_joint += 1
        jobs = [job, *rest]
        anchor = joint.greedy_plan(WARM_START[0], view, jobs, free)
        base = joint.greedy_plan(WARM_START[0], view, jobs, free, first=single)
        if anchor is None or base is None:
            return single
        seeds = [anchor, base]
        for placer in WARM_START[1:]:
            plan = joint.greedy_plan(placer, view, jobs, free)
            if plan is not None:
                seeds.append(plan)
        project = self._projection(view, job, num_gpus, free, window=rest)
        enc = PlacementEncoding(
            [s.num_gpus for s in jobs], free, view.node_speed, self._load(view, free)
        )
        seed = int(np.random.SeedSequence([self._seed, self._decisions, 2]).generate_state(1)[0])
        plans = joint.joint_search(self.method, enc, project, seeds, self.joint_budget, seed)
        guard = self.max_extra_nodes is not None and (
            self.spread_guard_nodes is None or len(free) <= self.spread_guard_nodes
        )
        # The spread guard job by job: at most max_extra_nodes beyond the anchor plan's.
        cap = [len(p) + (self.max_extra_nodes or 0) for p in anchor] if guard else None
        flat_anchor = _flat(anchor)
        hole = _largest_hole(free, anchor)
        anchor_cost, base_cost = project(anchor), project(base)
        for value, plan in plans:
            if plan == base or value >= base_cost:
                break
            if plan == anchor or (
                cap is not None and any(len(p) > c for p, c in zip(plan, cap, strict=True))
            ):
                continue
            if view.num_pending > 0 and _largest_hole(free, plan) < hole:
                continue  # the hole guard (docstring)
            need = self._required_saving(view, free, flat_anchor, _flat(plan), self.joint_margin)
            if value < (1.0 - need) * anchor_cost:
                self.num_joint_moves += 1
                self._plan = {s.job_id: p for s, p in zip(rest, plan[1:], strict=True)}
                return plan[0]
        return single

    def _node_limit(
        self, view: ClusterView, job: JobStatus, num_gpus: int, free: np.ndarray
    ) -> int | None:
        """Most nodes a placement may use under the spread guard (None: no limit)."""
        if self.max_extra_nodes is None:
            return None
        if self.spread_guard_nodes is not None and len(free) > self.spread_guard_nodes:
            return None
        first_fit = WARM_START[0].place(view, job, num_gpus, free)
        return None if first_fit is None else len(first_fit) + self.max_extra_nodes

    def _robust(
        self,
        view: ClusterView,
        job: JobStatus,
        num_gpus: int,
        free: np.ndarray,
        anchor: Placement,
        candidate: Placement,
        need: float,
    ) -> bool:
        """Whether ``candidate`` beats ``anchor`` by ``need`` on enough estimate draws.

        Each draw scales every projected job's remaining-length estimate by its own
        factor (the same factors for both placements): log-normal with sigma
        ``rescore_noise`` for a fitted estimate; log-uniform in ``[1/3, 1]`` for one
        still on its prior (the prior over-estimates by a log-uniform factor in
        ``USER_OVERESTIMATE``). Seeded by the placer's seed and decision count, so a
        seeded episode is reproducible. True without re-scoring (``rescore_draws`` 0).
        """
        if not self.rescore_draws:
            return True
        self.num_rescored += 1
        ids = sorted(
            {job.job_id, *view.running_ids, *view.queued_ids}
            | {status.job_id for status, _, _ in self._pending}
        )
        prior = np.array([view.estimate(j).source == "prior" for j in ids])
        rng = np.random.default_rng([self._seed, self._decisions, 17])
        low = -math.log(USER_OVERESTIMATE[1] / USER_OVERESTIMATE[0])
        wins = 0
        for _ in range(self.rescore_draws):
            factor = np.where(
                prior,
                np.exp(rng.uniform(low, 0.0, len(ids))),
                np.exp(rng.normal(0.0, self.rescore_noise, len(ids))),
            )
            scale = dict(zip(ids, factor.tolist(), strict=True))
            project = self._projection(view, job, num_gpus, free, scale)
            if project((candidate,)) < (1.0 - need) * project((anchor,)):
                wins += 1
        if wins >= math.ceil(self.rescore_quorum * self.rescore_draws - 1e-9):
            return True
        self.num_rescore_vetoes += 1
        return False

    def _required_saving(
        self,
        view: ClusterView,
        free: np.ndarray,
        anchor: Placement,
        candidate: Placement,
        margin: float | None = None,
    ) -> float:
        """Relative projected saving ``candidate`` needs to replace ``anchor``.

        ``improvement_margin`` plus the fragmentation guard: the projection cannot see
        jobs that have not arrived yet, and what a future multi-GPU job needs most is a
        fully free node, so while ``view.num_pending > 0`` a candidate that keeps fewer
        fully free nodes than the anchor must also pay ``fragmentation_weight`` times
        what it breaks: each whole node's share of the cluster's GPUs times the estimated
        share of jobs that request at least that node's GPUs (the arrivals that would
        need it whole; Laplace's rule over the jobs seen this episode). Big on a small cluster with many multi-GPU jobs
        (synthetic-16), next to nothing on a big one or with mostly 1-GPU jobs (alibaba).
        """
        need = self.improvement_margin if margin is None else margin
        if self.fragmentation_weight and view.num_pending > 0 and anchor != candidate:
            demand = np.sort(np.fromiter(self._demand.values(), dtype=np.int64))
            total = view.total_gpus
            lost = whole_node_value(free, total, anchor, demand) - whole_node_value(
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
                self._demand[j] = view.job(j).num_gpus

    def projected_cost(
        self, view: ClusterView, job: JobStatus, free: np.ndarray, placement: Placement
    ) -> float:
        """The projected cost (s) of putting ``job`` on ``placement`` now (what BO minimises).

        Public so the fidelity benchmark can score candidates exactly as the search does.
        """
        if view is not self._view:
            self._view, self._pending = view, []
            self._observe(view)
        num_gpus = sum(g for _, g in placement)
        return self._projection(view, job, num_gpus, free)((placement,))

    def _observe(self, view: ClusterView) -> None:
        """Remember the queued jobs not seen before (templates of expected arrivals)."""
        if not self.arrivals:
            return
        if view.time_s < self._last_time:  # a new episode without reset()
            self._seen = {}
        self._last_time = view.time_s
        for j in view.queued_ids:
            if j not in self._seen:
                self._seen[j] = (view.job(j), view.estimate(j).remaining_iterations)

    def _expected_arrivals(self, view: ClusterView, first_id: int) -> list[JobSpec]:
        """Specs of the expected next arrivals, submit times relative to now."""
        count = min(self.arrivals, view.num_pending)
        if count == 0 or len(self._seen) < 2:
            return []
        recent = [self._seen[j] for j in sorted(self._seen)[-max(self.arrivals, 2) :]]
        times = [status.submit_time_s for status, _ in recent]
        gap = (times[-1] - times[0]) / (len(times) - 1)
        start = max(times[-1], view.time_s)
        out = []
        for k in range(count):
            status, length = recent[k % len(recent)]
            submit = start + (k + 1) * gap - view.time_s
            out.append(_spec(first_id + k, status, status.num_gpus, length, submit))
        return out

    def _projection(
        self,
        view: ClusterView,
        job: JobStatus,
        num_gpus: int,
        free: np.ndarray,
        scale: dict[int, float] | None = None,
        window: Sequence[JobStatus] = (),
    ):
        """The cost function ``configuration -> sum of projected completion times (s)``.

        The projection holds every running job (estimated remaining length, current
        placement), the jobs placed earlier in this decision, the new job on the
        candidate placement, the first ``queue_horizon`` other queued jobs (estimated
        lengths) and, with ``arrivals``, the expected next arrivals, which FIFO with
        consolidated first-fit starts as GPUs free up. So a
        placement that blocks the queue (fragments a node a queued job needs) or slows a
        neighbour pays for it. Never reads true lengths. ``scale`` (job id -> factor)
        multiplies the remaining-length estimates (one draw of the re-scoring).
        With a ``window`` (queued jobs placed jointly with the new one), a configuration
        holds one placement per job, the new one first, and the window jobs start on
        theirs now.
        """
        factor = scale or {}

        def remaining(j: int, value: float | None = None) -> float:
            est = view.estimate(j).remaining_iterations if value is None else value
            return est * factor.get(j, 1.0)

        specs: list[JobSpec] = []
        fixed: list[Placement] = []
        for status in view.running:
            gpus = sum(g for _, g in status.placement)
            specs.append(_spec(len(specs), status, gpus, remaining(status.job_id)))
            fixed.append(status.placement)
        placed = {job.job_id}
        for status, placement, left in self._pending:
            gpus = sum(g for _, g in placement)
            specs.append(_spec(len(specs), status, gpus, remaining(status.job_id, left)))
            fixed.append(placement)
            placed.add(status.job_id)
        new = _spec(len(specs), job, num_gpus, remaining(job.job_id))
        together = [
            _spec(len(specs) + 1 + i, s, s.num_gpus, remaining(s.job_id))
            for i, s in enumerate(window)
        ]
        placed |= {s.job_id for s in window}
        first = len(specs) + 1 + len(together)
        queued = [j for j in view.queued_ids if j not in placed][: self.queue_horizon]
        later = [
            _spec(
                first + i,
                view.job(j),
                view.job(j).num_gpus,
                remaining(j),
            )
            for i, j in enumerate(queued)
        ]
        future = self._expected_arrivals(view, first + len(later))
        jobs = (*specs, new, *together, *later, *future)
        cache: dict[tuple[Placement, ...], float] = {}
        size = 1 + len(together)

        def cost(config: tuple[Placement, ...]) -> float:
            placement = tuple(config[:size])
            if placement not in cache:
                self.num_evaluations += 1
                sim = Simulator(jobs, view.cluster, self._config)
                sim.advance_to(0.0)
                actions = [Allocate(i, p) for i, p in enumerate((*fixed, *placement))]
                sim.apply(Decision(tuple(actions)))
                settle(sim, self._rollout)
                while not sim.done:
                    if sim.next_event_time() == math.inf:
                        break
                    sim.step()
                    if sim.queue:
                        settle(sim, self._rollout)
                cache[placement] = float(np.nansum(sim.finish_s))
            return cache[placement]

        return cost

    def _search(self, enc: PlacementEncoding, project: Any, budget: int) -> tuple[Placement, ...]:
        self.num_searches += 1
        seed = int(np.random.SeedSequence([self._seed, self._decisions]).generate_state(1)[0])
        opt = online_optimizer(
            self.method, enc.skopt_space(), seed, min(INITIAL_POINTS, max(budget, 1))
        )
        best: tuple[float, tuple[Placement, ...]] | None = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for _ in range(max(budget, 1)):
                x = opt.ask()
                config = enc.decode(x)
                value = project(config)
                opt.tell(x, value)
                if best is None or value < best[0]:
                    best = (value, config)
        assert best is not None
        return best[1]


class BOScheduler(FifoScheduler):
    """FIFO at the requested GPU counts, placing each job with :class:`BOPlacement`.

    Args:
        method: BO method (``gp-ei``, ``gp-pi``, ``gp-lcb``, ``gp-hedge``, ``rf``, ``et``).
        budget: Evaluations per placement decision.
        anchor: See :class:`BOPlacement` (None: :data:`ANCHOR`, consolidated first-fit).
        improvement_margin: See :class:`BOPlacement` (None: :data:`IMPROVEMENT_MARGIN`).
        fragmentation_weight: See :class:`BOPlacement` (None: :data:`FRAGMENTATION_WEIGHT`).
        **options: ``max_extra_nodes``, ``spread_guard_nodes``, ``rescore_draws``, ``rescore_quorum``,
            ``rescore_noise``, ``joint_window``, ``joint_budget``, ``joint_margin``,
            ``big_cluster_nodes`` of
            :class:`BOPlacement`.
    """

    def __init__(
        self,
        method: str = "gp-ei",
        budget: int = DEFAULT_BUDGET,
        anchor: str | None = None,
        improvement_margin: float | None = None,
        fragmentation_weight: float | None = None,
        **options: Any,
    ) -> None:
        unknown = set(options) - {
            "max_extra_nodes",
            "spread_guard_nodes",
            "rescore_draws",
            "rescore_quorum",
            "rescore_noise",
            "joint_window",
            "joint_budget",
            "joint_margin",
            "big_cluster_nodes",
        }
        if unknown:
            raise ConfigError(f"BOScheduler: unknown option(s) {', '.join(sorted(unknown))}")
        self.bo = BOPlacement(
            method,
            budget,
            anchor=anchor,
            improvement_margin=improvement_margin,
            fragmentation_weight=fragmentation_weight,
            **options,
        )
        super().__init__(placement=self.bo, strict=True)
        self.name = self.bo.name

    def reset(self, seed: int | None = None) -> None:
        """Reseed the placer."""
        self.bo.reset(seed)


def bo_gp_ei() -> BOScheduler:
    """``bo-gp-ei``: FIFO + GP/EI placement."""
    return BOScheduler("gp-ei")


def bo_gp_pi() -> BOScheduler:
    """``bo-gp-pi``: FIFO + GP/PI placement."""
    return BOScheduler("gp-pi")


def bo_gp_lcb() -> BOScheduler:
    """``bo-gp-lcb``: FIFO + GP/LCB placement."""
    return BOScheduler("gp-lcb")


def bo_gp_hedge() -> BOScheduler:
    """``bo-gp-hedge``: FIFO + GP-Hedge placement."""
    return BOScheduler("gp-hedge")


def bo_rf() -> BOScheduler:
    """``bo-rf``: FIFO + random-forest placement."""
    return BOScheduler("rf")


def bo_et() -> BOScheduler:
    """``bo-et``: FIFO + extra-trees placement."""
    return BOScheduler("et")
