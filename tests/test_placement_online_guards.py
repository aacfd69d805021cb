"""The online BO placer's spread guard and robustness re-scoring (issue 17)."""

from __future__ import annotations

import pytest
from helpers import fifo_decisions

from baselines.placement import online
from baselines.placement.online import BOPlacement, BOScheduler
from cluster_envs.errors import ConfigError
from cluster_envs.sim.engine import Simulator
from cluster_envs.workload import synthetic_workload

# Loose settings (no margin, no fragmentation or spread guard) so the placer moves often.
LOOSE = {"improvement_margin": 0.0, "fragmentation_weight": 0.0, "max_extra_nodes": None}
# The spread guard on every cluster size.
GUARD = {"improvement_margin": 0.0, "fragmentation_weight": 0.0, "spread_guard_nodes": None}


def _prefer_spread(placer: BOPlacement) -> BOPlacement:
    """Make the placer's projection favour wide placements (each node 10 % cheaper), so
    the unguarded placer spreads whenever the search finds a wider placement."""

    def projection(view, job, num_gpus, free, scale=None):
        def cost(config):
            placer.num_evaluations += 1
            return 1000.0 * 0.9 ** len(config[0])

        return cost

    placer._projection = projection  # type: ignore[method-assign]
    return placer


@pytest.mark.parametrize("anchor", ["first-fit", "best-greedy"])
def test_spread_guard_never_uses_more_nodes_than_first_fit(anchor: str) -> None:
    spread = 0
    for seed in (1, 2):
        for view, job, free in fifo_decisions(6, "hetero-small", seed, {2: 0.4, 4: 0.6}):
            first_fit = online.WARM_START[0].place(view, job, job.num_gpus, free)
            assert first_fit is not None
            loose = _prefer_spread(BOPlacement("gp-ei", budget=6, anchor=anchor, **LOOSE))
            guarded = _prefer_spread(
                BOPlacement("gp-ei", budget=6, anchor=anchor, max_extra_nodes=0, **GUARD)
            )
            a = loose.place(view, job, job.num_gpus, free)
            b = guarded.place(view, job, job.num_gpus, free)
            assert a is not None and b is not None
            assert len(b) <= len(first_fit)
            assert sum(g for _, g in b) == job.num_gpus
            assert all(g <= free[node] for node, g in b)
            spread += len(a) > len(first_fit)
    assert spread > 0  # without the guard the placer does spread wider (not vacuous)


def test_spread_guard_allows_the_given_extra_nodes() -> None:
    wider = 0
    for view, job, free in fifo_decisions(6, "hetero-small", 2, {2: 0.4, 4: 0.6}):
        first_fit = online.WARM_START[0].place(view, job, job.num_gpus, free)
        assert first_fit is not None
        placer = _prefer_spread(BOPlacement("gp-ei", budget=6, max_extra_nodes=1, **GUARD))
        chosen = placer.place(view, job, job.num_gpus, free)
        assert chosen is not None and len(chosen) <= len(first_fit) + 1
        wider += len(chosen) == len(first_fit) + 1
    assert wider > 0  # one extra node is used when the projection favours it


# An episode where the placer (default 5 % margin, no fragmentation guard) makes a move
# that is not cheaper by the margin under every draw of wide estimate noise.
EPISODE = {1: 0.6, 4: 0.4}


def test_spread_guard_acts_only_on_clusters_up_to_its_node_count() -> None:
    """``spread_guard_nodes``: on a cluster with more nodes the placer spreads as before."""
    wider = 0
    for view, job, free in fifo_decisions(6, "hetero-small", 2, {2: 0.4, 4: 0.6}):
        nodes = len(free)
        off = _prefer_spread(BOPlacement("gp-ei", budget=6, **LOOSE))
        big_only = dict(GUARD, spread_guard_nodes=nodes - 1)
        above = _prefer_spread(BOPlacement("gp-ei", budget=6, max_extra_nodes=0, **big_only))
        at = dict(GUARD, spread_guard_nodes=nodes)
        within = _prefer_spread(BOPlacement("gp-ei", budget=6, max_extra_nodes=0, **at))
        first_fit = online.WARM_START[0].place(view, job, job.num_gpus, free)
        a = off.place(view, job, job.num_gpus, free)
        assert above.place(view, job, job.num_gpus, free) == a
        chosen = within.place(view, job, job.num_gpus, free)
        assert first_fit is not None and chosen is not None and a is not None
        assert len(chosen) <= len(first_fit)
        wider += len(a) > len(first_fit)
    assert wider > 0


def test_default_spread_guard_is_the_training_chosen_one() -> None:
    placer = BOPlacement("gp-ei")
    assert (placer.max_extra_nodes, placer.spread_guard_nodes) == (0, 8)
    assert placer.rescore_draws == 0  # re-scoring lost on training: off by default


def _rescored_run(draws: int, quorum: float, noise: float, seed: int = 0):
    placer = BOPlacement(
        "gp-ei", budget=6, rescore_draws=draws, rescore_quorum=quorum, rescore_noise=noise,
        seed=seed, fragmentation_weight=0.0, max_extra_nodes=None,
    )  # fmt: skip
    out = []
    for view, job, free in fifo_decisions(8, "small", 2, EPISODE):
        out.append(placer.place(view, job, job.num_gpus, free))
    return out, placer


def test_rescoring_is_deterministic_for_a_seed_and_can_veto_a_move() -> None:
    a, pa = _rescored_run(6, 1.0, 1.0)
    b, pb = _rescored_run(6, 1.0, 1.0)
    assert a == b
    assert (pa.num_rescored, pa.num_rescore_vetoes) == (pb.num_rescored, pb.num_rescore_vetoes)
    assert pa.num_evaluations == pb.num_evaluations
    # Unanimity under wide noise vetoes some moves the nominal projection makes...
    plain, _ = _rescored_run(0, 1.0, 1.0)
    assert pa.num_rescored > 0 and pa.num_rescore_vetoes > 0
    assert a != plain
    # ... and a vetoed decision keeps consolidated first-fit.
    firsts = [
        online.WARM_START[0].place(view, job, job.num_gpus, free)
        for view, job, free in fifo_decisions(8, "small", 2, EPISODE)
    ]
    for got, nominal, first in zip(a, plain, firsts, strict=True):
        assert got in (nominal, first)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_extra_nodes": -1}, "max_extra_nodes must be None or an integer >= 0, got -1"),
        ({"max_extra_nodes": 1.5}, "max_extra_nodes must be .* got 1.5"),
        ({"max_extra_nodes": True}, "max_extra_nodes must be .* got True"),
        ({"max_extra_nodes": "none"}, "max_extra_nodes must be .* got 'none'"),
        ({"spread_guard_nodes": 0}, "spread_guard_nodes must be None or an integer >= 1"),
        ({"spread_guard_nodes": 8.0}, "spread_guard_nodes must be .* got 8.0"),
        ({"rescore_draws": -2}, "rescore_draws must be an integer >= 0, got -2"),
        ({"rescore_draws": 2.0}, "rescore_draws must be an integer >= 0, got 2.0"),
        ({"rescore_quorum": 0.0}, r"rescore_quorum must be a number in \(0, 1\], got 0.0"),
        ({"rescore_quorum": 1.5}, r"rescore_quorum must be a number in \(0, 1\], got 1.5"),
        ({"rescore_quorum": float("nan")}, "rescore_quorum must be .* got nan"),
        ({"rescore_noise": -0.1}, "rescore_noise must be a finite number >= 0, got -0.1"),
        ({"rescore_noise": float("inf")}, "rescore_noise must be .* got inf"),
        ({"rescore_nois": 0.1}, "unknown option.*rescore_nois"),
    ],
)
def test_bad_guard_or_rescore_options(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BOScheduler("gp-ei", **kwargs)


def _bo_episode(cluster: str, **options):
    """Placements ``BOScheduler("gp-ei", budget=4, **options)`` makes in a 10-job episode."""
    wl = synthetic_workload(
        num_jobs=10, cluster=cluster, seed=3, load=3.0,
        gpu_demand_probs={1: 0.3, 2: 0.3, 4: 0.3, 8: 0.1},
    )  # fmt: skip
    sim = Simulator(wl.jobs, cluster, {"node_interference": 0.1}, seed=0)
    policy = BOScheduler("gp-ei", budget=4, **options)
    policy.reset(0)
    placements = []
    while not sim.done:
        sim.step()
        while sim.queue:
            decision = policy.decide(sim.view())
            if not sim.apply(decision):
                break
            placements += [a.placement for a in decision.actions]
    return placements, policy.bo


def test_big_clusters_play_the_big_cluster_setting() -> None:
    """Above ``big_cluster_nodes`` the placer is exactly BIG_CLUSTER's anchor, margin and
    (no) fragmentation guard; at or below it, exactly the configured setting."""
    big = online.BIG_CLUSTER
    assert (online.BIG_CLUSTER_NODES, big["anchor"], big["fragmentation_weight"]) == (
        8, "best-greedy", 0.0,
    )  # fmt: skip
    default, placer = _bo_episode("hetero-large")  # 112 nodes
    assert (placer.anchor, placer.improvement_margin, placer.fragmentation_weight) == (
        big["anchor"], big["improvement_margin"], big["fragmentation_weight"],
    )  # fmt: skip
    as_big, _ = _bo_episode("hetero-large", big_cluster_nodes=None, **big)
    anchored, _ = _bo_episode("hetero-large", big_cluster_nodes=None)
    assert default == as_big
    assert default != anchored  # the setting matters on this episode (not vacuous)
    # A 112-node cluster is not big for a placer told so: the configured setting plays.
    high, placer = _bo_episode("hetero-large", big_cluster_nodes=112)
    assert high == anchored and placer.anchor == "first-fit"
    small, placer = _bo_episode("hetero-small")  # 8 nodes: never big by default
    assert placer.anchor == online.ANCHOR and placer.fragmentation_weight == 1.0
    assert small == _bo_episode("hetero-small", big_cluster_nodes=None)[0]


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "16"])
def test_bad_big_cluster_nodes(value) -> None:
    with pytest.raises(
        ConfigError, match=f"big_cluster_nodes must be None or an integer >= 1, got {value!r}"
    ):
        BOScheduler("gp-ei", big_cluster_nodes=value)
