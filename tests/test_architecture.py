"""Architecture rules of issue 10, checked on the source: they fail when a change breaks them.

* nothing outside ``cluster_envs/sim/`` reaches into a ``Simulator``'s private state
  (``sim._x``, ``self.sim._x``, ``env.sim._x``, ...); inside ``sim/`` only the engine and
  the base class of its read-only accessors touch it;
* no module under ``cluster_envs/`` is longer than 350 lines;
* the simulator's public state refuses writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cluster_envs.sim.engine import Simulator
from tests.helpers import make_job

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cluster_envs", "baselines", "agents")
SIM_OWNERS = {"cluster_envs/sim/engine.py", "cluster_envs/sim/state_api.py"}
MAX_LINES = 350
#: Names that hold a Simulator in this code base.
SIM_NAMES = {"sim", "simulator", "forked", "copy_sim"}


def _modules(packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def _holds_simulator(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SIM_NAMES
    return isinstance(node, ast.Attribute) and node.attr in SIM_NAMES


def private_simulator_accesses(path: Path) -> list[str]:
    """``file:line: expr`` for every ``<simulator>._name`` (non-dunder) in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    label = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [
        f"{label}:{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and _holds_simulator(node.value)
    ]


def test_nothing_outside_the_engine_touches_private_simulator_state() -> None:
    bad = [
        hit
        for path in _modules()
        if path.relative_to(ROOT).as_posix() not in SIM_OWNERS
        for hit in private_simulator_accesses(path)
    ]
    assert bad == []


def test_the_private_access_scan_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(env):\n    return env.sim._queue, sim._stop(1), sim.queue\n")
    hits = private_simulator_accesses(sample)
    assert [h.split(": ", 1)[1] for h in hits] == ["env.sim._queue", "sim._stop"]


def test_no_core_module_is_over_350_lines() -> None:
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in _modules(("cluster_envs",))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_public_simulator_state_refuses_writes() -> None:
    sim = Simulator([make_job(0, 0.0, 100.0), make_job(1, 5.0, 50.0)], "toy")
    sim.step()
    with pytest.raises(ValueError):
        sim.progress[0] = 1.0
    with pytest.raises(ValueError):
        sim.state[:] = 0
    with pytest.raises(TypeError):
        sim.queue[1] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        sim.now_s = 3.0  # type: ignore[misc]
    with pytest.raises((AttributeError, ValueError, TypeError)):
        sim.inventory.free[0] = 0
    # ... and the windows follow the simulation live.
    queue = sim.queue
    assert list(queue) == [0]
    sim.advance_to(5.0)
    assert list(queue) == [0, 1]  # the proxy taken before the arrival shows it
    assert not sim.progress.flags.writeable
