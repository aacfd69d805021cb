"""Loss observations and length estimates: hidden truth, priors, fits, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.perf.loss_curve import fit_loss_curve, iterations_to_target, observe_loss
from cluster_envs.perf.loss_fast import fit_loss_curve_fast
from cluster_envs.perf.zoo import iterations_to_complete, loss_curve_for
from cluster_envs.sim.engine import Simulator
from cluster_envs.types import Allocate, Decision, LossCurveParams
from cluster_envs.workload import load_workload


def test_fast_fit_matches_scipy_fit_on_noisy_curves() -> None:
    truth = LossCurveParams(2e-3, 0.5, 0.3)
    target = truth.loss(3000.0)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        k = np.linspace(100, 1500, 15)
        loss = [observe_loss(truth, x, rng, 0.02) for x in k]
        fast = iterations_to_target(fit_loss_curve_fast(k, loss), target)
        full = iterations_to_target(fit_loss_curve(k, loss), target)
        assert abs(fast - 3000) / 3000 < 0.25
        assert abs(fast - full) / full < 0.25


def test_fast_fit_is_exact_without_noise() -> None:
    truth = LossCurveParams(1e-3, 2.0, 0.5)
    k = np.linspace(0, 5000, 30)
    fit = fit_loss_curve_fast(k, [truth.loss(x) for x in k])
    assert fit.loss(8000) == pytest.approx(truth.loss(8000), rel=0.01)


def _running_sim(seed: int) -> tuple[Simulator, int]:
    wl = load_workload("pollux-1", num_jobs=1)
    sim = Simulator(wl.jobs, "pollux-testbed", seed=seed)
    sim.step()
    job = wl.jobs[0]
    sim.apply(Decision((Allocate(0, ((0, 4), (1, job.num_gpus - 4))),)))
    return sim, job.job_id


def test_queued_job_estimate_is_the_zoo_prior() -> None:
    wl = load_workload("pollux-1", num_jobs=1)
    sim = Simulator(wl.jobs, "pollux-testbed")
    sim.step()
    est = sim.view().estimate(0)
    job = wl.jobs[0]
    assert est.source == "prior" and est.num_observations == 0
    assert est.total_iterations == pytest.approx(iterations_to_complete(job.model, job.batch_size))


def test_estimate_converges_towards_truth_as_the_job_trains() -> None:
    sim, j = _running_sim(seed=0)
    truth = sim.jobs[j].total_iterations
    errors = []
    for frac in (0.2, 0.5, 0.9):
        sim.advance_to(frac * truth / sim.rate[j])
        est = sim.view().estimate(j)
        assert est.source == "fit" and est.fitted is not None
        assert est.remaining_iterations == pytest.approx(
            max(est.total_iterations - sim.iterations_done(j), 0.0)
        )
        errors.append(abs(est.total_iterations - truth) / truth)
    assert errors[-1] < 0.1
    assert errors[-1] <= errors[0]


def test_observations_are_seeded_and_never_leak_the_truth() -> None:
    a, j = _running_sim(seed=1)
    b, _ = _running_sim(seed=1)
    c, _ = _running_sim(seed=2)
    for sim in (a, b, c):
        sim.advance_to(2000.0)
    ka, la = a.view().loss_history(j)
    kb, lb = b.view().loss_history(j)
    kc, lc = c.view().loss_history(j)
    np.testing.assert_array_equal(la, lb)
    assert not np.array_equal(la, lc)
    np.testing.assert_array_equal(ka, kc)  # same grid: it comes from the prior alone
    job = a.jobs[j]
    curve, _ = loss_curve_for(job.model, job.total_iterations)
    rel = np.abs(la / np.array([curve.loss(k) for k in ka]) - 1)
    assert 0 < rel.mean() < 0.1  # noisy, but around the true curve
