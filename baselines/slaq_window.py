"""SLAQ's quality greedy, valued over each job's ``quality_auc`` window (``slaq-window``).

MetisAllocation scores an episode by ``quality_auc``: the mean over jobs of the job's
normalised quality averaged over its first ``W`` seconds after submission
(:mod:`cluster_envs.sim.quality`; ``W = quality_window_s``, 1 h by default). SLAQ
(:class:`~baselines.allocation.SlaqAllocator`) values a GPU count by the quality a job
gains *in the next slice*. For this objective that misjudges in two ways:

* progress made now is held for the rest of the window, so it is worth more to a job
  early in its window than late, and nothing to a job whose window has passed;
* a job whose quality rises slowly at first (its curve is flat early) gains little in one
  slice, so SLAQ leaves it waiting, and every second it waits is a second of its window
  at zero quality.

:class:`WindowSlaqAllocator` values running job ``j`` at ``n`` GPUs in this slice by the
window area the run adds against idling the slice and running the same way afterwards
(the *delay* value): with ``f`` the job's estimated fraction done, ``r`` its modelled
fraction per second at ``n`` packed GPUs of the fastest type, ``R`` what is left of its
window and ``t`` the slice minus the switch cost when ``n`` changes its allocation,

    V(n) = integral over [R - t, R] of Q(min(f + r*tau, 1)) dtau  -  t * Q(f)      (R > t)
    V(n) = integral over [0, R] of (Q(min(f + r*tau, 1)) - Q(f)) dtau               (R <= t)

divided by the slice length, plus SLAQ's tie-break ``FRACTION_TIE_WEIGHT * df`` (jobs
past their window still get the GPUs nobody in a window gains from, so the cluster is
not left idle while they wait). GPUs then go greedily where the value grows most per GPU
(:func:`~baselines.allocation.greedy_fill`), as in SLAQ.

Growing a running job pays its rescale twice (``growth_cost_factor = 2``): GPUs handed to a
running job because nobody else wants them now are taken back when jobs arrive, and the
shrink costs the job another rescale. Without it the greedy grows running jobs into every
free GPU and shrinks them a slice later: on 60 s slices with 30 s rescales (pollux) that
costs 7 % of quality AUC (validation; factors 4 and 8 gave the same there and differ by at
most 0.3 % elsewhere, so the factor that counts the one extra rescale is kept).

It reads what SLAQ reads: the
estimated (never the true) length, the profiled speed model and the model's quality curve,
plus each job's submission time and the window, which define the objective it serves.

Validation splits (seeds 500-507, ``python -m agents.generalist evaluate --env metis
--model none --split validation --seeds 500 507 --baselines slaq,optimus,tiresias,fair,slaq-window``;
benchmarks/results/generalist_metis.md): the best heuristic on philly-vc (SLAQ and Tiresias
1.107x it) and philly-time, within 1 % of the best on synthetic-16/-64/-256 and alibaba,
behind Tiresias on pollux (1.023x) and mixed (1.083x), where SLAQ is 1.49x / 1.18x behind.
"""

from __future__ import annotations

import numpy as np

from baselines.allocation import (
    DEFAULT_SLICE_S,
    DEFAULT_SWITCH_COST_S,
    FRACTION_TIE_WEIGHT,
    Requests,
    SlaqAllocator,
    greedy_fill,
    job_table,
)
from cluster_envs.errors import ConfigError
from cluster_envs.policies.context import PolicyContext
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.curves import CurveIntegral
from cluster_envs.sim.quality import QUALITY_WINDOW_S, curve_integral
from cluster_envs.sim.view import ClusterView


def area_ahead(curve: CurveIntegral, f: float, r: float, a: float, b: float) -> float:
    """``integral over [a, b] of Q(min(f + r*tau, 1)) dtau`` (exact: Q is piecewise
    linear and the fraction linear in time until it reaches 1)."""
    if b <= a:
        return 0.0
    fa, fb = f + r * a, f + r * b
    if fb <= 1.0:
        return curve.time_integral(fa, fb, b - a)
    if fa >= 1.0:
        return (b - a) * curve.final
    t_done = (1.0 - f) / r  # r > 0 here: fb > 1 >= fa
    return curve.time_integral(fa, 1.0, t_done - a) + (b - t_done) * curve.final


def delay_value(curve: CurveIntegral, f: float, r: float, left_s: float, t: float) -> float:
    """Window area (quality-seconds) gained by running ``t`` s at rate ``r`` now rather
    than idling them: :data:`V(n)` of the module docstring, before the division."""
    if left_s <= 0.0 or t <= 0.0:
        return 0.0
    q = curve.quality(f)
    if left_s <= t:
        return area_ahead(curve, f, r, 0.0, left_s) - left_s * q
    return area_ahead(curve, f, r, left_s - t, left_s) - t * q


class WindowSlaqAllocator(SlaqAllocator):
    """SLAQ's greedy with the window-aware delay value (see the module docstring).

    Args:
        num_slots: Jobs covered per decision.
        slice_s: The scheduling interval (s).
        switch_cost_s: Time lost to a rescale or restart (s).
        window_s: ``W`` of the ``quality_auc`` metric (s); MetisAllocation tells its own
            (``PolicyContext.quality_window_s``).
        growth_cost_factor: The switch cost a running job pays to grow, in rescales
            (>= 1; see the module docstring).
    """

    name = "slaq-window"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        slice_s: float = DEFAULT_SLICE_S,
        switch_cost_s: float = DEFAULT_SWITCH_COST_S,
        window_s: float = QUALITY_WINDOW_S,
        growth_cost_factor: float = 2.0,
    ) -> None:
        super().__init__(num_slots, slice_s, switch_cost_s)
        self.window_s = check_window(window_s)
        if not (growth_cost_factor >= 1 and np.isfinite(growth_cost_factor)):
            raise ConfigError(
                f"slaq-window growth_cost_factor must be finite and >= 1, got {growth_cost_factor}"
            )
        self.growth_cost_factor = float(growth_cost_factor)

    def configure(self, context: PolicyContext) -> None:
        """Take the env's slots, slice, rescale cost and quality window."""
        super().configure(context)
        if context.quality_window_s is not None:
            self.window_s = check_window(context.quality_window_s)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        ids = state.ids
        table = job_table(view, state)
        totals = [max(t, 1e-9) for t in view.total_iterations(ids).tolist()]
        done = table.iterations_done.tolist()
        left = [s + self.window_s - view.time_s for s in table.submit_time_s.tolist()]
        info = {j: (d / t, t, w) for j, d, t, w in zip(ids, done, totals, left, strict=True)}
        ran = dict(zip(ids, (~np.isnan(table.first_start_s)).tolist(), strict=True))
        speeds = dict(zip(ids, table.speed, strict=True))
        models = dict(zip(ids, table.model, strict=True))
        current = {j: state.count(j) for j in ids}
        slice_s, switch_cost_s, growth = self.slice_s, self.switch_cost_s, self.growth_cost_factor

        def row(j: int, lo: int, hi: int) -> list[float]:
            """The value at n = lo..hi GPUs (0 at n = 0; see the module docstring)."""
            if hi <= 0:  # no GPUs: no value
                return [0.0] * (hi - lo + 1)
            now_n = current[j]
            frac, total, left_s = info[j]
            rates = self.rate_row(view, j, speeds[j], max(lo, 1), hi)
            curve = curve_integral(models[j])
            out = []
            for n in range(lo, hi + 1):
                if n == 0:
                    out.append(0.0)
                    continue
                cost = switch_cost_s if n != now_n and ran[j] else 0.0
                if 0 < now_n < n:  # a running job grows: it pays again when shrunk
                    cost *= growth
                t = max(slice_s - cost, 0.0)
                r = rates[n] / total
                gain = delay_value(curve, frac, r, left_s, t)
                out.append(gain / slice_s + FRACTION_TIE_WEIGHT * r * t)
            return out

        return greedy_fill(state, dict.fromkeys(ids, 0), row=row)


def check_window(window_s: float) -> float:
    """``window_s`` as a float, or a ConfigError unless it is finite and > 0."""
    value = float(window_s)
    if not (value > 0 and np.isfinite(value)):
        raise ConfigError(f"slaq-window window_s must be finite and > 0, got {window_s}")
    return value


__all__ = ["WindowSlaqAllocator", "area_ahead", "delay_value"]
