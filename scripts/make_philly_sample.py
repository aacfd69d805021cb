"""Cut ``cluster_envs/data/philly_sample.csv``, the default workload, from the Philly trace.

The source is the Philly job trace as flattened by the Pollux authors
(``philly_pollux/philly.csv``: Jeon et al., ATC'19, CC-BY-4.0; processed by Qiao et al.,
OSDI'21, Apache-2.0). The cut, in order:

1. keep the jobs Pollux's own workload generator keeps: ``duration >= 60 s`` and
   ``gpu_time < 1000 GPU-hours``;
2. keep the busiest virtual cluster, ``6214e9`` (about half of all jobs);
3. sort by submission time (stable, so equal timestamps keep file order);
4. among all runs of ``NUM_JOBS`` consecutive jobs that arrive within ``MAX_SPAN_H``
   hours (about Pollux's 8-hour window), take the first with the most multi-GPU jobs.

The rows are written unchanged in the Philly CSV format.

Usage::

    python scripts/make_philly_sample.py /path/to/philly.csv cluster_envs/data/philly_sample.csv
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

NUM_JOBS = 500
MAX_SPAN_H = 9.0
CLUSTER = "6214e9"
MIN_DURATION_S = 60.0
MAX_GPU_TIME_S = 1000 * 3600.0


def cut(source: str) -> pd.DataFrame:
    """Return the sample rows of the Philly CSV at ``source`` (see the module docstring)."""
    df = pd.read_csv(source, dtype={"cluster": str})
    keep = (
        (df["duration"] >= MIN_DURATION_S)
        & (df["gpu_time"] < MAX_GPU_TIME_S)
        & (df["cluster"] == CLUSTER)
    )
    df = df[keep].copy()
    df["_t"] = pd.to_datetime(df["timestamp"], format="%Y-%m-%d %H:%M:%S")
    df = df.sort_values("_t", kind="stable").reset_index(drop=True)
    t_s = (df["_t"] - df["_t"].iloc[0]).dt.total_seconds().to_numpy()
    multi = np.concatenate([[0], np.cumsum(df["num_gpus"].to_numpy() > 1)])
    span_s = t_s[NUM_JOBS - 1 :] - t_s[: len(t_s) - NUM_JOBS + 1]
    num_multi = multi[NUM_JOBS:] - multi[: len(multi) - NUM_JOBS]
    candidates = np.flatnonzero(span_s <= MAX_SPAN_H * 3600.0)
    start = int(candidates[np.argmax(num_multi[candidates])])
    print(
        f"start row {start} at {df['timestamp'].iloc[start]}: {NUM_JOBS} jobs over "
        f"{span_s[start] / 3600:.2f} h, {num_multi[start]} multi-GPU jobs"
    )
    return df.iloc[start : start + NUM_JOBS].drop(columns="_t")


def main(argv: list[str]) -> None:
    """Command-line entry point: ``SOURCE DEST``."""
    if len(argv) != 2:
        raise SystemExit(__doc__)
    cut(argv[0]).to_csv(argv[1], index=False)


if __name__ == "__main__":
    main(sys.argv[1:])
