"""The one action rule of every cluster-envs env.

* **Form.** A ``Discrete`` action may be any integral scalar: ``0``, ``np.int64(0)``,
  ``np.array(0)``, ``np.array([0])`` and ``0.0`` all mean 0. A ``MultiDiscrete`` action
  is an array-like of one integral value per dimension. Anything else -- a fraction
  (``2.7``), NaN, infinity, a string, the wrong number of entries -- raises
  :class:`~cluster_envs.errors.InvalidActionError` (a ``ValueError``) naming the action
  and the space.
* **Feasibility.** A well-formed action that is out of range or masked
  (``action_masks()``) is *invalid*, never a crash: ``info["invalid_action"]`` is True
  and ``info["num_invalid_actions"]`` counts it. A ``Discrete`` env then takes its wait
  action (``wait_action``) if allowed now, else the first allowed action, which also
  counts in ``info["num_forced_actions"]``. A ``MultiDiscrete`` env projects every entry
  onto a feasible allocation (``info["num_projected"]``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.errors import InvalidActionError


def _integral(value: Any, action: Any, space: spaces.Space) -> int:
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        return int(value)
    raise InvalidActionError(f"action {action!r} is not an integral value of {space}")


def discrete_action(action: Any, space: spaces.Discrete) -> int:
    """``action`` as a plain int (see the module docstring); range is not checked."""
    if type(action) is int:  # the common case: what the general path returns for it
        return action
    try:
        values = np.asarray(action)
    except (TypeError, ValueError) as err:  # ragged nested sequences
        raise InvalidActionError(f"action {action!r} is not a value of {space}") from err
    if values.size != 1:
        raise InvalidActionError(f"action {action!r} is not one integer of {space}")
    return _integral(values.reshape(()).item(), action, space)


def multi_discrete_action(action: Any, space: spaces.MultiDiscrete) -> np.ndarray:
    """``action`` as an int64 vector of ``len(space.nvec)`` entries; range not checked."""
    try:
        values = np.asarray(action).reshape(-1)
    except (TypeError, ValueError) as err:
        raise InvalidActionError(f"action {action!r} is not a value of {space}") from err
    if values.shape != (len(space.nvec),):
        raise InvalidActionError(
            f"action must have {len(space.nvec)} entries for {space}, got shape {values.shape}"
        )
    return np.array([_integral(v, action, space) for v in values.tolist()], dtype=np.int64)
