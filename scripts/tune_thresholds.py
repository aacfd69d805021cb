"""Tune the ``best-threshold`` baseline on TRAINING seeds of MoldableScheduling-v0.

Sweeps the efficiency threshold ``eta`` of ``threshold-eta`` and the queue threshold
``q`` of ``threshold-queue`` on the episodes of training seeds (default 0-19) of each env
preset, picks the rule and value with the lowest mean average JCT, and writes the choice
plus the whole sweep table to ``baselines/data/best_threshold.json`` (read by the
``best-threshold`` / ``best-threshold-pollux`` policies). Held-out evaluation seeds
(>= 100) are refused. Episodes are replayed through the no-gym runner (same metrics as
the env, faster). Deterministic: the same command writes the same file.

Usage (about 1 minute on 2 cores)::

    .venv/bin/python scripts/tune_thresholds.py --force

Options: ``--presets default pollux``, ``--seeds 0-19``, ``--etas 0.3:0.95:0.05``,
``--qs 1:16``, ``--out PATH`` (an existing file is kept unless ``--force``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from baselines.moldable_eval import EVAL_SEED_START, check_training_seeds, env_episodes, evaluate
from baselines.threshold import (
    BEST_THRESHOLD_FILE,
    EfficiencyThresholdScheduler,
    QueueThresholdScheduler,
)
from cluster_envs.errors import ConfigError
from cluster_envs.seeds import parse_seeds

DEFAULT_PRESETS = ("default", "pollux")
DEFAULT_SEEDS = "0-19"
DEFAULT_ETAS = "0.3:0.95:0.05"
DEFAULT_QS = "1:16"
METRIC = "avg_jct_s"


def parse_grid(text: str, integer: bool) -> list[float]:
    """``"start:stop:step"`` (inclusive), ``"start:stop"`` (step 1) or ``"a,b,c"``."""
    if ":" not in text:
        values = [float(v) for v in text.split(",")]
    else:
        parts = [float(v) for v in text.split(":")]
        start, stop, step = (parts + [1.0])[:3]
        values = list(np.round(np.arange(start, stop + step / 2, step), 6))
    return [int(v) for v in values] if integer else [float(v) for v in values]


def sweep(preset: str, seeds: list[int], etas: list[float], qs: list[float]) -> dict[str, Any]:
    """The sweep table and the best rule for one preset."""
    episodes = env_episodes(seeds, preset=preset)
    rows = []
    candidates: list[tuple[str, str, float, type]] = [
        ("threshold-eta", "eta", eta, EfficiencyThresholdScheduler) for eta in etas
    ] + [("threshold-queue", "q", q, QueueThresholdScheduler) for q in qs]
    for rule, param, value, cls in candidates:
        metrics = evaluate(lambda cls=cls, value=value: cls(value), episodes)
        jct = [m[METRIC] for m in metrics]
        rows.append(
            {
                "policy": rule,
                "param": param,
                "value": value,
                f"mean_{METRIC}": float(np.mean(jct)),
                f"std_{METRIC}": float(np.std(jct, ddof=1)) if len(jct) > 1 else 0.0,
                "per_seed": [round(v, 3) for v in jct],
            }
        )
    best = min(rows, key=lambda r: (r[f"mean_{METRIC}"], r["policy"], r["value"]))
    names = sorted({ep.workload.name for ep in episodes})
    out: dict[str, Any] = {
        "env_kwargs": {"preset": preset},
        "episode_workloads": names,
        "best": {k: best[k] for k in ("policy", "param", "value", f"mean_{METRIC}")},
        "sweep": rows,
    }
    if len(names) < len(seeds):
        out["note"] = (
            f"this preset draws its episodes from a fixed pool; the {len(seeds)} training "
            f"seeds used {len(names)} distinct workloads, which held-out seeds re-use (they "
            "differ only in the simulator seed), so held-out results here are not on unseen "
            "workloads"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS))
    parser.add_argument("--seeds", default=DEFAULT_SEEDS, help="training seeds, e.g. 0-19")
    parser.add_argument("--etas", default=DEFAULT_ETAS, help="eta grid start:stop:step")
    parser.add_argument("--qs", default=DEFAULT_QS, help="q grid start:stop[:step]")
    parser.add_argument("--out", type=Path, default=BEST_THRESHOLD_FILE)
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    try:
        check_training_seeds(seeds)
    except ConfigError as err:
        parser.error(str(err))
    if args.out.exists() and not args.force:
        parser.error(f"{args.out} exists; pass --force to overwrite it")
    etas, qs = parse_grid(args.etas, False), parse_grid(args.qs, True)
    started = time.perf_counter()
    result: dict[str, Any] = {
        "description": "best-threshold baseline: threshold rule and value with the lowest "
        f"mean {METRIC} over the training seeds of each MoldableScheduling-v0 preset",
        "command": "python scripts/tune_thresholds.py " + " ".join(argv or sys.argv[1:]),
        "metric": f"mean over training seeds of {METRIC} (lower is better)",
        "training_seeds": seeds,
        "held_out": f"evaluation seeds >= {EVAL_SEED_START} were never used in tuning",
        "grid": {"eta": etas, "q": qs},
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "presets": {},
    }
    for preset in args.presets:
        result["presets"][preset] = sweep(preset, seeds, etas, qs)
        best = result["presets"][preset]["best"]
        print(
            f"{preset}: best {best['policy']} {best['param']}={best['value']} "
            f"(mean {METRIC} {best[f'mean_{METRIC}']:.0f} s)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
