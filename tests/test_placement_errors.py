"""A bad method name, evaluation budget or search space fails with a message naming it."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.placement.encoding import PlacementEncoding
from baselines.placement.methods import run_method
from baselines.placement.online import BOPlacement, BOScheduler
from baselines.placement.presets import make_instance
from cluster_envs.errors import ConfigError


@pytest.fixture(scope="module")
def small():
    return make_instance("small", 0)


@pytest.mark.parametrize(
    ("name", "message"),
    [("gp_ei", "did you mean 'gp-ei'"), ("forest", "unknown placement method 'forest'")],
)
def test_bad_method_name(small, name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_method(name, small)
    with pytest.raises(ConfigError, match=message):
        BOPlacement(name)


def test_online_placement_refuses_a_method_that_is_not_bo() -> None:
    with pytest.raises(ConfigError, match="online placement needs a BO method, got 'random'"):
        BOScheduler("random")


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        (0, r"calls \(evaluation budget\) must be >= 1, got 0"),
        (-3, r"must be >= 1, got -3"),
        (2.5, r"must be an integer, got 2.5"),
        (True, r"must be an integer, got True"),
        (2, r"calls=2 is smaller than the 4 greedy warm-start points of 'gp-ei'"),
    ],
)
def test_bad_budget(small, calls, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_method("gp-ei", small, calls=calls)


def test_small_budget_is_fine_without_warm_start(small) -> None:
    result = run_method("random", small, calls=2)
    assert len(result.costs_s) == 2


@pytest.mark.parametrize("budget", [0, 1.5])
def test_bad_online_budget(budget) -> None:
    with pytest.raises(ConfigError, match="budget .evaluation budget. must be"):
        BOPlacement("gp-ei", budget=budget)


def test_bad_skopt_option_names_the_option(small) -> None:
    with pytest.raises(
        ConfigError, match="unknown skopt option 'n_pointz'.*did you mean 'n_points'"
    ):
        run_method("gp-ei", small, calls=6, skopt_options={"n_pointz": 10})
    with pytest.raises(ConfigError, match="'n_calls' is set by run_method"):
        run_method("rf", small, calls=6, skopt_options={"n_calls": 10})


SPEED = np.ones(3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_gpus": []}, "no jobs to place"),
        ({"num_gpus": [0]}, "every job needs >= 1 GPU"),
        ({"free": np.array([], dtype=int), "node_speed": np.array([])}, "one count per node"),
        ({"free": np.array([2, -1, 2])}, "negative free GPUs"),
        ({"node_speed": np.ones(2)}, "3 nodes of free GPUs but 2 speeds"),
        ({"max_spread": 0}, "max_spread must be >= 1, got 0"),
        ({"num_gpus": [7]}, "jobs need 7 GPUs but only 6 are free"),
    ],
)
def test_bad_space(kwargs: dict, message: str) -> None:
    args = {"num_gpus": [2], "free": np.array([2, 2, 2]), "node_speed": SPEED, **kwargs}
    with pytest.raises(ConfigError, match=message):
        PlacementEncoding(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"anchor": "best_greedy"},
            "anchor must be one of first-fit, best-greedy, got 'best_greedy'",
        ),
        ({"improvement_margin": 1.0}, r"improvement_margin must be in \[0, 1\), got 1.0"),
        ({"improvement_margin": -0.1}, r"improvement_margin must be in \[0, 1\), got -0.1"),
        ({"fragmentation_weight": -0.5}, "fragmentation_weight must be a finite number >= 0"),
        ({"fragmentation_weight": float("nan")}, "fragmentation_weight must be .* got nan"),
        ({"fragmentation_weight": float("inf")}, "fragmentation_weight must be .* got inf"),
        ({"fragmentation_weight": "0.5"}, "fragmentation_weight must be .* got '0.5'"),
        ({"fragmentation_weight": True}, "fragmentation_weight must be .* got True"),
    ],
)
def test_bad_online_anchor_or_margin(kwargs, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BOScheduler("gp-ei", **kwargs)
