"""CLI start-up: CPU seconds of ``cluster-envs --help`` and of argument errors.

Each case runs in a fresh process; its CPU time (user + system, from the children's
rusage) is the median over ``--repeats`` runs. The reference, ``python -c "import
gymnasium"``, is measured in the same run, so the ratio does not depend on how loaded
the machine is. Targets (issue 15): every case under 1 s of CPU and at most 2x the
reference.

Usage: ``.venv/bin/python benchmarks/bench_cli.py [--repeats 5]``. Writes
``benchmarks/results/cli.md`` and ``benchmarks/results/cli.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCRIPT = Path(sys.executable).with_name("cluster-envs")
#: CPU-second target of every CLI case.
TARGET_CPU_S = 1.0
#: Largest allowed ratio to the ``import gymnasium`` reference.
TARGET_RATIO = 2.0

CASES: dict[str, list[str]] = {
    "cluster-envs --help": ["--help"],
    "cluster-envs simulate --help": ["simulate", "--help"],
    "cluster-envs simulate --seed -1": ["simulate", "--seed", "-1"],
    "cluster-envs simulate --policies sfj": ["simulate", "--policies", "sfj"],
    "cluster-envs benchmark --env MoldablScheduling-v0 ...": [
        "benchmark",
        "--env",
        "MoldablScheduling-v0",
        "--policies",
        "fifo",
    ],  # fmt: skip
    "cluster-envs train --algo pp --out x": ["train", "--algo", "pp", "--out", "/nonexistent/x"],
}


def cpu_seconds(command: list[str]) -> float:
    """User + system CPU seconds of one run of ``command`` (a fresh process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, capture_output=True, check=False, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(command: list[str], repeats: int) -> float:
    return statistics.median(cpu_seconds(command) for _ in range(repeats))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (median)")
    args = parser.parse_args()
    reference = median_cpu([sys.executable, "-c", "import gymnasium"], args.repeats)
    rows = []
    for name, argv in CASES.items():
        cpu = median_cpu([str(SCRIPT), *argv], args.repeats)
        ok = cpu < TARGET_CPU_S and cpu <= TARGET_RATIO * reference
        rows.append({"case": name, "cpu_s": cpu, "ratio": cpu / reference, "ok": ok})
        print(f"{name:55s} {cpu:6.3f} s CPU  {cpu / reference:4.2f}x  {'ok' if ok else 'SLOW'}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    doc = {"reference_import_gymnasium_cpu_s": reference, "repeats": args.repeats,
           "python": platform.python_version(), "rows": rows}  # fmt: skip
    (RESULTS / "cli.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [
        "# CLI start-up (CPU seconds, median of fresh processes)",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_cli.py --repeats {args.repeats}`; "
        f'Python {platform.python_version()}. Reference `python -c "import gymnasium"`: '
        f"**{reference:.3f} s** CPU in the same run. Targets: < {TARGET_CPU_S:.0f} s CPU "
        f"and <= {TARGET_RATIO:.0f}x the reference.",
        "",
        "| case | CPU s | x import gymnasium | meets target |",
        "|---|---|---|---|",
        *(
            f"| `{r['case']}` | {r['cpu_s']:.3f} | {r['ratio']:.2f} | {'yes' if r['ok'] else 'no'} |"
            for r in rows
        ),  # fmt: skip
        "",
    ]
    (RESULTS / "cli.md").write_text("\n".join(lines))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
