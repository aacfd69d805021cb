"""Batch job placement on heterogeneous GPU clusters: instances, cost, encodings, placers.

* :mod:`~baselines.placement.problem` -- :class:`PlacementInstance` (the problem),
* :mod:`~baselines.placement.instance_json` -- its JSON file format and reader,
* :mod:`~baselines.placement.presets` -- generated instances ``small``/``medium``/``large``,
* :mod:`~baselines.placement.cost` -- the simulator-backed total-JCT cost,
* :mod:`~baselines.placement.encoding` -- the search space and its repair rule,
* :mod:`~baselines.placement.methods` -- Bayesian optimisation (scikit-optimize), random and
  exhaustive search, greedy heuristics, one registry,
* :mod:`~baselines.placement.online` -- the BO placer as a PlacementPolicy inside episodes.
"""

from baselines.placement.cost import PlacementCost
from baselines.placement.encoding import PlacementEncoding
from baselines.placement.instance_json import instance_from_dict, load_instance
from baselines.placement.problem import BatchJob, ExistingJob, PlacementInstance

__all__ = [
    "BatchJob",
    "ExistingJob",
    "PlacementCost",
    "PlacementEncoding",
    "PlacementInstance",
    "instance_from_dict",
    "load_instance",
]
