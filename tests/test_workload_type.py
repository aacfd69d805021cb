"""The Workload type and the record -> job rule (property-based where it helps)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_envs.errors import ConfigError
from cluster_envs.workload import JobFactory, JobOptions, TraceRecord, Workload, load_canonical

ROW = st.tuples(
    st.integers(0, 10_000),  # submit time (s)
    st.sampled_from([1, 2, 3, 4, 8, 16]),  # GPUs
    st.floats(1.0, 1e6, allow_nan=False),  # duration (s)
)


@settings(max_examples=25, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=30), st.integers(0, 3))
def test_canonical_round_trip_reproduces_every_record(rows: list, seed: int) -> None:
    text = "job_id,submit_time_s,num_gpus,duration_s\n" + "".join(
        f"j{i},{t},{g},{d!r}\n" for i, (t, g, d) in enumerate(rows)
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.csv"
        path.write_text(text)
        wl = load_canonical(path, seed=seed)
    assert len(wl) == len(rows)
    expected = sorted(((t, i) for i, (t, _, _) in enumerate(rows)))  # stable by file order
    assert [job.name for job in wl] == [f"j{i}" for _, i in expected]
    for job in wl:
        i = int(job.name[1:])
        assert job.job_id == wl.jobs.index(job)
        assert job.num_gpus == rows[i][1]
        assert wl.runtime_s(job) == pytest.approx(rows[i][2], rel=1e-9)


def make(records: list[TraceRecord]) -> Workload:
    return Workload("w", JobFactory(JobOptions()).make_all(records), "test")


def test_workload_validates_order_and_ids() -> None:
    jobs = JobFactory(JobOptions()).make_all(
        [TraceRecord("a", 5.0, 1, 100.0), TraceRecord("b", 1.0, 2, 100.0)]
    )
    with pytest.raises(ConfigError, match="submitted before"):
        Workload("w", jobs, "test")
    with pytest.raises(ConfigError, match="no jobs"):
        Workload("w", (), "test")
    with pytest.raises(ConfigError, match="job_id"):
        Workload("w", (dataclasses.replace(jobs[0], job_id=3),), "test")
    fixed = Workload.from_jobs("w", jobs, "test")
    assert [(j.job_id, j.name) for j in fixed] == [(0, "b"), (1, "a")]


def test_helpers_and_summary() -> None:
    wl = make([TraceRecord(f"j{i}", float(i), 1 + i % 2, 100.0) for i in range(6)])
    assert wl.num_jobs == len(wl) == 6 and wl[2].name == "j2"
    assert wl.total_gpu_seconds() == pytest.approx(100.0 * (1 + 2 + 1 + 2 + 1 + 2))
    odd = wl.subset(lambda job: job.num_gpus == 2)
    assert [(j.job_id, j.name) for j in odd] == [(0, "j1"), (1, "j3"), (2, "j5")]
    assert [j.name for j in wl.subset([4, 0])] == ["j0", "j4"]
    assert [j.name for j in wl.head(2)] == ["j0", "j1"]
    summary = wl.summary()
    assert summary["num_jobs"] == 6 and summary["num_gpus"] == {1: 3, 2: 3}
    assert summary["span_s"] == 5.0 and summary["kinds"] == {"rigid": 6}


def test_record_without_duration_or_model_is_rejected() -> None:
    with pytest.raises(ConfigError, match="needs a duration or a model"):
        make([TraceRecord("x", 0.0, 1)])
    with pytest.raises(ConfigError, match="did you mean 'imagenet'"):
        make([TraceRecord("x", 0.0, 1, 10.0, model="imagenett")])


def test_unnamed_records_are_named_after_model_and_id() -> None:
    wl = make([TraceRecord("", 0.0, 1, 100.0, model="ncf")])
    assert wl[0].name == "ncf-0"
