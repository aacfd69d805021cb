"""Fork a running simulation and play it to the end: the what-if oracle.

:func:`fork` copies a :class:`~cluster_envs.sim.engine.Simulator` together with the state
of the policy driving it (one deep copy, so anything the two share stays shared in the
copy); neither original is touched. :func:`play_out` then runs the copy event by event to
the end of the episode, asking the copied policy at every instant with a queue exactly
as the event-driven runner does, and returns the episode metrics. Because the simulator
and the policy are deterministic given their state (their random generators are copied
too), a fork played with the same decisions reproduces the un-forked episode exactly.

:func:`play_candidate` is the oracle a placer or an RL agent needs: apply one candidate
decision to a fork, let the fixed policy make every later decision, and report what
actually happened. It reads true job lengths (it *is* the simulation), so it is for
measuring objectives and policies, never for a policy to consult.

This module imports nothing above ``cluster_envs.sim`` (a policy is anything with a
``decide(view) -> Decision`` method).
"""

from __future__ import annotations

import copy
import math
from typing import Any, Protocol, TypeVar, overload

from cluster_envs.errors import ClusterEnvsError
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.sim.sampled import add_sampled_arrivals
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import Decision

#: A policy asked this many times at one instant without settling is reported as a bug.
MAX_DECISIONS_PER_INSTANT = 100_000


class Decider(Protocol):
    """Anything that turns a cluster view into a decision (a SchedulingPolicy)."""

    def decide(self, view: ClusterView) -> Decision:
        """The decision at this instant."""
        ...


P = TypeVar("P")


class PlayOutStalledError(ClusterEnvsError, RuntimeError):
    """A played-out fork left jobs queued on an idle cluster with nothing left to happen."""


@overload
def fork(sim: Simulator, policy: P) -> tuple[Simulator, P]: ...
@overload
def fork(sim: Simulator, policy: None = None) -> tuple[Simulator, None]: ...
def fork(sim: Simulator, policy: P | None = None) -> tuple[Simulator, P | None]:
    """An independent copy of ``sim`` and ``policy`` (deep-copied together).

    Args:
        sim: The running simulator.
        policy: The policy's current state (``None``: fork the simulator only).

    Returns:
        ``(sim_copy, policy_copy)``; mutating either leaves the originals unchanged.
    """
    return copy.deepcopy((sim, policy))


def fork_believed(
    sim: Simulator, policy: P, sampled_arrivals: int = 0, seed: int | tuple[int, ...] = 0
) -> tuple[Simulator, P]:
    """A fork in which only what a scheduler knows now is true (for a lookahead policy).

    Unlike :func:`fork`, the copy's jobs last as long as the scheduler *estimates*
    (:meth:`~cluster_envs.sim.engine.Simulator.believe_estimates`: true lengths replaced
    by the frozen estimates, future arrivals dropped), so a policy may consult it.
    With ``sampled_arrivals=K > 0`` the dropped future is replaced by ``K`` jobs resampled
    from those already submitted (:func:`~cluster_envs.sim.sampled.add_sampled_arrivals`,
    drawn with ``seed``); the default ``0`` adds none.
    """
    sim_copy, policy_copy = fork(sim, policy)
    sim_copy.believe_estimates()
    if sampled_arrivals:
        add_sampled_arrivals(sim_copy, sampled_arrivals, seed)
    return sim_copy, policy_copy


def play_ahead(sim: Simulator, policy: Decider, until_s: float) -> None:
    """Run ``sim`` event by event under ``policy`` up to ``until_s`` (or until nothing is
    left to happen: with future arrivals dropped the episode never reports done)."""
    while True:
        t = sim.next_event_time()
        if t == math.inf:  # nothing left to happen
            return
        if t > until_s:
            sim.advance_to(until_s)
            return
        sim.step()
        if sim.queue:
            settle(sim, policy)


def settle(sim: Simulator, policy: Decider) -> bool:
    """Ask ``policy`` at this instant until it decides nothing; returns whether it acted."""
    for count in range(MAX_DECISIONS_PER_INSTANT):
        if not sim.apply(policy.decide(sim.view())):
            return count > 0
    raise PlayOutStalledError(
        f"policy {getattr(policy, 'name', policy)!r} made {MAX_DECISIONS_PER_INSTANT} "
        f"decisions at t={sim.now_s:.1f}s without settling"
    )


def play_out(sim: Simulator, policy: Decider, horizon_s: float | None = None) -> dict[str, float]:
    """Run ``sim`` (event-driven) to the end of the episode under ``policy``; its metrics.

    Mutates ``sim`` and ``policy``: pass forks to keep the originals.

    Args:
        sim: The simulator, at any instant.
        policy: Makes every later decision.
        horizon_s: Stop at this simulated time (s); ``None``: ``sim.config.horizon_s``.

    Returns:
        :func:`~cluster_envs.sim.metrics.compute_metrics` of the played episode.

    Raises:
        PlayOutStalledError: The policy leaves jobs queued forever.
    """
    limit = sim.config.horizon_s if horizon_s is None else horizon_s
    horizon = math.inf if limit is None else float(limit)
    while not sim.done:
        t = sim.next_event_time()
        if t > horizon:
            sim.advance_to(horizon)
            break
        if t == math.inf:
            raise PlayOutStalledError(
                f"{len(sim.queue)} job(s) queued at t={sim.now_s:.1f}s with "
                f"{sim.inventory.num_free} free GPUs and no future event"
            )
        sim.step()
        if sim.queue:
            settle(sim, policy)
    sim.record.sample(sim)
    return compute_metrics(sim)


def play_candidate(
    sim: Simulator,
    policy: Any,
    decision: Decision,
    horizon_s: float | None = None,
) -> dict[str, float]:
    """Metrics of the episode if ``decision`` were applied now and ``policy`` did the rest.

    The decision is applied to a fork, the (forked) policy settles the rest of this
    instant and makes every later decision; ``sim`` and ``policy`` are left untouched.

    Args:
        sim: The running simulator, at a decision instant.
        policy: The policy making every later decision (its current state is forked).
        decision: The candidate decision (e.g. one job's ``Allocate``).
        horizon_s: As in :func:`play_out`.

    Returns:
        The realised episode metrics (``avg_jct_s``, ``makespan_s``, ...).
    """
    sim_copy, policy_copy = fork(sim, policy)
    sim_copy.apply(decision)
    if sim_copy.queue:
        settle(sim_copy, policy_copy)
    return play_out(sim_copy, policy_copy, horizon_s)
