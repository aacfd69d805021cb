"""Placement search methods: feasibility, the known optimum, skopt canaries, determinism."""

from __future__ import annotations

import warnings

import pytest

from baselines.placement.cost import PlacementCost, check_configuration
from baselines.placement.encoding import PlacementEncoding
from baselines.placement.instance_json import instance_from_dict
from baselines.placement.methods import METHODS, SKOPT_METHODS, run_method
from baselines.placement.presets import make_instance
from cluster_envs.config import GPU_SPEED
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo

LONG, SHORT = 20000.0, 10000.0
#: Cheaper acquisition optimisation for tests (the benchmark uses skopt's defaults).
FAST = {"n_points": 300}


def _two_job_instance(interference: float) -> dict:
    """Two 2-GPU cifar10 jobs; node 0 has 4 T4s, node 1 has 4 A100s."""
    job = {"model": "cifar10", "num_gpus": 2, "batch_size": 256}
    return {
        "name": "hand",
        "cluster": {
            "name": "two",
            "node_groups": [
                {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "T4"},
                {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "A100"},
            ],
        },
        "node_interference": interference,
        "batch": [
            {**job, "total_iterations": LONG, "estimated_iterations": LONG},
            {**job, "total_iterations": SHORT, "estimated_iterations": SHORT},
        ],
    }


def _rate(speed: float) -> float:
    return zoo.speed_model("cifar10", 256).throughput((2,), speed)


def _hand_costs(interference: float) -> dict[str, float]:
    """Total JCT of the four one-node configurations, computed by hand."""
    t4, a100 = GPU_SPEED["T4"], GPU_SPEED["A100"]
    slow = 1.0 + interference  # both jobs on one node: compute divided by this

    def shared(speed: float) -> float:
        r_shared, r_alone = _rate(speed / slow), _rate(speed)
        t_short = SHORT / r_shared
        t_long = t_short + (LONG - r_shared * t_short) / r_alone
        return t_short + t_long

    return {
        "long-A100 short-T4": LONG / _rate(a100) + SHORT / _rate(t4),
        "long-T4 short-A100": LONG / _rate(t4) + SHORT / _rate(a100),
        "both-A100": shared(a100),
        "both-T4": shared(t4),
    }


CONFIGS = {
    "long-A100 short-T4": (((1, 2),), ((0, 2),)),
    "long-T4 short-A100": (((0, 2),), ((1, 2),)),
    "both-A100": (((1, 2),), ((1, 2),)),
    "both-T4": (((0, 2),), ((0, 2),)),
}


@pytest.mark.parametrize("interference", [0.0, 2.0])
def test_exhaustive_finds_the_hand_computed_optimum(interference: float) -> None:
    hand = _hand_costs(interference)
    best = min(hand, key=hand.__getitem__)
    # Without interference sharing the A100 node wins; with a 3x slowdown, apart wins.
    assert best == ("both-A100" if interference == 0 else "long-A100 short-T4")
    result = run_method("exhaustive", instance_from_dict(_two_job_instance(interference)))
    assert result.configuration == CONFIGS[best]
    assert result.cost_estimated_s == pytest.approx(hand[best], rel=1e-9)
    # Exhaustive also tried the split placements, and none beat the hand optimum.
    assert len(result.costs_s) > len(CONFIGS)
    assert min(result.costs_s) == pytest.approx(hand[best], rel=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_a_feasible_placement(method: str) -> None:
    inst = make_instance("small", 1)
    result = run_method(method, inst, calls=6, seed=0, skopt_options=FAST)
    check_configuration(inst, result.configuration)
    assert result.cost_estimated_s == pytest.approx(PlacementCost(inst)(result.configuration))
    assert result.cost_true_s == pytest.approx(
        PlacementCost(inst, truth=True)(result.configuration)
    )
    assert result.cost_estimated_s == min(result.costs_s)
    assert len(result.suggest_s) == len(result.costs_s)
    if method in SKOPT_METHODS or method == "random":
        assert len(result.costs_s) == 6


def test_exhaustive_is_a_lower_bound_for_the_searches() -> None:
    inst = make_instance("small", 2)
    optimum = run_method("exhaustive", inst).cost_estimated_s
    for method in ("gp-ei", "rf", "random", "greedy-optimus", "greedy-spread"):
        assert (
            run_method(method, inst, calls=8, seed=1, skopt_options=FAST).cost_estimated_s
            >= optimum - 1e-6
        )


@pytest.mark.parametrize(
    ("estimator", "acq"),
    [("GP", "EI"), ("GP", "PI"), ("GP", "LCB"), ("GP", "gp_hedge"), ("RF", "EI"), ("ET", "EI")],
)
def test_skopt_estimators_ask_and_tell(estimator: str, acq: str) -> None:
    """Canary: skopt 0.10.2 under this numpy / scikit-learn (DESIGN.md section 6)."""
    from skopt import Optimizer

    inst = make_instance("small", 0)
    enc = PlacementEncoding(inst.num_gpus, inst.free_gpus, inst.node_speed, inst.node_load)
    cost = PlacementCost(inst)
    opt = Optimizer(
        enc.skopt_space(),
        base_estimator=estimator,
        acq_func=acq,
        n_initial_points=2,
        random_state=0,
        acq_optimizer="sampling",
        acq_optimizer_kwargs={"n_points": 200},
    )
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(4):
            x = opt.ask()
            values.append(cost(enc.decode(x)))
            result = opt.tell(x, values[-1])
    assert len(opt.models) >= 2  # the surrogate was fitted after the initial points
    assert result.fun == min(values)


@pytest.mark.parametrize("method", ["gp-ei", "rf", "random"])
def test_same_seed_same_search(method: str) -> None:
    inst = make_instance("small", 5)
    a = run_method(method, inst, calls=7, seed=3, skopt_options=FAST)
    b = run_method(method, inst, calls=7, seed=3, skopt_options=FAST)
    assert a.costs_s == b.costs_s
    assert a.configuration == b.configuration


def test_unknown_method_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'gp-ei'"):
        run_method("gp_ei", make_instance("small", 0))
    with pytest.raises(ConfigError, match="did you mean 'medium'"):
        make_instance("meduim", 0)
