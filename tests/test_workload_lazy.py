"""The lazy job table of large traces (issue 11) is the eager tuple of jobs, built later.

A :class:`~cluster_envs.workload.lazy.LazyJobs` must give, job for job, the ``JobSpec``
objects the per-row factory path gives; episodes on it (FIFO, preemptive Tiresias,
quality tracking, a believed fork) must give exactly the eager episode's metrics and
tables; and indexing, slicing, copying and the load-time errors behave as on a tuple.
The tests force the lazy table on small traces with ``LAZY_MIN_JOBS = 1``.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest
from test_sim_invariants import RandomActor

from cluster_envs.errors import ConfigError
from cluster_envs.policies.registry import make_policy
from cluster_envs.runner import decide_until_settled, run_episode
from cluster_envs.sim.columns import job_column
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import fork_believed, play_out
from cluster_envs.types import JobSpec
from cluster_envs.workload import formats, lazy, load_workload
from cluster_envs.workload.jobs import JobFactory
from cluster_envs.workload.lazy import LazyJobs
from cluster_envs.workload.loaders import LoadOptions, data_path, select
from cluster_envs.workload.workload import Workload

DATA = Path(__file__).parent / "data"
#: Canonical rows with and without model, user and name (``model-j`` names).
ZOO_CANONICAL = """job_id,submit_time_s,num_gpus,duration_s,model,user
a,0,1,600,,alice
b,30,4,3600,cifar10,bob
c,30,2,120.5,,
d,10,8,7200,imagenet,alice
e,12.5,1,50,ncf,
f,3,16,86400,,carol
"""
PHILLY = data_path("philly_sample.csv")
ONE_GPU = {"num_nodes": 1, "gpus_per_node": 1}
COLUMNS = ("job_id", "submit_time_s", "num_gpus", "min_gpus", "max_gpus", "batch_size")


def _load(path: str | Path, monkeypatch: pytest.MonkeyPatch, lazy_min: int, **options):
    monkeypatch.setattr(lazy, "LAZY_MIN_JOBS", lazy_min)
    return load_workload(path, **options)


def _per_row(path: str | Path, parse, **options) -> tuple[JobSpec, ...]:
    """The jobs of the per-row path (TraceRecord list through JobFactory.make_all)."""
    opts = LoadOptions.make(options)
    records = select(parse(str(path)).rows(), opts)
    return JobFactory(opts.job_options()).make_all(records)


def _same_jobs(a, b) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert x == y
        assert repr(x.speed) == repr(y.speed) and type(x.speed) is type(y.speed)
        for name in ("submit_time_s", "total_iterations", "target_loss", "recorded_duration_s"):
            assert type(getattr(x, name)) is type(getattr(y, name)), name


@pytest.mark.parametrize(
    "options",
    [{}, {"kind": "moldable", "seed": 3, "batch_sizes": "default"}, {"time_scale": 0.5}],
    ids=str,
)
@pytest.mark.parametrize(
    ("path", "parse"),
    [(Path(PHILLY), formats.parse_philly), (DATA / "zoo_canonical.csv", formats.parse_canonical)],
    ids=("philly", "canonical"),
)
def test_lazy_jobs_are_the_per_row_jobs(monkeypatch, tmp_path, path, parse, options) -> None:
    if path.name == "zoo_canonical.csv":
        path = tmp_path / path.name
        path.write_text(ZOO_CANONICAL)
    workload = _load(path, monkeypatch, 1, **options)
    assert isinstance(workload.jobs, LazyJobs)
    expected = _per_row(path, parse, **options)
    _same_jobs(workload.jobs, expected)  # iteration
    _same_jobs([workload[j] for j in range(len(workload))], expected)  # indexing
    assert workload.jobs == expected and expected == workload.jobs
    eager = _load(path, monkeypatch, 10**9, **options)
    assert isinstance(eager.jobs, tuple) and eager == workload
    for name in COLUMNS:
        column = workload.jobs.column(name)
        assert np.array_equal(column, [getattr(job, name) for job in expected])
        assert not column.flags.writeable


def test_indexing_slicing_and_copies(monkeypatch) -> None:
    monkeypatch.setattr(lazy, "CACHE_JOBS", 3)  # rebuilt jobs must be equal jobs
    jobs = _load(PHILLY, monkeypatch, 1, num_jobs=40).jobs
    eager = tuple(jobs)
    assert jobs[-1] == eager[-1] and jobs[np.int64(7)] == eager[7]
    assert jobs[5:9] == eager[5:9] and isinstance(jobs[5:9], tuple)
    assert jobs[::-7] == eager[::-7]
    with pytest.raises(IndexError, match="out of range"):
        jobs[40]
    for _ in range(2):  # through the (tiny) cache and back
        assert [jobs[j] for j in (0, 1, 2, 3, 0, 39)] == [eager[j] for j in (0, 1, 2, 3, 0, 39)]
    assert len(jobs._cache) <= 3
    for other in (copy.deepcopy(jobs), pickle.loads(pickle.dumps(jobs))):
        assert isinstance(other, LazyJobs) and other == jobs
    assert jobs != eager[:-1] and jobs != "not jobs"
    assert hash(jobs) == hash(eager)


@pytest.mark.parametrize(
    ("policy", "kind", "quality"),
    [("fifo", "rigid", False), ("tiresias", "rigid", False), ("fifo", "rigid", True),
     ("random", "malleable", False)],
)  # fmt: skip
def test_episodes_on_lazy_jobs_are_the_eager_episodes(monkeypatch, policy, kind, quality) -> None:
    options = {"num_jobs": 120, "time_scale": 0.2, "kind": kind}
    results = []
    for lazy_min in (1, 10**9):
        workload = _load(PHILLY, monkeypatch, lazy_min, **options)
        assert isinstance(workload.jobs, LazyJobs) == (lazy_min == 1)
        actor = RandomActor(3) if policy == "random" else policy
        results.append(run_episode(workload, actor, "pollux-testbed", quality=quality))
    a, b = results
    assert a.metrics["num_finished"] == 120 and a.metrics["avg_queue_length"] > 0
    assert a.metrics == pytest.approx(b.metrics, rel=0, abs=0, nan_ok=True)
    for name in b.jobs:
        assert np.array_equal(a.jobs[name], b.jobs[name], equal_nan=True), name
    assert a.segments == b.segments
    if policy == "random":
        assert a.jobs["num_restarts"].sum() > 0  # preempted and resized jobs


def test_believed_fork_of_a_lazy_table(monkeypatch) -> None:
    lazy_jobs = _load(PHILLY, monkeypatch, 1, num_jobs=60, time_scale=0.2).jobs
    eager_jobs = tuple(lazy_jobs)
    outcomes = []
    for jobs in (lazy_jobs, eager_jobs):
        sim, policy = Simulator(jobs, "pollux-testbed", seed=0), make_policy("tiresias")
        for _ in range(40):
            sim.step()
            if sim.queue:
                decide_until_settled(sim, policy)
        believed, believed_policy = fork_believed(sim, policy)
        assert type(believed.jobs) is type(jobs)
        live = [*sim.queue, *sim.active]
        changed = [j for j in live if believed.jobs[j] != sim.jobs[j]]
        assert changed  # frozen estimates replaced the true lengths
        for j in changed:
            assert believed.jobs[j].loss_curve == sim.jobs[j].loss_curve
        totals = job_column(believed.jobs, "total_iterations")
        assert [totals[j] for j in live] == [believed.jobs[j].total_iterations for j in live]
        metrics = play_out(believed, believed_policy, horizon_s=sim.now_s + 1e6)
        outcomes.append((metrics, list(believed.jobs)))
    assert outcomes[0][0] == pytest.approx(outcomes[1][0], rel=0, abs=0, nan_ok=True)
    assert outcomes[0][1] == outcomes[1][1]


def test_load_and_simulator_errors_match_the_eager_ones(monkeypatch, tmp_path) -> None:
    messages = []
    for lazy_min in (1, 10**9):
        workload = _load(PHILLY, monkeypatch, lazy_min, num_jobs=60)
        with pytest.raises(ConfigError) as error:
            Simulator(workload.jobs, {"name": "tiny", "node_groups": [ONE_GPU]})
        messages.append(str(error.value))
    assert messages[0] == messages[1] and messages[0].startswith("job 34 ")
    bad = tmp_path / "late.csv"
    bad.write_text("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\nb,5,1,10\n")
    jobs = _load(bad, monkeypatch, 1).jobs
    assert isinstance(jobs, LazyJobs)
    tied = jobs.replace_jobs({1: dataclasses.replace(jobs[1], submit_time_s=0.0)})
    assert Workload("w", tied, "x").jobs[1].submit_time_s == 0.0
    assert tied.column("submit_time_s").tolist() == [0.0, 0.0]
    late = jobs.replace_jobs({0: dataclasses.replace(jobs[0], submit_time_s=9.0)})
    with pytest.raises(ConfigError, match="job 1 is submitted before job 0"):
        Workload("w", late, "x")
