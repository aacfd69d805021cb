"""Trace loaders: good files, bad files (file:line + reason), detection and options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cluster_envs.errors import ConfigError, TraceFormatError
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import SpeedupThroughput
from cluster_envs.perf.speedup import Downey
from cluster_envs.types import JobKind
from cluster_envs.workload import (
    HPC_MODEL,
    detect_format,
    load_canonical,
    load_philly,
    load_pollux,
    load_swf,
    load_workload,
    reference_runtime_s,
)

DATA = Path(__file__).parent / "data"
CANONICAL = DATA / "workload_canonical.csv"
PHILLY = DATA / "workload_philly.csv"
POLLUX = DATA / "workload_pollux.csv"
SWF = DATA / "workload_kth.swf"


def assert_reproduces_records(workload) -> None:
    """Every job with a recorded duration runs exactly that long at its recorded size."""
    for job in workload:
        assert job.recorded_duration_s is not None
        runtime = reference_runtime_s(job, gpu_type="T4", gpus_per_node=4)
        assert runtime == pytest.approx(job.recorded_duration_s, rel=1e-9)


def assert_dense_and_sorted(workload) -> None:
    assert [job.job_id for job in workload] == list(range(len(workload)))
    times = [job.submit_time_s for job in workload]
    assert times == sorted(times)


def test_canonical_good_file() -> None:
    wl = load_canonical(CANONICAL)
    assert_dense_and_sorted(wl)
    assert [job.name for job in wl] == ["a", "d", "b", "c", "e"]  # ties keep file order
    assert_reproduces_records(wl)
    by_name = {job.name: job for job in wl}
    assert by_name["b"].model == "cifar10" and by_name["b"].user == "bob"
    # Weak scaling: 4 GPUs x the default 128 -> the smallest profiled batch >= 512.
    assert by_name["b"].batch_size == 4 * zoo.get_model("cifar10").default_batch_size
    assert by_name["d"].model == "imagenet" and by_name["d"].num_gpus == 8
    assert by_name["c"].user is None and by_name["c"].model in zoo.ZOO_MODELS
    assert by_name["e"].model == HPC_MODEL and by_name["e"].loss_curve is None
    assert all(j.kind is JobKind.RIGID and j.min_gpus == j.max_gpus == j.num_gpus for j in wl)


def test_zoo_jobs_carry_a_loss_curve_reaching_the_target() -> None:
    for job in load_canonical(CANONICAL):
        if job.model != HPC_MODEL:
            assert job.loss_curve.loss(job.total_iterations) == pytest.approx(job.target_loss)


def test_philly_good_file() -> None:
    wl = load_philly(PHILLY)
    assert_dense_and_sorted(wl)
    assert len(wl) == 5  # blank lines skipped
    assert [job.submit_time_s for job in wl] == [0.0, 0.0, 136.0, 1336.0, 7200.0]
    assert wl.jobs[0].name == "6214e9:3" and wl.jobs[1].name == "11cb48:7"
    assert_reproduces_records(wl)
    assert wl.jobs[2].model == "imagenet"  # 4 GPUs x 90,000 s = 100 GPU-hours


def test_philly_cluster_filter_rebases_on_the_kept_jobs() -> None:
    wl = load_philly(PHILLY, cluster_filter="11cb48")
    assert [job.submit_time_s for job in wl] == [0.0, 136.0]
    assert all(job.name.startswith("11cb48:") for job in wl)
    with pytest.raises(ConfigError, match="did you mean '11cb48'"):
        load_philly(PHILLY, cluster_filter="11cb4")
    with pytest.raises(ConfigError, match="philly format only"):
        load_pollux(POLLUX, cluster_filter="x")


def test_pollux_good_file_uses_full_run_semantics() -> None:
    wl = load_pollux(POLLUX)
    assert_dense_and_sorted(wl)
    for job in wl:
        assert job.total_iterations == pytest.approx(
            zoo.iterations_to_complete(job.model, job.batch_size)
        )
        assert job.recorded_duration_s is None
    assert [(j.name, j.num_gpus, j.batch_size) for j in wl][:2] == [
        ("cifar10-0", 6, 2048),
        ("deepspeech2-1", 6, 320),
    ]
    assert wl.total_gpu_seconds() > 0


def test_swf_keeps_completed_and_failed_jobs_with_known_runtime() -> None:
    wl = load_swf(SWF)
    assert [job.name for job in wl] == ["15", "16", "17", "20"]
    assert [job.num_gpus for job in wl] == [4, 25, 5, 2]  # job 20: requested procs
    assert wl.jobs[0].submit_time_s == 0.0 and wl.jobs[1].submit_time_s == 172.0
    assert wl.jobs[0].user == "12" and wl.jobs[3].user is None
    assert_reproduces_records(wl)
    for job in wl:
        assert job.model == HPC_MODEL
        assert isinstance(job.speed, SpeedupThroughput) and isinstance(job.speed.curve, Downey)
        assert job.num_gpus / 2 <= job.speed.curve.A <= 2 * job.num_gpus + 1e-9
        assert 0 <= job.speed.curve.sigma <= 2


def test_runtime_changes_with_size_and_gpu_type_through_the_speed_model() -> None:
    job = load_canonical(CANONICAL).jobs[1]  # d: imagenet on 8 GPUs
    assert reference_runtime_s(job, num_gpus=8, gpu_type="A100") < job.recorded_duration_s
    assert reference_runtime_s(job, num_gpus=1) > job.recorded_duration_s


BAD_CSV = [
    ("canonical", "job_id,submit_time_s,num_gpus\n1,0,1\n", 1, "missing column 'duration_s'"),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1,-5\n", 2, "negative duration"),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1,5\n2,0,0,5\n", 3, "no GPUs"),
    (
        "canonical",
        "job_id,submit_time_s,num_gpus,duration_s\n\n1,0,1,5\n2,soon,1,5\n",
        4,
        "column 'submit_time_s' has the value 'soon'",
    ),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1.5,5\n", 2, "'num_gpus'"),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1\n", 2, "expected 4"),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1,5,7\n", 2, "expected 4"),
    (
        "canonical",
        "job_id,submit_time_s,num_gpus,duration_s,model\n1,0,1,5,cifar\n",
        2,
        "did you mean 'cifar10'",
    ),
    ("canonical", "job_id,submit_time_s,num_gpus,duration_s\n1,0,1,\n", 2, "an empty value"),
    (
        "philly",
        "timestamp,duration,num_gpus\n2017-10-05 05:37:44,5,1\n2017-13-05 05:37:44,5,1\n",
        3,
        "column 'timestamp' has '2017-13-05 05:37:44'",
    ),
    ("philly", "timestamp,num_gpus\n2017-10-05 05:37:44,1\n", 1, "missing column 'duration'"),
    ("philly", "timestamp,duration,num_gpus\n2017-10-05 05:37:44,0,1\n", 2, "zero duration"),
    ("pollux", "name,time,application,num_replicas,batch_size\nx,0,ncf,1,big\n", 2, "'big'"),
    ("pollux", "name,time,application,num_replicas,batch_size\nx,0,resnet,1,64\n", 2, "resnet"),
    ("pollux", "name,time,application,num_replicas\nx,0,ncf,1\n", 1, "'batch_size'"),
    ("canonical", "", 1, "empty file"),
]


@pytest.mark.parametrize(("fmt", "text", "line", "reason"), BAD_CSV)
def test_bad_csv_names_file_line_and_reason(
    tmp_path: Path, fmt: str, text: str, line: int, reason: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as info:
        load_workload(path, format=fmt)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert reason in message
    assert info.value.line == line


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("; c\n1 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1\n", 2, "expected 18"),
        ("1 0 0 ten 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", 1, "'run_time' has the value 'ten'"),
    ],
)
def test_bad_swf(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = tmp_path / "bad.swf"
    path.write_text(text)
    with pytest.raises(
        TraceFormatError, match=f"^{re.escape(f'{path}:{line}: ')}.*{re.escape(reason)}"
    ):
        load_swf(path)


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(CANONICAL, "canonical"), (PHILLY, "philly"), (POLLUX, "pollux"), (SWF, "swf")],
)
def test_format_detection(tmp_path: Path, path: Path, fmt: str) -> None:
    assert detect_format(path) == fmt
    copy = tmp_path / "trace.txt"  # by header, not by extension
    copy.write_text(path.read_text())
    assert detect_format(copy) == fmt
    assert len(load_workload(copy)) == len(load_workload(path, format=fmt))


def test_undetectable_format_and_unknown_names(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("foo,bar\n1,2\n")
    with pytest.raises(TraceFormatError, match=r"x\.csv:1: cannot detect"):
        load_workload(path)
    with pytest.raises(ConfigError, match="did you mean 'philly'"):
        load_workload(PHILLY, format="phily")
    with pytest.raises(ConfigError, match="did you mean 'philly-sample'"):
        load_workload("philly-sampel")
    with pytest.raises(ConfigError, match="did you mean 'time_scale'"):
        load_philly(PHILLY, time_scal=2.0)


@pytest.mark.parametrize(
    "options",
    [{"num_jobs": 0}, {"time_scale": 0.0}, {"window_s": (10.0, 5.0)}, {"kind": "elastic"}],
)
def test_invalid_options(options: dict) -> None:
    with pytest.raises(ConfigError):
        load_workload(PHILLY, **options)


def test_window_num_jobs_and_time_scale() -> None:
    windowed = load_workload(PHILLY, window_s=(100.0, 2000.0))
    assert [job.submit_time_s for job in windowed] == [36.0, 1236.0]
    assert [job.name for job in windowed] == ["11cb48:5", "6214e9:2"]
    assert [j.submit_time_s for j in load_workload(PHILLY, num_jobs=3)] == [0.0, 0.0, 136.0]
    scaled = load_workload(PHILLY, time_scale=0.5)
    assert [job.submit_time_s for job in scaled] == [0.0, 0.0, 68.0, 668.0, 3600.0]
    assert_reproduces_records(scaled)  # only arrivals move
    with pytest.raises(ConfigError, match="contains no job"):
        load_workload(PHILLY, window_s=(10.0, 20.0))


def test_moldable_and_malleable_ranges() -> None:
    for kind in ("moldable", "malleable"):
        wl = load_workload(PHILLY, kind=kind, max_gpus_cap=4)
        assert {job.kind for job in wl} == {JobKind(kind)}
        assert [(j.min_gpus, j.num_gpus, j.max_gpus) for j in wl][:3] == [
            (1, 8, 8),
            (1, 1, 4),
            (1, 4, 4),
        ]


def test_same_seed_same_models_and_prefix_stability() -> None:
    models = [j.model for j in load_workload("philly-sample", seed=3)]
    assert models == [j.model for j in load_workload("philly-sample", seed=3)]
    assert models != [j.model for j in load_workload("philly-sample", seed=4)]
    assert [j.model for j in load_workload("philly-sample", seed=3, num_jobs=50)] == models[:50]


def test_shipped_presets_load_from_package_data() -> None:
    sample = load_workload("philly-sample")
    assert len(sample) == 500 and sample.source == "philly-sample"
    assert_reproduces_records(sample)
    assert max(job.recorded_duration_s * job.num_gpus for job in sample) < 1000 * 3600
    assert min(job.recorded_duration_s for job in sample) >= 60
    for i in range(1, 9):
        assert len(load_workload(f"pollux-{i}")) == 160


def test_batch_size_rules() -> None:
    default = load_canonical(CANONICAL, batch_sizes="default")
    sampled = load_canonical(CANONICAL, batch_sizes="sampled", seed=3)
    for job in default:
        if job.model in zoo.ZOO_MODELS:
            assert job.batch_size == zoo.get_model(job.model).default_batch_size
    assert all(
        job.batch_size in zoo.get_model(job.model).batch_sizes
        for job in sampled
        if job.model in zoo.ZOO_MODELS
    )
    assert [j.batch_size for j in sampled] == [
        j.batch_size for j in load_canonical(CANONICAL, batch_sizes="sampled", seed=3)
    ]
    with pytest.raises(ConfigError, match="unknown batch_sizes rule 'scaling'.*'scaled'"):
        load_canonical(CANONICAL, batch_sizes="scaling")
