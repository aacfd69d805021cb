"""Search outputs: the trace as JSON and the search-cost curve as a PNG, never overwritten."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from baselines.placement.methods import SearchResult
from baselines.placement.problem import PlacementInstance
from cluster_envs.errors import ConfigError

SECONDS_PER_HOUR = 3600.0


def output_paths(out_dir: Path, instance: PlacementInstance, result: SearchResult) -> list[Path]:
    """``place-<instance>-<method>-seed<S>.json`` and ``.png`` in ``out_dir``."""
    stem = f"place-{instance.name}-{result.method}-seed{result.seed}"
    return [out_dir / f"{stem}.json", out_dir / f"{stem}.png"]


def search_record(
    instance: PlacementInstance, result: SearchResult, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON record of one search: instance, result, trace and versions."""
    import skopt

    return {
        **result.to_dict(),
        "instance": instance.to_dict(),
        "versions": {"python": platform.python_version(), "scikit-optimize": skopt.__version__},
        **(extra or {}),
    }


def plot_search(result: SearchResult, instance: PlacementInstance, path: Path) -> None:
    """Best-so-far estimated total JCT (h) against evaluations, with every evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evals = range(1, len(result.costs_s) + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter(
        evals, [c / SECONDS_PER_HOUR for c in result.costs_s], s=8, alpha=0.4, label="evaluation"
    )
    ax.step(
        evals,
        [c / SECONDS_PER_HOUR for c in result.best_so_far_s],
        where="post",
        label="best so far",
    )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("total JCT, estimated lengths (h)")
    ax.set_title(f"{result.method} on {instance.name} (seed {result.seed})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_search_outputs(
    out_dir: str | Path,
    instance: PlacementInstance,
    result: SearchResult,
    force: bool = False,
    extra: dict[str, Any] | None = None,
) -> list[Path]:
    """Write the trace JSON and the PNG plot; refuse to overwrite unless ``force``.

    Raises:
        ConfigError: An output file exists and ``force`` is False (nothing is written).
    """
    out = Path(out_dir)
    paths = output_paths(out, instance, result)
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise ConfigError(f"{', '.join(existing)} already exist; pass --force to overwrite")
    out.mkdir(parents=True, exist_ok=True)
    paths[0].write_text(json.dumps(search_record(instance, result, extra), indent=2) + "\n")
    plot_search(result, instance, paths[1])
    return paths
