"""The one episode driver: how simulated time advances between decisions.

The no-gym runner (:mod:`cluster_envs.runner`) and every Gymnasium env
(:mod:`cluster_envs.envs.base`) move the simulator with an :class:`EpisodeDriver`, so
the time rules -- event-driven vs fixed rounds, the horizon ``SimConfig.horizon_s``,
skipping empty rounds and stall detection -- are written once and the parity
"env == runner" holds by construction. No gymnasium import here.

* Event-driven (``SimConfig.time_slice_s is None``): :meth:`EpisodeDriver.advance`
  processes arrival/completion instants until ``is_decision_point()`` holds.
* Rounds (``time_slice_s`` set): the clock stops every ``time_slice_s`` at a round with
  a decision point; rounds before the next arrival with nothing in the system are
  skipped. After each round's decision the caller calls :meth:`EpisodeDriver.end_round`.
* Either mode stops at the horizon (``truncated``) or when the workload is drained
  (``terminated``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from cluster_envs.errors import ClusterEnvsError
from cluster_envs.sim.engine import Simulator


class SimulationStalledError(ClusterEnvsError, RuntimeError):
    """The policy left jobs queued on an idle cluster with nothing left to happen."""


@dataclass(frozen=True)
class Outcome:
    """Where :meth:`EpisodeDriver.advance` stopped.

    Attributes:
        terminated: Every job has finished.
        truncated: The horizon stopped the episode first.
    """

    terminated: bool = False
    truncated: bool = False

    @property
    def ended(self) -> bool:
        """The episode is over (terminated or truncated)."""
        return self.terminated or self.truncated


DECISION = Outcome()
TERMINATED = Outcome(terminated=True)
TRUNCATED = Outcome(truncated=True)


def _never() -> None:
    return None


class EpisodeDriver:
    """Advances ``sim`` from one decision point to the next (see the module docstring).

    Args:
        sim: The episode's simulator (only its public transitions are called).
        is_decision_point: Whether the policy / agent is to be asked now.
        on_advance: Called after every change of simulated time (render bookkeeping).
        stall_message: Builds the message of :class:`SimulationStalledError` when jobs
            wait, no decision is possible and nothing is left to happen (event mode).
    """

    def __init__(
        self,
        sim: Simulator,
        is_decision_point: Callable[[], bool],
        on_advance: Callable[[], None] = _never,
        stall_message: Callable[[], str] | None = None,
    ) -> None:
        self.sim = sim
        self.is_decision_point = is_decision_point
        self.on_advance = on_advance
        self.stall_message = stall_message or self._default_stall_message
        horizon = sim.config.horizon_s
        self.horizon_s = math.inf if horizon is None else float(horizon)
        self.slice_s = sim.config.time_slice_s
        #: Rounds mode: the start time of the current round (s).
        self.round_s = 0.0
        #: Rounds mode: rounds in a row with jobs waiting and nothing left to happen.
        self.num_stalled = 0

    def _default_stall_message(self) -> str:
        sim = self.sim
        return (
            f"{len(sim.queue)} job(s) queued at t={sim.now_s:.1f}s with "
            f"{sim.inventory.num_free} free GPUs, no decision possible and no future event"
        )

    def advance(self, min_one_event: bool = False) -> Outcome:
        """Run to the next decision point, the horizon or the end of the workload.

        Args:
            min_one_event: Event mode: process at least one instant first (after a
                "wait" or once the policy settled). Ignored in rounds mode, where
                :meth:`end_round` moves the clock.
        """
        if self.slice_s is None:
            return self._advance_events(min_one_event)
        return self._advance_rounds()

    def _advance_events(self, min_one_event: bool) -> Outcome:
        sim = self.sim
        while True:
            if sim.done:
                return TERMINATED
            if not min_one_event and self.is_decision_point():
                return DECISION
            t = sim.next_event_time()
            if t > self.horizon_s:
                sim.advance_to(self.horizon_s)
                self.on_advance()
                return TRUNCATED
            if t == math.inf:
                raise SimulationStalledError(self.stall_message())
            sim.step()
            self.on_advance()
            min_one_event = False

    def _round_length_s(self) -> float:
        """Rounds mode: the round length (s); an event-driven driver has none."""
        if self.slice_s is None:
            raise RuntimeError("rounds-mode call on an event-driven EpisodeDriver")
        return self.slice_s

    def _advance_rounds(self) -> Outcome:
        sim = self.sim
        slice_s = self._round_length_s()
        while True:
            if sim.done:
                return TERMINATED
            if self.round_s > self.horizon_s:
                sim.advance_to(self.horizon_s)
                self.on_advance()
                return TRUNCATED
            sim.advance_to(self.round_s)
            self.on_advance()
            if sim.done:
                return TERMINATED
            if self.is_decision_point():
                return DECISION
            self._skip_to(sim.next_event_time())
            self.round_s += slice_s

    def _skip_to(self, next_event_s: float) -> None:
        """Idle until ``next_event_s``: jump to the round just before it."""
        slice_s = self._round_length_s()
        self.round_s = max(self.round_s, math.ceil(next_event_s / slice_s) * slice_s - slice_s)

    def end_round(self, decided: bool) -> bool:
        """Rounds mode: close the round after its decision; returns whether it stalled.

        Args:
            decided: Whether the round's decision changed anything.

        A round stalls when nothing runs, nothing was decided and no event is left;
        :attr:`num_stalled` counts such rounds in a row. A round with nothing running
        or queued skips the empty rounds before the next arrival.
        """
        sim = self.sim
        stalled = False
        if not sim.active and not decided:
            nxt = sim.next_event_time()
            stalled = nxt == math.inf
            if not stalled and not sim.queue:
                self._skip_to(nxt)
        self.num_stalled = self.num_stalled + 1 if stalled else 0
        self.round_s += self._round_length_s()
        return stalled
