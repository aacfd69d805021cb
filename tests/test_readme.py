"""The README cannot drift: every Python block runs as pasted, and every command of its
shell blocks names a real subcommand and only options that subcommand accepts.

A block preceded by ``<!-- readme-test: skip REASON -->`` is not run (none is today).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(
    r"(?P<marker><!-- readme-test: skip[^>]*-->\s*)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
)
CLI_NAMES = ("cluster-envs", ".venv/bin/cluster-envs")


def blocks(lang: str) -> list[str]:
    """The bodies of the README's fenced blocks in ``lang`` that are not marked skip."""
    text = README.read_text()
    return [m["body"] for m in FENCE.finditer(text) if m["lang"] == lang and not m["marker"]]


def shell_commands() -> list[list[str]]:
    """Every command of the README's bash blocks, continuations joined, comments cut."""
    commands = []
    for body in blocks("bash"):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            for part in line.split("&&"):
                if part.strip():
                    commands.append(shlex.split(part))
    return commands


PYTHON_BLOCKS = blocks("python")


def test_readme_has_python_and_shell_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 2
    assert any(cmd[:2] == ["bash", "scripts/install.sh"] for cmd in shell_commands())


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_python_block_runs_verbatim(index: int, tmp_path: Path) -> None:
    """Each block runs on its own in a fresh interpreter, outside the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-c", PYTHON_BLOCKS[index]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 0, f"README block {index}:\n{PYTHON_BLOCKS[index]}\n{run.stderr}"


def _cli_options(subcommand: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "cluster_envs.cli", subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, f"cluster-envs {subcommand} --help failed:\n{run.stderr}"
    return run.stdout


def test_shell_commands_use_real_subcommands_and_options() -> None:
    used: dict[str, set[str]] = {}
    for cmd in shell_commands():
        if cmd[0] in CLI_NAMES:
            options = {tok.split("=", 1)[0] for tok in cmd[2:] if tok.startswith("--")}
            used.setdefault(cmd[1], set()).update(options)
        elif cmd[:2] == ["bash", "scripts/install.sh"]:
            script = (ROOT / "scripts" / "install.sh").read_text()
            for option in cmd[2:]:
                assert f"{option})" in script, f"install.sh does not take {option}"
        elif cmd[0] == "bash":
            assert (ROOT / cmd[1]).is_file(), cmd
    assert {"benchmark", "train", "evaluate", "tune", "place"} <= set(used)
    for subcommand, options in sorted(used.items()):
        text = _cli_options(subcommand)
        missing = sorted(o for o in options if not re.search(rf"{re.escape(o)}\b", text))
        assert not missing, f"cluster-envs {subcommand} has no option {missing}"


def test_readme_paths_exist() -> None:
    """Files and folders the README names in backticks (``a/b.ext``, ``a/b/``) exist."""
    text = README.read_text()
    paths = set(
        re.findall(
            r"`((?:agents|benchmarks|scripts|examples|notebooks|cluster_envs|baselines)/[\w./<>-]*(?:\.\w+|/))`",
            text,
        )
    )
    paths |= {p for cmd in shell_commands() for p in cmd if p.startswith("agents/sweeps/")}
    missing = [p for p in sorted(paths) if "<" not in p and not (ROOT / p).exists()]
    assert not missing, missing
