"""Deep copies that do not walk containers of immutable values (what a fork copies).

A fork (:mod:`cluster_envs.sim.fork`) deep-copies the simulator and the policy driving
it, and a lookahead teacher forks several times a decision. ``copy.deepcopy`` visits
every element of every container: per-job lists of placements, speed models, flags and
counts are walked element by element only to find that each element is immutable. The
classes that hold such lists name them, and :func:`copy_sharing` copies those one level
(a new list with the same elements) and everything else as ``copy.deepcopy`` would. The
copy is equal to ``copy.deepcopy``'s: every container that can change is new, every
value it holds is immutable and therefore shared (as ``deepcopy`` shares ints, floats,
strings and the :class:`~cluster_envs.types.Immutable` values).
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any, TypeVar

T = TypeVar("T")


def shallow(value: T, memo: dict[int, Any]) -> T:
    """``value`` (a tuple, list, dict, set or numpy array of immutable elements) copied one
    level, through ``memo`` (a container two attributes share is copied once); a tuple
    and ``None`` are shared."""
    if value is None:
        return value
    done = memo.get(id(value))
    if done is not None:
        return done  # type: ignore[no-any-return]
    twin = value if type(value) is tuple else value.copy()  # type: ignore[attr-defined]
    memo[id(value)] = twin
    memo.setdefault(id(memo), []).append(value)  # as deepcopy: keep the original alive
    return twin  # type: ignore[no-any-return]


def copy_sharing(obj: T, memo: dict[int, Any], values: Collection[str]) -> T:
    """``copy.deepcopy(obj, memo)``, with the attributes named in ``values`` (containers of
    immutable elements) copied by :func:`shallow`; for a class's ``__deepcopy__``.

    Follows ``__getstate__`` / ``__setstate__`` where the class defines them (a
    simulator's state drops its read-only windows, and ``__setstate__`` rebuilds them).
    """
    cls = type(obj)
    twin = cls.__new__(cls)
    memo[id(obj)] = twin
    state: dict[str, Any] = obj.__getstate__()  # type: ignore[assignment]  # (the __dict__)
    new = {
        name: shallow(value, memo) if name in values else copy.deepcopy(value, memo)
        for name, value in state.items()
    }
    setstate = getattr(twin, "__setstate__", None)
    if setstate is not None:
        setstate(new)
    else:
        twin.__dict__.update(new)
    return twin


__all__ = ["copy_sharing", "shallow"]
