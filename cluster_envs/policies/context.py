"""How an env tells any policy its context, without naming a policy.

An env (or a benchmark) builds a :class:`PolicyContext` and passes it to
:func:`configure_policy`; a policy that wants it defines an optional
``configure(context)`` method and reads the fields it uses (an allocation heuristic its
number of slots, SLAQ the slice length and the rescale cost). Policies without
``configure`` are returned unchanged, so any policy works with any env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

P = TypeVar("P")


@dataclass(frozen=True)
class PolicyContext:
    """What an env knows that a policy may need (None: not defined by this env).

    Attributes:
        num_slots: Jobs an allocation decision covers (the env's slots).
        time_slice_s: The re-allocation interval (s); None for event-driven envs.
        rescale_cost_s: Time a malleable job loses to a changed allocation (s).
        window: Queued jobs a moldable decision may pick from (the env's window).
        levels: GPU counts a moldable job may start with (the env's levels).
        quality_window_s: ``W`` of the env's ``quality_auc`` objective (s after each
            submission; MetisAllocation).
    """

    num_slots: int | None = None
    time_slice_s: float | None = None
    rescale_cost_s: float | None = None
    window: int | None = None
    levels: tuple[int, ...] | None = None
    quality_window_s: float | None = None


def configure_policy(policy: P, context: PolicyContext) -> P:
    """Call ``policy.configure(context)`` if the policy defines it; returns ``policy``."""
    configure = getattr(policy, "configure", None)
    if callable(configure):
        configure(context)
    return policy
