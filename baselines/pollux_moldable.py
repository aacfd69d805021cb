"""Pollux restricted to moldable jobs (``pollux-moldable``), for MoldableScheduling-v0.

MoldableScheduling-v0 starts a queued job once, at one of the env's parallelism
``levels``, and never resizes it; batch sizes are the jobs' own. This variant keeps
what of Pollux (:mod:`baselines.pollux`) fits those rules and says what it drops:

* kept: the objective -- the power mean with exponent ``p`` (fairness knob, default
  -1) of per-job *speedups* ``throughput(n) / throughput(1)``, an unstarted job
  counting as speedup 0 (so for ``p <= 0`` as many jobs as possible get GPUs first);
  the greedy marginal-gain search of :class:`~baselines.pollux.PolluxAllocator`.
* restricted: only the *queued* jobs of the env's window share the *free* GPUs (running
  jobs keep theirs: no resizing, hence no restart penalty either); GPU counts are the
  env's levels clipped to each job's range; no batch-size adaptation (the speedup is
  the throughput model's at the job's fixed batch, not goodput); no exploration cap
  (a rigid job never profiles a smaller size first).

Jobs are placed with consolidated first-fit (the env's rule), in decreasing size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from baselines.moldable import DEFAULT_LEVELS, MoldableScheduler, Plan, packed_rate
from baselines.pollux import DEFAULT_P, SPEEDUP_EPS
from cluster_envs.errors import ConfigError
from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import Placement


class PolluxMoldableScheduler(MoldableScheduler):
    """Pollux's power-mean speedup objective over queued jobs at the env's levels.

    Args:
        levels: Allowed GPU counts, ascending (clipped to each job's range).
        window: Consider only the first ``window`` queued jobs (None: the whole queue).
        placement: Placement rule (default: consolidated first-fit, as the env).
        p: Power-mean exponent (fairness knob), any finite real (0 = geometric mean).
    """

    name = "pollux-moldable"

    def __init__(
        self,
        levels: Sequence[int] = DEFAULT_LEVELS,
        window: int | None = None,
        placement: PlacementPolicy | None = None,
        p: float = DEFAULT_P,
    ) -> None:
        super().__init__(levels, window, placement)
        if not math.isfinite(p):
            raise ConfigError(f"pollux-moldable needs a finite p, got {p}")
        self.p = float(p)
        self._time_s: float | None = None
        self._sizes: dict[int, int] = {}
        self._order: list[int] = []

    def reset(self, seed: int | None = None) -> None:
        """Forget the sizes chosen at the last decision instant."""
        self._time_s = None
        self._sizes = {}
        self._order = []

    def _utility(self, speedup: float) -> float:
        v = speedup + SPEEDUP_EPS
        return math.log(v) if self.p == 0 else math.copysign(1.0, self.p) * v**self.p

    def _prepare(self, view: ClusterView, plan: Plan) -> None:
        """Choose every window job's level at once (greedy on the power mean).

        Asked again at the same instant (the env asks once per start), the sizes chosen
        first stand, so one start per call gives the same starts as all at once.
        """
        if view.time_s == self._time_s:
            queued = set(plan.window())
            self._order = sorted(
                (j for j, n in self._sizes.items() if n > 0 and j in queued),
                key=lambda j: (-self._sizes[j], j),
            )
            return
        self._time_s = view.time_s
        ids = plan.window()
        free = plan.num_free
        options: dict[int, list[tuple[int, float]]] = {}
        for j in ids:
            job = view.job(j)
            base = packed_rate(view, job, max(job.min_gpus, 1))
            opts = [(0, self._utility(0.0))]
            for n in self._levels(job):
                if n <= free:
                    opts.append((n, self._utility(packed_rate(view, job, n) / base)))
            options[j] = opts
        choice = dict.fromkeys(ids, 0)  # index into options[j]
        left = free
        while left > 0:
            best: tuple[float, int, int] | None = None
            for pos, j in enumerate(ids):
                cur_n, cur_u = options[j][choice[j]]
                for k in range(choice[j] + 1, len(options[j])):
                    n, u = options[j][k]
                    if n - cur_n > left:
                        break
                    gain = (u - cur_u) / (n - cur_n)
                    if gain > 0 and (best is None or gain > best[0]):
                        best = (gain, pos, k)
            if best is None:
                break
            _, pos, k = best
            j = ids[pos]
            left -= options[j][k][0] - options[j][choice[j]][0]
            choice[j] = k
        sizes = {j: options[j][choice[j]][0] for j in ids}
        self._order = sorted((j for j in ids if sizes[j] > 0), key=lambda j: (-sizes[j], j))
        self._sizes = sizes

    def _choose(self, view: ClusterView, plan: Plan) -> tuple[int, Placement] | None:
        while self._order:
            j = self._order.pop(0)
            placement = plan.place(view.job(j), self._sizes[j])
            if placement is not None:
                return j, placement
        return None


__all__ = ["PolluxMoldableScheduler"]
