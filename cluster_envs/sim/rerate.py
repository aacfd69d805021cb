"""Re-rating the running neighbours of a job that started or stopped: the simulator's
hot path under contention (every start and finish re-rates the jobs sharing the nodes).

:class:`RateRefresh` is a base of :class:`~cluster_envs.sim.engine.Simulator` (its state
is the engine's own, as :class:`~cluster_envs.sim.state_api.SimulatorState`'s is). Its
``_refresh_rates`` is ``_rate_of`` + ``_set_rate`` per neighbour with the calls inlined
for fixed-rate jobs: the contention divisors of a one-node job, the rate-cache hit, the
progress sync and the re-keyed completion are the same float64 operations in the same
order as the methods they stand for (bit-identical), without five Python calls per
neighbour. Anything else (adaptive-batch jobs, cache misses, multi-node placements'
divisors) goes through the methods themselves.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from cluster_envs.sim.events import EV_COMPLETE
from cluster_envs.types import JobState

if TYPE_CHECKING:
    import numpy as np

    from cluster_envs.sim.events import EventQueue
    from cluster_envs.sim.rates import RateModel
    from cluster_envs.types import Placement

_RUNNING = int(JobState.RUNNING)
#: Progress within this many iterations of the total counts as complete (float noise).
PROGRESS_EPS = 1e-9


class RateRefresh:
    """The engine's neighbour re-rating (see the module docstring)."""

    # The engine's storage (declared for the type checker).
    _state: np.ndarray
    _rate: np.ndarray
    _progress: np.ndarray
    _last_update_s: np.ndarray
    _attained_gpu_s: np.ndarray
    _num_gpus_held: np.ndarray
    _total: np.ndarray
    _placement: list[Placement]
    _goodput: list[Any]
    _speeds: list[Any]
    _rates: RateModel
    _events: EventQueue
    _now_s: float

    def _rate_of(self, j: int, placement: Placement) -> float:  # the engine's
        raise NotImplementedError

    def _refresh_rates(self, jobs: set[int]) -> None:
        """Recompute the rates of running ``jobs`` after their neighbours changed."""
        if not jobs:
            return
        state, rates, placements = self._state, self._rate, self._placement
        goodput, speeds, model = self._goodput, self._speeds, self._rates
        fast, contention = model._fast, model.contention
        one_node_ok = contention.enabled  # else factors() is (1.0, 1.0) for every job
        interference, jobs_on = contention.node_interference, contention.jobs_on
        progress, last, attained = self._progress, self._last_update_s, self._attained_gpu_s
        held, totals, events = self._num_gpus_held, self._total, self._events
        version, heap, now = events.version, events.heap, self._now_s
        for k in sorted(jobs):
            if state.item(k) != _RUNNING:
                continue
            placement = placements[k]
            if goodput[k]:
                rate = self._rate_of(k, placement)
            else:
                if one_node_ok and len(placement) == 1:  # Contention.factors' one-node case
                    if interference > 0:
                        crowd = len(jobs_on[placement[0][0]])
                        compute_div = 1.0 + interference * (crowd - 1) if crowd > 1 else 1.0
                    else:
                        compute_div = 1.0
                    network_div = 1.0
                else:
                    compute_div, network_div = contention.factors(k, placement)
                speed = speeds[k]
                hit = fast.get((id(speed), placement, compute_div, network_div))
                rate = model.fixed_rate(k, speed, placement) if hit is None else hit
            if rate == rates.item(k):
                continue
            # _set_rate(k, rate): its _sync_progress(k), events.invalidate(k) and push
            dt = now - last.item(k)
            if dt > 0:
                progress[k] = progress.item(k) + rates.item(k) * dt
                attained[k] = attained.item(k) + held.item(k) * dt
                last[k] = now
            rate = float(rate)
            rates[k] = rate
            version[k] += 1
            if rate > 0:
                total = totals.item(k)
                remaining = max(total - progress.item(k), 0.0)
                if remaining <= PROGRESS_EPS * total:
                    remaining = 0.0
                heapq.heappush(heap, (now + remaining / rate, EV_COMPLETE, k, version[k]))
