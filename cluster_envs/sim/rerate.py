"""Re-rating the running neighbours of a job that started or stopped: the simulator's
hot path under contention (every start and finish re-rates the jobs sharing the nodes).

:func:`refresh_rates` is ``Simulator._rate_of`` + ``_set_rate`` per neighbour with the
calls inlined for fixed-rate jobs: the contention divisors of a one-node job, the
rate-cache hit, the progress sync and the re-keyed completion are the same float64
operations in the same order as the methods they stand for (bit-identical), without
five Python calls per neighbour. Anything else (adaptive-batch jobs, cache misses,
multi-node placements' divisors) goes through the methods themselves.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from cluster_envs.sim.events import EV_COMPLETE
from cluster_envs.types import JobState

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

_RUNNING = int(JobState.RUNNING)


def refresh_rates(sim: Simulator, jobs: set[int], progress_eps: float) -> None:
    """Recompute the rates of the running ``jobs`` (``Simulator._refresh_rates``)."""
    state, rates, placements = sim._state, sim._rate, sim._placement
    goodput, speeds, model = sim._goodput, sim._speeds, sim._rates
    fast, contention = model._fast, model.contention
    one_node_ok = contention.enabled  # else factors() is (1.0, 1.0) for every job
    interference, jobs_on = contention.node_interference, contention.jobs_on
    progress, last, attained = sim._progress, sim._last_update_s, sim._attained_gpu_s
    held, totals, events = sim._num_gpus_held, sim._total, sim._events
    version, heap, now = events.version, events.heap, sim._now_s
    for k in sorted(jobs):
        if state.item(k) != _RUNNING:
            continue
        placement = placements[k]
        if goodput[k]:
            rate = sim._rate_of(k, placement)
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
            rate = fast.get((id(speed), placement, compute_div, network_div))
            if rate is None:
                rate = model.fixed_rate(k, speed, placement)
        if rate == rates.item(k):
            continue
        # Simulator._set_rate(k, rate), its _sync_progress(k) and events.invalidate/push
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
            if remaining <= progress_eps * total:
                remaining = 0.0
            heapq.heappush(heap, (now + remaining / rate, EV_COMPLETE, k, version[k]))
