"""What a scheduler can know about a job's length: noisy loss observations and estimates.

The simulator holds every job's true loss curve. While a job trains it logs a noisy loss
every ``interval`` iterations, where the interval comes from the job's *prior* length
(1/50 of it), never from its true length. From those logs the :class:`WorkEstimator`
predicts iterations to the job's convergence target (``target_loss``, which the user
sets) by fitting the Optimus curve; before it has enough points it falls back to a
prior:

* a zoo model: iterations of the model's full run at the job's batch size (Pollux's
  definition of "done"),
* any other job: its recorded runtime times a user over-estimate factor, log-uniform in
  ``[1, 3]`` and fixed per job (users over-estimate runtimes; Tsafrir et al. 2007).

Estimates are clipped to ``[iterations done, 20 x prior]`` and refitted only when the
number of observations has doubled, on exactly the observations up to that point, so
the estimate depends only on the job's progress, not on when a policy asks (parity).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_envs.perf.loss_curve import iterations_to_target
from cluster_envs.perf.loss_fast import fit_arrays, ramp_weights
from cluster_envs.sim.copying import copy_sharing
from cluster_envs.types import JobSpec, LossCurveParams

if TYPE_CHECKING:
    from cluster_envs.sim.engine import Simulator

#: Loss observations per prior-length run.
OBSERVATIONS_PER_PRIOR_RUN = 50
#: Fewest observations before the curve is fitted.
MIN_OBSERVATIONS = 4
#: Refit when the observation count reaches MIN_OBSERVATIONS * REFIT_GROWTH**k; the fit
#: uses exactly the observations up to that milestone, so an estimate depends only on
#: how far the job has trained, never on when (or how often) a policy asked for it.
REFIT_GROWTH = 2
#: Upper clip of an estimate, as a multiple of the prior.
MAX_PRIOR_MULTIPLE = 20.0
#: Range of the user over-estimate factor for jobs without a zoo prior.
USER_OVERESTIMATE = (1.0, 3.0)
#: Largest number of observations kept per job (the earliest are thinned beyond it).
MAX_KEPT_OBSERVATIONS = 64


@dataclass(frozen=True, slots=True)
class JobEstimate:
    """A scheduler's estimate of one job's length.

    Attributes:
        total_iterations: Estimated iterations to the convergence target.
        remaining_iterations: ``total_iterations`` minus iterations done (>= 0).
        prior_iterations: The prior the estimate started from.
        num_observations: Loss observations so far.
        fitted: The fitted loss curve (``None`` until MIN_OBSERVATIONS points).
        source: ``"prior"`` or ``"fit"``.
    """

    total_iterations: float
    remaining_iterations: float
    prior_iterations: float
    num_observations: int
    fitted: LossCurveParams | None
    source: str


def prior_iterations(job: JobSpec, rng_seed: int) -> float:
    """The prior length of ``job`` (see the module docstring)."""
    from cluster_envs.perf import zoo

    if job.model in zoo.ZOO_MODELS:
        return float(zoo.iterations_to_complete(job.model, job.batch_size))
    lo, hi = USER_OVERESTIMATE
    u = np.random.default_rng([rng_seed, job.job_id, 7]).uniform(math.log(lo), math.log(hi))
    return job.total_iterations * math.exp(u)


def _milestone(count: int) -> int:
    """The largest ``MIN_OBSERVATIONS * REFIT_GROWTH**k`` not above ``count`` (0 if none)."""
    if count < MIN_OBSERVATIONS:
        return 0
    m = MIN_OBSERVATIONS
    while m * REFIT_GROWTH <= count:
        m *= REFIT_GROWTH
    return m


@functools.cache
def _kept(milestone: int) -> np.ndarray:
    """Indices of the MAX_KEPT_OBSERVATIONS observations a refit at ``milestone`` keeps
    (evenly spread; milestones are powers of two, so the cache stays small)."""
    idx = np.linspace(0, milestone - 1, MAX_KEPT_OBSERVATIONS).astype(int)
    idx.flags.writeable = False
    return idx


def _restore_generator(state: dict[str, Any]) -> np.random.Generator:
    """A generator in ``state`` (``bit_generator.state`` of a forked estimator's stream)."""
    bit_generator = getattr(np.random, state["bit_generator"])(0)
    bit_generator.state = state
    return np.random.Generator(bit_generator)


#: The estimator's per-job lists of immutable values (counts and fitted curves).
_ESTIMATOR_VALUES = frozenset({"_num_obs", "_fit", "_fit_count"})


class WorkEstimator:
    """Loss observations and length estimates for every job of one simulation.

    Args:
        sim: The simulator (read for progress and the hidden true curves).
        seed: Seeds the observation noise (one stream per job) and user estimates.
        noise_std: Relative noise of each loss observation.
    """

    def __init__(self, sim: Simulator, seed: int, noise_std: float) -> None:
        self.sim = sim
        self.seed = seed
        self.noise_std = noise_std
        n = len(sim.jobs)
        self._prior = np.full(n, np.nan)
        # Per job, created on first use (a million empty lists would cost ~110 MiB): the
        # observations as float64 chunks, one per batch generated (joined when read).
        self._k: defaultdict[int, list[np.ndarray]] = defaultdict(list)
        self._loss: defaultdict[int, list[np.ndarray]] = defaultdict(list)
        self._num_obs = [0] * n
        # Per job, created on first use; a fork holds a generator's state until it draws.
        self._rng: list[np.random.Generator | dict[str, Any] | None] = [None] * n
        self._fit: list[LossCurveParams | None] = [None] * n
        self._fit_count = [0] * n
        self._fit_count_arr = np.zeros(n, dtype=np.int64)  # the same, for vector reads
        self._total = np.full(n, np.nan)
        self._interval = np.zeros(n)

    def __deepcopy__(self, memo: dict[int, Any]) -> WorkEstimator:
        """A fork's copy (:mod:`cluster_envs.sim.copying`): each generator as its state
        (restored when the fork first draws from it: a deep copy of a generator costs
        ~45 us, its state ~1.3 us, and a fork draws for few jobs), the observation chunks
        (read-only arrays) and the per-job counts and fits shared by new lists."""
        memo[id(self._rng)] = [
            g.bit_generator.state if isinstance(g, np.random.Generator) else g for g in self._rng
        ]
        for chunks in (self._k, self._loss):
            memo[id(chunks)] = defaultdict(list, {j: list(c) for j, c in chunks.items()})
        return copy_sharing(self, memo, _ESTIMATOR_VALUES)

    def prior(self, j: int) -> float:
        """Prior iterations of job ``j`` (cached)."""
        p = self._prior[j]
        if math.isnan(p):
            p = prior_iterations(self.sim.jobs[j], self.seed)
            self._prior[j] = p
        return float(p)

    def interval(self, j: int) -> float:
        """Iterations between two loss observations of job ``j``."""
        if self._interval[j] <= 0:
            self._interval[j] = self.prior(j) / OBSERVATIONS_PER_PRIOR_RUN
        return float(self._interval[j])

    def observations(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(iteration, noisy loss)`` job ``j`` has logged so far."""
        self._observe(j)
        ks, losses = self._history(j)
        return ks.copy(), losses.copy()

    def _history(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s observations so far as two arrays (the stored ones: read only)."""
        ks, losses = self._k[j], self._loss[j]
        if not ks:
            return np.zeros(0), np.zeros(0)
        if len(ks) > 1:  # join the chunks once
            ks[:], losses[:] = [np.concatenate(ks)], [np.concatenate(losses)]
            ks[0].flags.writeable = losses[0].flags.writeable = False
        return ks[0], losses[0]

    def _observe(self, j: int) -> int:
        spec = self.sim.jobs[j]
        if spec.loss_curve is None:
            return 0
        done = self.sim.iterations_done(j)
        step = self.interval(j)
        count = self._num_obs[j]
        upto = int(done // step)
        if upto > count:
            rng = self._rng[j]
            if rng is None:
                rng = self._rng[j] = np.random.default_rng([self.seed, j])
            elif not isinstance(rng, np.random.Generator):
                rng = self._rng[j] = _restore_generator(rng)
            # One vectorised draw equals the same number of single draws: the noise of
            # observation i does not depend on when the history is read.
            k = step * np.arange(count + 1, upto + 1)
            c = spec.loss_curve
            true = 1.0 / (c.b0 * k + c.b1) + c.b2
            noisy = true * (1.0 + self.noise_std * rng.standard_normal(len(k)))
            loss = np.maximum(noisy, 1e-3 * true)
            k.flags.writeable = loss.flags.writeable = False  # forks share the chunks
            self._k[j].append(k)
            self._loss[j].append(loss)
            count = self._num_obs[j] = upto
        return count

    def total_iterations(self, j: int) -> float:
        """Estimated iterations to job ``j``'s target (fast path for env steps).

        Observations are generated lazily: only when a refit is due (or the history is
        read), so most calls cost one division.
        """
        done = self.sim.iterations_done(j)
        return max(float(self._current_total(j, done, self.sim.jobs[j])), done)

    def _current_total(self, j: int, done: float, spec: JobSpec) -> float:
        """Job ``j``'s estimated total after the refit ``done`` iterations make due (the
        prior while nothing is fitted)."""
        if spec.loss_curve is not None and spec.target_loss is not None:
            step = self._interval[j] if self._interval[j] > 0 else self.interval(j)
            milestone = _milestone(int(done // step))
            if milestone > self._fit_count[j]:
                self._refresh(j, milestone)
        total = self._total[j]
        if math.isnan(total):
            total = self.prior(j)
        return total

    def slot_reads(self, j: int) -> tuple[float, float, LossCurveParams | None, int]:
        """``(total_iterations(j), iterations done, fitted(j), num_observations(j))`` in
        one pass: the same values, refits and caches as those calls in that order."""
        done = self.sim.iterations_done(j)
        spec = self.sim.jobs[j]
        curve = spec.loss_curve
        total = self._current_total(j, done, spec)
        count = 0
        if curve is not None:
            step = self._interval[j] if self._interval[j] > 0 else self.interval(j)
            count = max(self._num_obs[j], int(done // step))
        return max(float(total), done), done, self._fit[j], count

    def freeze(self, ids: np.ndarray) -> np.ndarray:
        """Fix the estimates of jobs ``ids`` at their current values and never refit them
        (a what-if fork in which the scheduler's belief is the truth); their totals."""
        totals = np.array([self.total_iterations(int(j)) for j in ids], dtype=float)
        for j, total in zip(ids, totals, strict=True):
            self._total[int(j)] = total
            self._fit_count[int(j)] = np.iinfo(np.int64).max
        return totals

    def believe(self, j: int, total: float) -> None:
        """Job ``j`` (a sampled job of a what-if fork) is believed to need ``total``
        iterations: fixed, never refitted."""
        self._total[j], self._fit_count[j] = total, np.iinfo(np.int64).max
        self._prior[j], self._interval[j] = np.nan, 0.0

    def remaining_many(self, ids: np.ndarray) -> np.ndarray:
        """Estimated remaining iterations of jobs ``ids`` (vectorised; same values as
        ``total_iterations(j) - iterations_done(j)`` job by job)."""
        sim = self.sim
        done = sim.progress[ids] + sim.rate[ids] * (sim.now_s - sim.last_update_s[ids])
        for j in ids[np.isnan(self._prior[ids]) | (self._interval[ids] <= 0)]:
            self.interval(int(j))
        counts = np.floor(done / self._interval[ids])
        due = counts >= np.maximum(MIN_OBSERVATIONS, self._fit_count_arr[ids] * REFIT_GROWTH)
        for j in ids[due]:
            self.total_iterations(int(j))  # refits at its milestone (or skips, no curve)
        total = np.where(np.isnan(self._total[ids]), self._prior[ids], self._total[ids])
        return np.maximum(total - done, 0.0)

    def total_many(self, ids: np.ndarray) -> np.ndarray:
        """Estimated total iterations of jobs ``ids`` (vectorised; same values as
        ``total_iterations(j)`` job by job, refitting the same jobs)."""
        sim = self.sim
        done = sim.progress[ids] + sim.rate[ids] * (sim.now_s - sim.last_update_s[ids])
        for j in ids[np.isnan(self._prior[ids]) | (self._interval[ids] <= 0)]:
            self.interval(int(j))
        counts = np.floor(done / self._interval[ids])
        due = counts >= np.maximum(
            MIN_OBSERVATIONS, np.asarray(self._fit_count)[ids] * REFIT_GROWTH
        )
        for j in ids[due]:
            self.total_iterations(int(j))
        total = np.where(np.isnan(self._total[ids]), self._prior[ids], self._total[ids])
        return np.maximum(total, done)

    def _refresh(self, j: int, milestone: int) -> None:
        """Fit the first ``milestone`` observations of job ``j``."""
        self._observe(j)
        target = self.sim.jobs[j].target_loss
        assert target is not None  # total_iterations refits only jobs with a target
        all_k, all_loss = self._history(j)
        ks, losses = all_k[:milestone], all_loss[:milestone]
        if milestone > MAX_KEPT_OBSERVATIONS:
            idx = _kept(milestone)
            ks, losses = ks[idx], losses[idx]
        fit = fit_arrays(ks, losses, ramp_weights(ks))
        self._fit[j] = fit
        self._fit_count[j] = self._fit_count_arr[j] = milestone
        prior = self.prior(j)
        total = iterations_to_target(fit, target)
        if not math.isfinite(total):
            total = max(prior, 2.0 * float(ks[-1]))
        self._total[j] = min(total, MAX_PRIOR_MULTIPLE * prior)

    def num_observations(self, j: int) -> int:
        """Loss observations job ``j`` has logged so far (without generating them)."""
        if self.sim.jobs[j].loss_curve is None:
            return 0
        step = self._interval[j] if self._interval[j] > 0 else self.interval(j)
        return max(self._num_obs[j], int(self.sim.iterations_done(j) // step))

    def remaining(self, j: int) -> float:
        """``estimate(j).remaining_iterations`` without building the estimate."""
        return max(self.total_iterations(j) - self.sim.iterations_done(j), 0.0)

    def fitted(self, j: int) -> LossCurveParams | None:
        """Job ``j``'s latest fitted loss curve (``None`` before its first fit)."""
        return self._fit[j]

    def estimate(self, j: int) -> JobEstimate:
        """The current estimate of job ``j``'s length."""
        total = self.total_iterations(j)
        count = self.num_observations(j)
        fitted = self._fit[j]
        return JobEstimate(
            total_iterations=total,
            remaining_iterations=max(total - self.sim.iterations_done(j), 0.0),
            prior_iterations=self.prior(j),
            num_observations=count,
            fitted=fitted,
            source="prior" if fitted is None else "fit",
        )
