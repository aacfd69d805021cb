"""Warm-started search: BO never returns a worse (estimated) cost than the best greedy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import fifo_decisions

from baselines.placement import online
from baselines.placement.cost import PlacementCost
from baselines.placement.greedy import GREEDY
from baselines.placement.methods import run_method
from baselines.placement.presets import make_instance


@pytest.mark.parametrize(
    ("method", "seed"), [("gp-ei", 0), ("rf", 1), ("et", 2), ("gp-ei-tr", 3), ("rf-tr", 4)]
)
def test_offline_warm_start_is_never_worse_than_the_best_greedy(method: str, seed: int) -> None:
    instance = make_instance("medium", seed=seed)
    cost = PlacementCost(instance)
    best_greedy = min(cost(g(instance)) for g in GREEDY.values())
    result = run_method(method, instance, calls=len(GREEDY) + 3, seed=seed, cost=cost)
    assert result.cost_estimated_s <= best_greedy
    assert len(result.costs_s) == len(GREEDY) + 3
    assert result.costs_s[: len(GREEDY)] == [cost(g(instance)) for g in GREEDY.values()]


def test_online_best_greedy_anchor_is_never_worse_than_the_greedy_placers() -> None:
    """The setting before issue 17 (``UNANCHORED``): never worse than any greedy placer."""
    for view, job, free in fifo_decisions(4, "hetero-small", 2, {2: 0.5, 4: 0.5}):
        placer = online.BOPlacement("gp-ei", budget=6, **online.UNANCHORED)
        project = placer._projection(view, job, job.num_gpus, free)
        chosen = placer.place(view, job, job.num_gpus, free)
        greedy = [g.place(view, job, job.num_gpus, free) for g in online.WARM_START]
        assert project((chosen,)) <= min(project((p,)) for p in greedy if p)


@pytest.mark.parametrize(("margin", "moves"), [(0.0, True), (0.05, True), (0.99, False)])
def test_online_first_fit_anchor_moves_only_for_the_margin(margin: float, moves: bool) -> None:
    """Anchor first-fit (the default): keep consolidated first-fit unless a candidate is
    projected at least ``margin`` cheaper; never worse than first-fit by projection."""
    moved = 0
    # On this episode some decisions have a candidate projected > 5% cheaper than first-fit.
    for view, job, free in fifo_decisions(8, "small", 2, {1: 0.3, 2: 0.3, 4: 0.4}):
        placer = online.BOPlacement(
            "gp-ei", budget=6, improvement_margin=margin, fragmentation_weight=0.0
        )
        assert placer.anchor == "first-fit"
        project = placer._projection(view, job, job.num_gpus, free)
        chosen = placer.place(view, job, job.num_gpus, free)
        first_fit = online.WARM_START[0].place(view, job, job.num_gpus, free)
        assert first_fit is not None
        if chosen == first_fit:
            continue
        moved += 1
        assert project((chosen,)) < (1.0 - margin) * project((first_fit,))
    # moves: the check above is not vacuous; 0.99: nothing is that much cheaper
    assert (moved > 0) == moves


def test_online_default_is_the_training_chosen_anchor() -> None:
    placer = online.BOPlacement("gp-ei")
    assert (placer.anchor, placer.improvement_margin) == ("first-fit", 0.05)
    assert placer.fragmentation_weight == online.FRAGMENTATION_WEIGHT > 0
    old = online.BOScheduler("gp-ei", **online.UNANCHORED).bo
    assert (old.anchor, old.improvement_margin) == ("best-greedy", 0.02)
    assert old.fragmentation_weight == 0.0
    assert old.max_extra_nodes is None  # no spread guard before issue 17's tuning either


def test_trust_region_keeps_anchors_near_the_best_greedy() -> None:
    from baselines.placement.encoding import PlacementEncoding
    from baselines.placement.methods import TRUST_RADIUS

    instance = make_instance("large", seed=0)
    enc = PlacementEncoding(
        instance.num_gpus, instance.free_gpus, instance.node_speed, instance.node_load
    )
    best = GREEDY["greedy-optimus"](instance)
    centre = enc.encode(best)
    dims = enc.trust_region(centre, TRUST_RADIUS)
    full = enc.skopt_space()
    for d, c, box, whole in zip(enc.dims, centre, dims, full, strict=True):
        assert whole.low <= box.low < box.high <= whole.high
        if d.kind == "anchor":
            assert box.high - box.low <= 2 * TRUST_RADIUS
            assert box.low <= c <= box.high
        else:
            assert (box.low, box.high) == (whole.low, whole.high)
    # the region is a real restriction on a 100+ node cluster
    assert sum(b.high - b.low for b in dims) < sum(w.high - w.low for w in full)


def test_whole_node_value_weights_free_nodes_by_the_jobs_that_need_them_whole() -> None:
    total = np.array([4, 4, 8])
    free = np.array([2, 4, 8])
    value = online.whole_node_value
    # Laplace's rule over the sorted requests seen: P(>= 4) = (2+1)/(4+2), P(>= 8) = 2/6.
    demand = np.array([1, 1, 4, 8])
    assert value(free, total, ((0, 2),), demand) == pytest.approx(4 * 3 / 6 + 8 * 2 / 6)
    assert value(free, total, ((1, 1),), demand) == pytest.approx(8 * 2 / 6)
    assert value(free, total, ((1, 2), (2, 1)), demand) == 0.0
    # Nothing seen yet: even odds; many 1-GPU jobs: whole nodes are worth little.
    assert value(free, total, ((0, 2),), np.array([], dtype=int)) == pytest.approx(6.0)
    assert value(free, total, ((0, 2),), np.ones(98, dtype=int)) == pytest.approx(12 / 100)


@pytest.mark.parametrize("seed", [1, 2])
def test_fragmentation_guard_keeps_first_fit_instead_of_breaking_whole_nodes(seed: int) -> None:
    """With the guard, a move that breaks fully free nodes first-fit keeps (while jobs
    are still to arrive) needs the margin plus the weight times their demand-weighted
    share of the cluster; moves that break none are unchanged; and on these episodes it
    does change a decision (the unguarded placer spreads a job onto a whole node)."""
    changed = 0
    for view, job, free in fifo_decisions(8, "small", seed, {1: 0.6, 4: 0.4}):
        first_fit = online.WARM_START[0].place(view, job, job.num_gpus, free)
        assert first_fit is not None
        free0 = free.copy()
        loose = online.BOPlacement("gp-ei", budget=6, fragmentation_weight=0.0)
        guarded = online.BOPlacement("gp-ei", budget=6, fragmentation_weight=2.0)
        project = guarded._projection(view, job, job.num_gpus, free)
        a = loose.place(view, job, job.num_gpus, free)
        b = guarded.place(view, job, job.num_gpus, free)
        assert a is not None and b is not None
        np.testing.assert_array_equal(free, free0)
        demand = np.sort([view.job(j).num_gpus for j in (*view.queued_ids, *view.running_ids)])

        def whole(p, free=free, total=view.total_gpus, demand=demand):
            return online.whole_node_value(free, total, p, demand)

        if a == first_fit or whole(a) >= whole(first_fit):
            assert b == a  # the guard only acts on moves that break whole nodes
            continue
        assert view.num_pending > 0
        if b != a:
            changed += 1
        if b != first_fit:
            lost = max(whole(first_fit) - whole(b), 0.0)
            need = 0.05 + 2.0 * lost / int(view.total_gpus.sum())
            assert project((b,)) < (1.0 - need) * project((first_fit,))
    assert changed > 0
