"""Every user error of the real ``cluster-envs`` command: one line, non-zero exit, no traceback.

Each case runs the installed console script in a subprocess (the entry point a user
types), so a heavy import, a stray print or an uncaught exception shows up here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_envs.envs.registration import resolve_env_id
from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name
from cluster_envs.seeds import MAX_SEEDS, parse_seeds

SCRIPT = Path(sys.executable).with_name("cluster-envs")
CLUSTER_ENVS = Path(__file__).resolve().parents[1] / "cluster_envs"
#: A module path into a layer above the core (``baselines.moldable``, ``agents.policy``).
LAYER_ABOVE = re.compile(r"(?<![\w.])(baselines|agents)\.[A-Za-z_]")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "cluster_envs.cli"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, exactly one stderr line naming the problem, no traceback anywhere."""
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


BENCH = ["benchmark", "--env", "MoldableScheduling-v0", "--policies", "fifo", "--seeds", "0"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["simulate", "--seed", "-1"], ["--seed", "must be >= 0"]),
        (["simulate", "--seed", "x"], ["--seed", "not an integer"]),
        (["simulate", "--policies", ","], ["--policies", "names nothing"]),
        (["simulate", "--policies", "fifo,,sjf"], ["--policies", "empty entry"]),
        (["simulate", "--policies", "sfj"], ["unknown policy 'sfj'", "did you mean 'sjf'"]),
        (["simulate", "--policies", "sb3:x.zip"], ["trained agent, not a heuristic"]),
        (["simulate", "--num-jobs", "0"], ["--num-jobs", "must be >= 1"]),
        (["simulate", "--cluster", "polux-testbed"], ["did you mean 'pollux-testbed'"]),
        (
            ["benchmark", "--env", "MoldablScheduling-v0", "--policies", "fifo"],
            ["unknown env", "did you mean 'MoldableScheduling-v0'"],
        ),
        (
            ["benchmark", "--env", "MoldableScheduling-v0", "--policies", "tetirs"],
            ["did you mean 'tetris'"],
        ),  # fmt: skip
        (
            ["benchmark", "--env", "MoldableScheduling-v0", "--policies", "pretrianed:x"],
            ["unknown policy"],
        ),  # fmt: skip
        ([*BENCH[:-1], "5-1"], ["bad seeds", "runs backwards"]),
        ([*BENCH[:-1], "0-a"], ["bad seeds"]),
        (["benchmark", "--suite", "defualt"], ["did you mean 'default'"]),
        ([*BENCH, "--workload", "synthetic-61/test"], ["unknown workload family", "synthetic-64"]),
        ([*BENCH, "--workload", "synthetic-64/tset"], ["unknown split 'tset'", "'test'"]),
        (["benchmark", "--bogus"], ["unrecognized arguments"]),
        (["train", "--algo", "ppo", "--out", "x", "--n-envs", "0"], ["--n-envs", ">= 1"]),
        (["train", "--algo", "pp", "--out", "NEW_DIR"], ["did you mean 'ppo'"]),
        (["place", "--method", "gp-eii"], ["did you mean 'gp-ei'"]),
        (["nonsense"], ["invalid choice"]),
    ],
)
def test_user_errors_are_one_line(args: list[str], needles: list[str], tmp_path: Path) -> None:
    args = [str(tmp_path / "new") if a == "NEW_DIR" else a for a in args]
    assert_one_line_error(cli(*args, cwd=tmp_path), *needles)
    assert not (tmp_path / "new").exists()


def test_existing_file_as_output_folder_is_refused(tmp_path: Path) -> None:
    existing = tmp_path / "taken.txt"
    existing.write_text("keep me\n")
    for args in (
        [*BENCH, "--out", str(existing), "--no-plots"],
        ["place", "--method", "random", "--calls", "2", "--out", str(existing)],
        ["train", "--algo", "ppo", "--out", str(existing)],
    ):
        assert_one_line_error(cli(*args), "existing file", "taken.txt")
        assert existing.read_text() == "keep me\n"


def test_unknown_workload_fails_before_the_output_folder_exists(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    result = cli(*BENCH, "--workload", "unknown", "--out", str(out), "--no-plots")
    assert_one_line_error(result, "unknown preset 'unknown'")
    assert not out.exists()


def test_evaluate_says_why_best_model_is_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "last_model.zip").write_bytes(b"not read: the error comes first")
    result = cli("evaluate", "--model", str(run / "best_model.zip"))
    assert_one_line_error(result, "best_model.zip", "never evaluated", "last_model.zip")


def test_help_shows_defaults_and_every_command() -> None:
    top = cli("--help")
    assert top.returncode == 0
    for name in ("simulate", "benchmark", "train", "evaluate", "tune", "place"):
        assert name in top.stdout
    sim = cli("simulate", "--help")
    assert sim.returncode == 0 and "(default: philly-sample)" in sim.stdout
    bench = cli("benchmark", "--help")
    assert "default 100-104" in " ".join(bench.stdout.split())


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys; from cluster_envs.cli import build_parser; build_parser(); "
        "print(','.join(m for m in ('torch', 'stable_baselines3', 'matplotlib', 'scipy', "
        "'skopt', 'ray', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_seed_parser_is_linear_and_strict() -> None:
    seeds = parse_seeds("0-200000")
    assert len(seeds) == 200_001 and seeds[0] == 0 and seeds[-1] == 200_000
    assert parse_seeds("3,1-2,3") == [3, 1, 2]  # order kept, duplicates dropped
    for bad in ("", ",", "1,", "-3", "4-2", "1-x", f"0-{MAX_SEEDS}"):
        with pytest.raises(ConfigError, match="bad seeds"):
            parse_seeds(bad)


def test_env_ids_resolve_with_or_without_namespace() -> None:
    full = "cluster_envs/MoldableScheduling-v0"
    assert resolve_env_id("MoldableScheduling-v0") == resolve_env_id(full) == full
    with pytest.raises(ConfigError, match="did you mean 'JobPlacement-v0'"):
        resolve_env_id("cluster_envs/JobPlacment-v0")


def test_unknown_name_suggests_and_lists() -> None:
    error = unknown_name("policy", "fifp", ["sjf", "fifo", "tetris"], listed="known")
    assert str(error) == "unknown policy 'fifp' (did you mean 'fifo'?); known: fifo, sjf, tetris"
    assert "did you mean" not in str(unknown_name("policy", "zzz", ["sjf"]))


def test_core_names_no_layer_above_it() -> None:
    """``cluster_envs/`` never names ``baselines.`` or ``agents.`` (they register themselves)."""
    offenders = [
        f"{path.relative_to(CLUSTER_ENVS.parent)}:{n}"
        for path in CLUSTER_ENVS.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if LAYER_ABOVE.search(line)
    ]
    assert offenders == []
