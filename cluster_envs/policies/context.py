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


#: The least rescale cost per slice length at which ``switch-short`` (baselines/switch.py)
#: and its teacher (``switch-short:...``, agents/teacher.py) switch: between the 600 s
#: slices' 0.05 and the 300 s slices' 0.10 of 30 s rescales (geometric middle).
SHORT_SLICE_RESCALE_SHARE = 0.07


def switching(context: PolicyContext, min_rescale_share: float | None) -> bool:
    """Whether a starvation switch with ``min_rescale_share`` (None: always) switches under
    ``context``: its rescale cost is at least that share of its slice. A context without a
    slice length or rescale cost (an event-driven env) switches."""
    if min_rescale_share is None or not context.time_slice_s or context.rescale_cost_s is None:
        return True
    return context.rescale_cost_s / context.time_slice_s >= min_rescale_share


def configure_policy(policy: P, context: PolicyContext) -> P:
    """Call ``policy.configure(context)`` if the policy defines it; returns ``policy``."""
    configure = getattr(policy, "configure", None)
    if callable(configure):
        configure(context)
    return policy
