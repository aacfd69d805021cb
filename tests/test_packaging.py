"""Packaging: the base install needs no optional package; the wheel ships every data file
and runs the main job from a fresh virtual environment, outside the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cluster_envs", "agents", "baselines")
#: Packages of the extras (agents, placement, plots, ray): the base install has none.
OPTIONAL = (
    "torch", "stable_baselines3", "sb3_contrib", "tensorboard", "skopt", "sklearn",
    "matplotlib", "ray", "tqdm", "rich", "yaml",
)  # fmt: skip
#: Not part of a source tree that gets built.
BUILD_IGNORE = (".venv", ".git", "build", "dist", "results", "runs", "*.egg-info", "__pycache__")

BASE_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked: not part of the base install")
            return None

    sys.meta_path.insert(0, Block())
    import gymnasium as gym
    import cluster_envs
    for env_id in sorted(gym.registry):
        if env_id.startswith("cluster_envs/"):
            env = gym.make(env_id)
            env.reset(seed=0)
            env.step(env.action_space.sample())
    for policy in ("fifo", "sjf", "tetris", "best-threshold", "slaq", "fifo-best-fit"):
        metrics = cluster_envs.simulate("synthetic", policy=policy, cluster="small", seed=0)
        assert metrics["avg_jct_s"] > 0, policy
    loaded = sorted({m.partition(".")[0] for m in sys.modules} & BLOCKED)
    assert not loaded, loaded
    print("base ok")
    """
)


def test_base_install_needs_no_optional_package() -> None:
    """`import cluster_envs`, every `gym.make` and `simulate` with the extras blocked."""
    out = subprocess.run(
        [sys.executable, "-c", BASE_SCRIPT, ",".join(OPTIONAL)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "base ok" in out.stdout


def test_base_dependencies_exclude_the_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for name in ("torch", "stable-baselines3", "scikit-optimize", "matplotlib", "ray"):
        assert name not in base, name
    extras = project["optional-dependencies"]
    assert {"agents", "placement", "plots", "ray", "dev", "all"} <= set(extras)
    assert project["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text()


def _build_wheel(tmp_path: Path) -> Path:
    """Build the wheel from a copy of the source tree (no network: no build isolation)."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*BUILD_IGNORE))
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", "-w", str(dist), str(source)],
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("cluster_envs-*.whl")
    return wheel


def _data_files() -> set[str]:
    """Every non-Python file inside the packages, as a path relative to the root."""
    files = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and path.suffix not in (".py", ".pyc"):
                files.add(path.relative_to(ROOT).as_posix())
    return files


@pytest.mark.slow
def test_wheel_ships_data_and_runs_main_job_in_fresh_venv(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_data_files() - names)
    assert not missing, f"package data missing from the wheel: {missing}"
    assert "agents/sweeps/ppo_moldable_toy.yml" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The dependencies come from this test's environment (no network); .pth lines are
    # appended after the fresh venv's own site-packages, so the wheel's copy wins.
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
        + ["--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run(
        [
            python,
            "-c",
            "import cluster_envs, agents; print(cluster_envs.__file__, agents.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
        env=env,
    ).stdout
    assert str(ROOT) not in where and where.startswith(str(venv)), where
    run = subprocess.run(
        [venv / "bin" / "cluster-envs", "benchmark", "--suite", "default", "--seeds", "100"]
        + ["--no-plots", "--no-progress", "--out", "out"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert (work / "out" / "results.json").is_file()
    assert "pretrained:MoldableScheduling-v0" in run.stdout
