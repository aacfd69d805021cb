"""The columnar loader gives the jobs of the line-by-line path, and the same errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster_envs.errors import TraceFormatError
from cluster_envs.workload import formats, load_workload
from cluster_envs.workload.columnar import read_csv_columns
from cluster_envs.workload.jobs import JobFactory
from cluster_envs.workload.loaders import LoadOptions, data_path, select
from cluster_envs.workload.table import read_csv_table

DATA = Path(__file__).parent / "data"
SAMPLES = [
    ("canonical", DATA / "workload_canonical.csv", formats._canonical, ()),
    ("philly", DATA / "workload_philly.csv", lambda t: formats._philly(t, None), ()),
    ("philly", Path(data_path("philly_sample.csv")), lambda t: formats._philly(t, None), ()),
    ("pollux", DATA / "workload_pollux.csv", formats._pollux, ()),
    *[
        ("pollux", Path(data_path(f"pollux_workloads/workload-{i}.csv")), formats._pollux, ())
        for i in (1, 8)
    ],
]
NUMERIC = {
    "canonical": ("submit_time_s", "num_gpus", "duration_s"),
    "philly": ("duration", "num_gpus", "gpu_time"),
    "pollux": ("time", "num_replicas", "batch_size"),
}
OPTIONS = [
    {},
    {"kind": "moldable", "seed": 3, "batch_sizes": "default"},
    {"num_jobs": 7, "time_scale": 0.5, "seed": 1},
    {"window_s": (50.0, 5000.0)},
]


def _line_by_line(fmt, path, body, options):
    """Jobs through the per-row path: line reader, TraceRecord list, make_all."""
    records = body(read_csv_table(path)).rows()
    opts = LoadOptions.make(options)
    return JobFactory(opts.job_options()).make_all(select(records, opts))


def _same(a, b) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert x == y
        assert type(x.speed) is type(y.speed) and repr(x.speed) == repr(y.speed)
        assert type(x.submit_time_s) is float and type(x.num_gpus) is int


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize(("fmt", "path", "body", "_"), SAMPLES, ids=lambda v: str(v)[-30:])
def test_columnar_jobs_equal_line_by_line(fmt, path, body, _, options) -> None:
    assert read_csv_columns(path, NUMERIC[fmt]) is not None  # the fast path is taken
    try:
        expected = _line_by_line(fmt, path, body, options)
    except Exception as err:  # a window with no job: both paths must say so
        with pytest.raises(type(err), match="window_s"):
            load_workload(path, format=fmt, **options)
        return
    _same(load_workload(path, format=fmt, **options).jobs, expected)


def test_swf_records_equal_and_iterable() -> None:
    path = DATA / "workload_kth.swf"
    jobs = load_workload(path, format="swf", seed=2).jobs
    records = list(formats.parse_swf(path))
    assert [r.name for r in records] == [j.name for j in jobs]
    opts = LoadOptions.make({"seed": 2})
    _same(jobs, JobFactory(opts.job_options()).make_all(select(records, opts)))


def test_model_draws_keep_the_per_row_stream(tmp_path) -> None:
    """Missing models are drawn in record order, as model_for_gpu_time would one by one."""
    rng = np.random.default_rng(7)
    n = 400
    durations = rng.choice([60.0, 900.0, 7200.0, 40000.0, 500000.0], size=n)
    lines = ["job_id,submit_time_s,num_gpus,duration_s,model"]
    for i in range(n):
        model = "ncf" if i % 9 == 0 else ""
        lines.append(f"j{i},{rng.uniform(0, 1e5):.3f},{rng.integers(1, 9)},{durations[i]},{model}")
    path = tmp_path / "many.csv"
    path.write_text("\n".join(lines) + "\n")
    for seed in (0, 5):
        options = {"seed": seed}
        expected = _line_by_line("canonical", path, formats._canonical, options)
        _same(load_workload(path, **options).jobs, expected)
    assert len({j.model for j in expected}) >= 5


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\nb,5,1,x\n", 3, "'x'"),
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\nb,5,1\n", 3, "fields"),
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\n\nb,5,0,4\n", 4, "no GPUs"),
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\na,5,1,4\n", 3, "duplicate"),
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\nb,5,1.5,4\n", 3, "integer"),
        ("job_id,submit_time_s,num_gpus,duration_s\na,0,1,10\nb,5,1,inf\n", 3, "'inf'"),
        ("job_id,submit_time_s,num_gpus,duration_s\n a , 0 , 1 , 10 \nb,-5,1,4\n", 3, "-5"),
    ],
)
def test_errors_keep_file_and_line(tmp_path, text, line, reason) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as info:
        load_workload(path, format="canonical")
    assert info.value.line == line and reason in info.value.reason
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_spaces_are_stripped_like_the_line_reader(tmp_path) -> None:
    path = tmp_path / "spaced.csv"
    path.write_text("job_id , submit_time_s,num_gpus,duration_s\n a ,0, 2 ,10\nb , 5,1, 4.5\n")
    assert read_csv_columns(path, NUMERIC["canonical"]) is not None
    expected = _line_by_line("canonical", path, formats._canonical, {})
    _same(load_workload(path).jobs, expected)
    assert [j.name for j in expected] == ["a", "b"]


@pytest.mark.parametrize("pad", ["", " "])
def test_numbers_are_bitwise_those_of_the_line_reader(tmp_path, pad) -> None:
    rng = np.random.default_rng(11)
    values = rng.lognormal(5, 4, size=300)
    texts = [repr(float(v)) for v in values] + [
        "1e3",
        "3.",
        ".5",
        "0.1",
        "1.000000000000000111",
        "7",
    ]
    lines = ["job_id,submit_time_s,num_gpus,duration_s"]
    lines += [f"j{i},{pad}{t}{pad},1,{t}" for i, t in enumerate(texts)]
    path = tmp_path / "numbers.csv"
    path.write_text("\n".join(lines) + "\n")
    fast = read_csv_columns(path, NUMERIC["canonical"])
    slow = read_csv_table(path)
    assert fast is not None and fast.parsed is not None
    for name in ("submit_time_s", "duration_s"):
        assert fast.parsed[name].tobytes() == slow.numbers(name).tobytes()
    assert fast.text("job_id").tolist() == slow.text("job_id").tolist()
    assert fast.lines.tolist() == slow.lines.tolist()
