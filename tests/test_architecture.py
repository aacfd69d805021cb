"""Architecture rule of issue 10 checked on the source: no module under ``cluster_envs/`` is
longer than 350 lines, so each stays readable in one sitting. (Private simulator access
and read-only state: ``tests/test_sim_readonly_api.py``; layering:
``tests/test_cli_errors.py::test_core_names_no_layer_above_it``.)
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 350


def long_modules(root: Path) -> dict[str, int]:
    """Module path -> line count, for every ``*.py`` under ``root`` over the limit."""
    return {
        p.relative_to(root.parent).as_posix(): n
        for p in sorted(root.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }


def test_no_core_module_is_over_350_lines() -> None:
    assert long_modules(ROOT / "cluster_envs") == {}


def test_the_line_check_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (pkg / "small.py").write_text("x = 1\n")
    assert long_modules(pkg) == {"pkg/big.py": MAX_LINES + 1}
