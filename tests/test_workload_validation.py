"""Trace validation through ``cluster_envs.load_workload`` on real files: ids, limits, headers.

Every case is a file a user could write by mistake; each must fail with
``file:line: reason`` naming the problem (and the limit, for absurd magnitudes).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cluster_envs
from cluster_envs.errors import TraceFormatError
from cluster_envs.workload import formats

CANONICAL_HEADER = "job_id,submit_time_s,num_gpus,duration_s"
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
POLLUX_HEADER = "name,time,application,num_replicas,batch_size"
SWF_ROW = "{job} {submit} 0 {run} {procs} -1 -1 {procs} 3600 -1 1 7 7 -1 -1 -1 -1 -1"


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def load_error(path: Path, **options: object) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as info:
        cluster_envs.load_workload(path, **options)
    return info.value


def test_duplicate_canonical_job_id_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "jobs.csv", [CANONICAL_HEADER, "a,0,1,60", "b,5,1,60", "a,9,2,60"])
    err = load_error(path)
    assert str(err).startswith(f"{path}:4: ")
    assert "duplicate job id 'a'" in str(err) and "line 2" in str(err)


def test_duplicate_pollux_name_and_swf_job_rejected(tmp_path: Path) -> None:
    pollux = write(
        tmp_path,
        "pollux.csv",
        [POLLUX_HEADER, "j0,0,cifar10,1,128", "j1,5,cifar10,1,128", "j0,7,cifar10,2,128"],
    )
    err = load_error(pollux)
    assert (err.line, "line 2" in err.reason) == (4, True)
    swf = write(
        tmp_path,
        "log.swf",
        [
            "; a comment",
            SWF_ROW.format(job=1, submit=0, run=100, procs=2),
            SWF_ROW.format(job=1, submit=50, run=100, procs=2),
        ],
    )
    err = load_error(swf)
    assert err.line == 3 and "duplicate job id '1'" in err.reason and "line 2" in err.reason


def test_empty_job_id_rejected_not_renamed(tmp_path: Path) -> None:
    path = write(tmp_path, "jobs.csv", [CANONICAL_HEADER, "a,0,1,60", ",5,1,60"])
    err = load_error(path)
    assert str(err).startswith(f"{path}:3: ") and "empty job id" in str(err)
    pollux = write(tmp_path, "pollux.csv", [POLLUX_HEADER, '"",0,cifar10,1,128'])
    assert "empty job id" in load_error(pollux).reason


@pytest.mark.parametrize(
    ("row", "column", "limit"),
    [
        ("a,1e300,1,60", "submit_time_s", "MAX_SUBMIT_TIME_S"),
        ("a,0,1,1e300", "duration_s", "MAX_DURATION_S"),
        ("a,0,100000000,60", "num_gpus", "MAX_GPUS_PER_JOB"),
        ("a,-5,1,60", "submit_time_s", ">= 0 s"),
        ("a,0,1,-60", "duration_s", "> 0 s"),
        ("a,0,-1,60", "num_gpus", ">= 1"),
    ],
)
def test_canonical_absurd_values_name_the_limit(
    tmp_path: Path, row: str, column: str, limit: str
) -> None:
    path = write(tmp_path, "jobs.csv", [CANONICAL_HEADER, "ok,0,1,60", row])
    err = load_error(path)
    assert str(err).startswith(f"{path}:3: ")
    assert f"column {column!r}" in err.reason and limit in err.reason


def test_pollux_batch_size_of_1e8_names_the_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "pollux.csv", [POLLUX_HEADER, "j0,0,cifar10,1,100000000"])
    err = load_error(path)
    assert err.line == 2 and "MAX_BATCH_SIZE" in err.reason
    assert f"{formats.MAX_BATCH_SIZE:,}" in err.reason
    huge_time = write(tmp_path, "late.csv", [POLLUX_HEADER, "j0,1e300,cifar10,1,128"])
    assert "MAX_SUBMIT_TIME_S" in load_error(huge_time).reason


def test_philly_and_swf_absurd_durations(tmp_path: Path) -> None:
    philly = write(
        tmp_path,
        "philly.csv",
        [PHILLY_HEADER, "2017-10-05 06:00:00,1e300,1,1e300,c1"],
    )
    err = load_error(philly)
    assert err.line == 2 and "MAX_DURATION_S" in err.reason
    swf = write(tmp_path, "log.swf", [SWF_ROW.format(job=1, submit=0, run="1e300", procs=2)])
    err = load_error(swf)
    assert err.line == 1 and "MAX_DURATION_S" in err.reason
    late = write(tmp_path, "late.swf", [SWF_ROW.format(job=1, submit="1e300", run=10, procs=2)])
    assert "MAX_SUBMIT_TIME_S" in load_error(late).reason


@pytest.mark.parametrize(
    ("name", "header", "fmt"),
    [
        ("philly.csv", PHILLY_HEADER, None),
        ("jobs.csv", CANONICAL_HEADER, None),
        ("pollux.csv", POLLUX_HEADER, None),
        ("philly_forced.csv", PHILLY_HEADER, "philly"),
    ],
)
def test_header_only_file_names_the_file(
    tmp_path: Path, name: str, header: str, fmt: str | None
) -> None:
    path = write(tmp_path, name, [header])
    err = load_error(path, format=fmt)
    assert re.match(rf"{re.escape(str(path))}:1: header only", str(err))


def test_comment_only_swf_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "log.swf", ["; Version: 2.2", "; nothing else"])
    assert str(load_error(path)).startswith(f"{path}: no job lines")


def test_limits_leave_real_traces_alone(tmp_path: Path) -> None:
    """A month-long Philly-style job and a year-late submit are still accepted."""
    path = write(
        tmp_path,
        "jobs.csv",
        [CANONICAL_HEADER, "long,0,8,2592000", "late,31536000,1,60"],
    )
    wl = cluster_envs.load_workload(path)
    assert [job.name for job in wl] == ["long", "late"]
