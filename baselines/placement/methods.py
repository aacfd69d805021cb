"""Placement search methods, one registry: Bayesian optimisation, random, exhaustive, greedy.

=====================  =====================================================================
name                   what it does
=====================  =====================================================================
``gp-ei``              ``skopt.gp_minimize``, expected improvement
``gp-pi``              ``gp_minimize``, probability of improvement
``gp-lcb``             ``gp_minimize``, lower confidence bound
``gp-hedge``           ``gp_minimize``, GP-Hedge portfolio of EI/PI/LCB
``rf``                 ``skopt.forest_minimize``, random forest, EI
``et``                 ``forest_minimize``, extra trees, EI
``gp-ei-tr``, ``rf-tr``, the same searches inside a trust region: every anchor within
``et-tr``              ``TRUST_RADIUS`` node ranks of the best greedy configuration's
``random``             uniform points of the same encoding (seeded numpy)
``exhaustive``         every feasible configuration (all splits; small instances only)
``greedy-*``           one configuration from a heuristic (:mod:`~baselines.placement.greedy`)
=====================  =====================================================================

Every search method minimises the *estimated* total JCT over the encoding of
:mod:`~baselines.placement.encoding`; the chosen configuration is then also scored with
the true lengths. BO starts from ``INITIAL_POINTS`` random points (or ``calls`` if
fewer). ``gbrt_minimize`` and ``dummy_minimize`` are not offered: scikit-optimize 0.10.2's
are broken under numpy 2 / scikit-learn 1.9.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.placement.cost import Configuration, PlacementCost
from baselines.placement.encoding import PlacementEncoding, enumerate_configurations
from baselines.placement.greedy import GREEDY
from baselines.placement.problem import PlacementInstance
from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError

#: Random initial points of every BO method.
INITIAL_POINTS = 5
#: Largest number of configurations exhaustive search enumerates.
MAX_EXHAUSTIVE = 200_000
#: skopt options per BO method: (minimiser, keyword arguments).
SKOPT_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "gp-ei": ("gp", {"acq_func": "EI"}),
    "gp-pi": ("gp", {"acq_func": "PI"}),
    "gp-lcb": ("gp", {"acq_func": "LCB"}),
    "gp-hedge": ("gp", {"acq_func": "gp_hedge"}),
    "rf": ("forest", {"base_estimator": "RF", "acq_func": "EI"}),
    "et": ("forest", {"base_estimator": "ET", "acq_func": "EI"}),
}
#: Trust-region methods: name -> the skopt method searching around the best greedy.
TRUST_REGION: dict[str, str] = {"gp-ei-tr": "gp-ei", "rf-tr": "rf", "et-tr": "et"}
#: Node ranks either side of the best greedy anchor a trust-region search may use.
TRUST_RADIUS = 4
METHODS: tuple[str, ...] = (
    *SKOPT_METHODS,
    *TRUST_REGION,
    "random",
    "exhaustive",
    *GREEDY,
)


@dataclass
class SearchResult:
    """What one search produced.

    Attributes:
        method: Method name.
        configuration: Best configuration found (by estimated cost).
        cost_estimated_s: Its total JCT with the estimated lengths.
        cost_true_s: Its total JCT with the true lengths.
        costs_s: Estimated total JCT of every evaluation, in order.
        suggest_s: Optimiser wall time before each evaluation (s).
        wall_s: Wall time of the whole search (s).
        seed: Seed of the search.
    """

    method: str
    configuration: Configuration
    cost_estimated_s: float
    cost_true_s: float
    costs_s: list[float] = field(default_factory=list)
    suggest_s: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    seed: int = 0

    @property
    def best_so_far_s(self) -> list[float]:
        """Best estimated total JCT after each evaluation."""
        return np.minimum.accumulate(np.asarray(self.costs_s)).tolist() if self.costs_s else []

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (numpy scalars converted)."""
        return {
            "method": self.method,
            "seed": self.seed,
            "placement": [[[int(n), int(g)] for n, g in p] for p in self.configuration],
            "total_jct_estimated_s": float(self.cost_estimated_s),
            "total_jct_true_s": float(self.cost_true_s),
            "num_evaluations": len(self.costs_s),
            "wall_s": float(self.wall_s),
            "trace": [
                {
                    "evaluation": i + 1,
                    "total_jct_s": float(c),
                    "best_so_far_s": float(b),
                    "suggest_s": float(s),
                }
                for i, (c, b, s) in enumerate(
                    zip(self.costs_s, self.best_so_far_s, self.suggest_s, strict=True)
                )
            ],
        }


class _Timed:
    """Objective wrapper: decodes points, records costs and time spent outside it."""

    def __init__(self, cost: Callable[[Configuration], float], decode: Callable) -> None:
        self.cost = cost
        self.decode = decode
        self.costs: list[float] = []
        self.suggest: list[float] = []
        self.best: tuple[float, Configuration] | None = None
        self._last = time.perf_counter()

    def __call__(self, x: Any) -> float:
        self.suggest.append(time.perf_counter() - self._last)
        config = self.decode(x)
        value = self.cost(config)
        self.costs.append(value)
        if self.best is None or value < self.best[0]:
            self.best = (value, config)
        self._last = time.perf_counter()
        return value


#: Points sampled to maximise the acquisition in an online (per-decision) search.
ONLINE_ACQ_POINTS = 500


def check_method(name: str) -> None:
    """Raise ConfigError for an unknown method name (with the closest name)."""
    if name not in METHODS:
        raise ConfigError(
            f"unknown placement method {name!r}{suggest(name, METHODS)}; "
            f"methods: {', '.join(METHODS)}"
        )


def check_budget(calls: Any, name: str = "calls", minimum: int = 1) -> int:
    """``calls`` as an int, or ConfigError naming the budget and the smallest it may be."""
    if isinstance(calls, bool) or not isinstance(calls, (int, np.integer)):
        raise ConfigError(f"{name} (evaluation budget) must be an integer, got {calls!r}")
    if calls < minimum:
        raise ConfigError(f"{name} (evaluation budget) must be >= {minimum}, got {calls}")
    return int(calls)


def check_skopt_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise ConfigError for an option the method's skopt minimiser does not take."""
    import inspect

    from skopt import forest_minimize, gp_minimize

    minimise = gp_minimize if SKOPT_METHODS[name][0] == "gp" else forest_minimize
    valid = [p for p in inspect.signature(minimise).parameters if p not in ("func", "dimensions")]
    for key in options:
        if key not in valid:
            raise ConfigError(
                f"unknown skopt option {key!r} for {minimise.__name__} (method {name!r})"
                f"{suggest(key, valid)}"
            )
    for key in ("n_calls", "n_initial_points", "random_state"):
        if key in options:
            raise ConfigError(f"skopt option {key!r} is set by run_method (use calls / seed)")


def online_optimizer(method: str, space: list[Any], seed: int, initial_points: int) -> Any:
    """A skopt ``Optimizer`` for one online placement search (ask/tell).

    The GP is ``gp_minimize``'s, but without kernel-fit restarts (they dominate a decision);
    the acquisition is maximised over ``ONLINE_ACQ_POINTS`` sampled points.
    """
    from skopt import Optimizer

    kind, options = SKOPT_METHODS[method]
    estimator: Any = options.get("base_estimator")
    if kind == "gp":
        from skopt.utils import cook_estimator, normalize_dimensions

        estimator = cook_estimator(
            "GP",
            space=normalize_dimensions(space),
            random_state=seed,
            noise="gaussian",
            n_restarts_optimizer=0,
        )
    return Optimizer(
        space,
        base_estimator=estimator,
        acq_func=options["acq_func"],
        acq_optimizer="sampling",
        acq_optimizer_kwargs={"n_points": ONLINE_ACQ_POINTS},
        n_initial_points=initial_points,
        random_state=seed,
    )


def _skopt(
    name: str,
    enc: PlacementEncoding,
    objective: _Timed,
    calls: int,
    seed: int,
    overrides: Mapping[str, Any],
    space: list[Any] | None = None,
) -> None:
    from skopt import forest_minimize, gp_minimize

    kind, options = SKOPT_METHODS[name]
    minimise = gp_minimize if kind == "gp" else forest_minimize
    with warnings.catch_warnings():
        # skopt warns when it proposes a point twice; the repeat is scored (and counted).
        warnings.simplefilter("ignore", UserWarning)
        minimise(
            objective,
            space or enc.skopt_space(),
            n_calls=calls,
            n_initial_points=min(INITIAL_POINTS, calls),
            random_state=seed,
            **{**options, **overrides},
        )


def run_method(
    name: str,
    instance: PlacementInstance,
    calls: int = 30,
    seed: int = 0,
    cost: PlacementCost | None = None,
    skopt_options: Mapping[str, Any] | None = None,
    warm_start: bool = True,
) -> SearchResult:
    """Search a placement for ``instance`` with method ``name``.

    Args:
        name: A name of :data:`METHODS`.
        instance: The problem.
        calls: Evaluation budget (search methods; exhaustive and greedy ignore it).
        seed: Seeds the search.
        cost: Estimated-length cost to reuse (shares its cache); default: a new one.
        skopt_options: Extra keyword arguments of ``gp_minimize`` / ``forest_minimize``
            (e.g. ``{"n_points": 500}``); default: skopt's defaults.
        warm_start: BO methods first evaluate every :data:`GREEDY` configuration (they
            count against ``calls``), so the result is never worse than the best greedy
            under the estimated cost; the optimiser spends the rest of the budget.

    Returns:
        The best configuration and the search trace.
    """
    check_method(name)
    calls = check_budget(calls)
    label, name, trust = name, TRUST_REGION.get(name, name), name in TRUST_REGION
    if trust and not warm_start:
        raise ConfigError(f"{label!r} searches around the greedy warm starts: keep warm_start")
    warm = warm_start and name in SKOPT_METHODS
    if warm and calls < len(GREEDY):
        raise ConfigError(
            f"calls={calls} is smaller than the {len(GREEDY)} greedy warm-start points of "
            f"{name!r}: give calls >= {len(GREEDY)} or warm_start=False"
        )
    if skopt_options and name in SKOPT_METHODS:
        check_skopt_options(name, skopt_options)
    cost = cost or PlacementCost(instance)
    enc = PlacementEncoding(
        instance.num_gpus, instance.free_gpus, instance.node_speed, instance.node_load
    )
    if name in SKOPT_METHODS:
        import skopt  # noqa: F401  (import before timing: the first suggestion pays no import)
    objective = _Timed(cost, enc.decode)
    start = time.perf_counter()
    if name in GREEDY:
        config = GREEDY[name](instance)
        objective.decode = lambda c: c
        objective(config)
    elif name == "exhaustive":
        objective.decode = lambda c: c
        for config in enumerate_configurations(
            instance.num_gpus, instance.free_gpus, MAX_EXHAUSTIVE
        ):
            objective(config)
    elif enc.num_dims == 0 or name == "random":
        rng = np.random.default_rng(seed)
        for _ in range(calls if enc.num_dims else 1):
            objective(enc.sample(rng))
    else:
        seeds = list(GREEDY.values()) if warm else []
        for heuristic in seeds:
            objective.decode = lambda c: c
            objective(heuristic(instance))
        space = None
        if trust and objective.best is not None:
            space = enc.trust_region(enc.encode(objective.best[1]), TRUST_RADIUS)
        objective.decode = enc.decode
        if calls > len(seeds):
            _skopt(name, enc, objective, calls - len(seeds), seed, skopt_options or {}, space)
    wall = time.perf_counter() - start
    assert objective.best is not None
    best_cost, best_config = objective.best
    return SearchResult(
        method=label,
        configuration=best_config,
        cost_estimated_s=best_cost,
        cost_true_s=PlacementCost(instance, truth=True)(best_config),
        costs_s=objective.costs,
        suggest_s=objective.suggest,
        wall_s=wall,
        seed=seed,
    )
