"""Cut the per-split trace windows of the workload families into ``cluster_envs/data/families``.

Reads the public data in ``/work/shared/data`` (see each folder's SOURCE.md) and writes
small window files, one per (family, split, window), so that a family's train,
validation and test splits are *different files cut from disjoint trace periods (or
virtual clusters, or job ranges)*, never only different seeds. Every window holds
``WINDOW_JOBS`` consecutive jobs (after the filter), in the source's own format where
the loaders read it (Philly CSV, SWF rows) and in the canonical job CSV for Alibaba.

Cuts (all sorted by submission, stable):

* ``philly-time``: Philly virtual cluster ``6214e9``; train windows from September and
  October 2017, validation from November, test from December.
* ``philly-vc``: October-November 2017; train VCs ``11cb48``, ``6c71a0``, ``b436b2``,
  ``103959``; validation VC ``0e4a51``; test VCs ``ee9e8c``, ``2869ce``, ``7f04ca``.
  Philly filter (Pollux's): ``duration >= 60 s`` and ``gpu_time < 1000 GPU-hours``.
* ``alibaba``: Alibaba GPU v2023 (openb, default list) GPU tasks that ran to an end
  (``Succeeded`` or ``Failed``), ``deletion - scheduled >= 60 s`` and < 1000 GPU-hours;
  the fractional ``gpu_milli`` of shared GPUs is rounded up to one whole GPU. Split by
  creation time: first 60 % train, next 20 % validation, last 20 % test.
* ``kth-sp2``: KTH SP2 SWF log, first 60 % of jobs (by submit) train, next 20 %
  validation, last 20 % test; rows copied unchanged.
* ``lublin-256``: the Lublin-Feitelson model log, same 60/20/20 cut by job order.

Inside a split, windows start at evenly spaced positions of the split's job range.

Usage::

    python scripts/make_family_samples.py [/work/shared/data] [cluster_envs/data/families]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: Jobs per window file (episodes take a consecutive run of them).
WINDOW_JOBS = 160
#: Window files per split.
WINDOWS = {"train": 3, "validation": 1, "test": 2}
MIN_DURATION_S = 60.0
MAX_GPU_TIME_S = 1000 * 3600.0
PHILLY_TIME = {"train": (9, 10), "validation": (11,), "test": (12,)}
PHILLY_TIME_VC = "6214e9"
PHILLY_VC = {
    "train": ("11cb48", "6c71a0", "b436b2", "103959"),
    "validation": ("0e4a51",),
    "test": ("ee9e8c", "2869ce", "7f04ca"),
}
PHILLY_VC_MONTHS = (10, 11)
#: Fractions of the job (or time) range of train / validation; test is the rest.
TRAIN_FRAC, VALIDATION_FRAC = 0.6, 0.2


def _starts(num_rows: int, count: int) -> list[int]:
    """``count`` evenly spaced window starts in ``[0, num_rows - WINDOW_JOBS]``."""
    if num_rows < WINDOW_JOBS:
        raise SystemExit(f"a split has only {num_rows} jobs, fewer than {WINDOW_JOBS}")
    return [int(s) for s in np.linspace(0, num_rows - WINDOW_JOBS, count).round()]


def _windows(df: pd.DataFrame, split: str) -> list[pd.DataFrame]:
    return [df.iloc[s : s + WINDOW_JOBS] for s in _starts(len(df), WINDOWS[split])]


def _philly(source: Path) -> pd.DataFrame:
    df = pd.read_csv(source / "philly_pollux" / "philly.csv", dtype={"cluster": str})
    df = df.dropna(how="all")
    df = df[(df["duration"] >= MIN_DURATION_S) & (df["gpu_time"] < MAX_GPU_TIME_S)]
    df = df.assign(_t=pd.to_datetime(df["timestamp"])).sort_values("_t", kind="stable")
    return df


def _write_csv(frames: list[pd.DataFrame], out: Path, family: str, split: str) -> None:
    for i, frame in enumerate(frames, start=1):
        path = out / family / f"{split}-{i}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.drop(columns=[c for c in frame.columns if c.startswith("_")]).to_csv(
            path, index=False, float_format="%.3f"
        )


def philly_time(source: Path, out: Path) -> None:
    df = _philly(source)
    df = df[df["cluster"] == PHILLY_TIME_VC]
    for split, months in PHILLY_TIME.items():
        part = df[df["_t"].dt.month.isin(months)]
        _write_csv(_windows(part, split), out, "philly-time", split)


def philly_vc(source: Path, out: Path) -> None:
    df = _philly(source)
    df = df[df["_t"].dt.month.isin(PHILLY_VC_MONTHS)]
    for split, vcs in PHILLY_VC.items():
        frames = []
        per_vc = max(1, WINDOWS[split] // len(vcs))
        for vc in vcs:
            part = df[df["cluster"] == vc]
            frames += [part.iloc[s : s + WINDOW_JOBS] for s in _starts(len(part), per_vc)]
        _write_csv(frames[: max(WINDOWS[split], len(vcs))], out, "philly-vc", split)


def _fractions(n: int) -> dict[str, tuple[int, int]]:
    a, b = int(n * TRAIN_FRAC), int(n * (TRAIN_FRAC + VALIDATION_FRAC))
    return {"train": (0, a), "validation": (a, b), "test": (b, n)}


def alibaba(source: Path, out: Path) -> None:
    df = pd.read_csv(source / "alibaba_gpu_v2023" / "openb_pod_list_default.csv")
    df = df[(df["num_gpu"] >= 1) & df["pod_phase"].isin(["Succeeded", "Failed"])]
    df = df.assign(duration_s=df["deletion_time"] - df["scheduled_time"])
    df = df[(df["duration_s"] >= MIN_DURATION_S)]
    df = df[df["duration_s"] * df["num_gpu"] < MAX_GPU_TIME_S]
    df = df.sort_values("creation_time", kind="stable").reset_index(drop=True)
    canon = pd.DataFrame(
        {
            "job_id": df["name"],
            "submit_time_s": df["creation_time"] - df["creation_time"].iloc[0],
            "num_gpus": df["num_gpu"].astype(int),
            "duration_s": df["duration_s"].astype(float),
        }
    )
    for split, (a, b) in _fractions(len(canon)).items():
        _write_csv(_windows(canon.iloc[a:b], split), out, "alibaba", split)


def _swf(path: Path, out: Path, family: str, credit: str) -> None:
    lines = path.read_text().splitlines()
    rows = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(";")]
    for split, (a, b) in _fractions(len(rows)).items():
        part = rows[a:b]
        for i, s in enumerate(_starts(len(part), WINDOWS[split]), start=1):
            target = out / family / f"{split}-{i}.swf"
            target.parent.mkdir(parents=True, exist_ok=True)
            header = f"; {credit}\n; window of {WINDOW_JOBS} jobs, {split} split\n"
            target.write_text(header + "\n".join(part[s : s + WINDOW_JOBS]) + "\n")


def main(argv: list[str]) -> int:
    source = Path(argv[1] if len(argv) > 1 else "/work/shared/data")
    out = Path(argv[2] if len(argv) > 2 else "cluster_envs/data/families")
    philly_time(source, out)
    philly_vc(source, out)
    alibaba(source, out)
    _swf(
        source / "pwa_kth_sp2" / "KTH-SP2-1996-2.1-cln.swf",
        out,
        "kth-sp2",
        "KTH-SP2-1996-2.1-cln.swf, Parallel Workloads Archive (Feitelson); donor Lars Malinowsky",
    )
    _swf(
        source / "lublin_synthetic_swf" / "lublin_256.swf",
        out,
        "lublin-256",
        "lublin_256.swf, Lublin & Feitelson model (PWA; via DIR-LAB/deep-batch-scheduler)",
    )
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {sum(1 for p in out.rglob('*') if p.is_file())} files, {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
