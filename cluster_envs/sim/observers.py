"""Observer hooks: how metrics and quality accounting follow a simulation.

An observer is any object with some of the callbacks of :class:`SimObserver` (subclass it
to get no-op defaults); register it with :meth:`Simulator.add_observer`. Callbacks see the
simulator through its public, read-only API and must not change it. They are called in
registration order; a callback an observer does not define (or leaves as the
:class:`SimObserver` no-op) costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator
    from cluster_envs.types import Placement

#: The callback names the simulator dispatches.
CALLBACKS = ("on_advance", "on_decision", "on_release", "on_finish")


class SimObserver:
    """Base class of observers; every callback is a no-op until overridden."""

    def on_advance(self, sim: Simulator, t0: float, t1: float) -> None:
        """Time advanced over ``[t0, t1)`` with the state constant (``t1 > t0``).

        Called before the clock moves: ``sim.now_s == t0`` and the state seen is the one
        that held over the whole interval (job rates, queue, running set, free GPUs).
        """

    def on_decision(self, sim: Simulator, num_changed: int) -> None:
        """A decision changed ``num_changed >= 1`` jobs; ``sim`` shows the new state."""

    def on_release(
        self, sim: Simulator, job_id: int, start_s: float, end_s: float, placement: Placement
    ) -> None:
        """Job ``job_id`` gave back ``placement``, held from ``start_s`` to ``end_s`` (now).

        Fired on completion, preemption and rescale, before the GPUs are freed.
        """

    def on_finish(self, sim: Simulator, job_id: int) -> None:
        """Job ``job_id`` finished at ``sim.now_s`` (its GPUs are already free)."""


def bound_callbacks(observer: object) -> dict[str, object]:
    """The callbacks ``observer`` really implements, bound, keyed by name."""
    found = {}
    for name in CALLBACKS:
        method = getattr(observer, name, None)
        if method is None or getattr(type(observer), name, None) is getattr(SimObserver, name):
            continue
        if not callable(method):
            raise TypeError(f"observer {observer!r}: {name} is not callable")
        found[name] = method
    return found
