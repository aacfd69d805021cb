"""Where the grid's cells run: this process, local worker processes, or Ray tasks.

Every backend returns the rows in the grid's order, and a cell's row does not depend on
where it ran, so the backends give identical results (checked by a test).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from cluster_envs.errors import ConfigError
from cluster_envs.harness.grid import Cell, run_cell
from cluster_envs.names import unknown_name


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="episode")


def worker_context() -> Any:
    """How local workers start: forked, unless this process has loaded torch.

    A child forked from a process whose OpenMP thread team has run (any torch op on more
    than one thread, e.g. loading and playing an agent) deadlocks in its first parallel
    torch op; a trained agent's cell would hang forever. Such a parent starts its workers
    with ``spawn`` (fresh interpreters: policies registered in this process at run time
    are not seen there, as with Ray, and a script that runs the grid needs the usual
    ``if __name__ == "__main__":`` guard). Otherwise ``fork``: cheap, and it keeps them.
    """
    return multiprocessing.get_context("spawn" if "torch" in sys.modules else "fork")


def run_local(cells: Sequence[Cell], workers: int, progress: bool, **_: Any) -> list[dict]:
    """In this process (``workers == 1``) or a pool of worker processes
    (:func:`worker_context`)."""
    bar = _progress(len(cells), progress, "benchmark")
    rows: list[dict] = []
    if workers == 1:
        for cell in cells:
            rows.append(run_cell(cell))
            if bar:
                bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers, mp_context=worker_context()) as pool:
            for row in pool.map(run_cell, cells, chunksize=1):
                rows.append(row)
                if bar:
                    bar.update()
    if bar:
        bar.close()
    return rows


def run_ray(
    cells: Sequence[Cell], workers: int, progress: bool, address: str | None = None, **_: Any
) -> list[dict]:
    """As Ray tasks, on a local Ray started here or on the cluster at ``address``."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray backend needs Ray: pip install 'cluster-envs[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, ignore_reinit_error=True, log_to_driver=False,
                     include_dashboard=False)  # fmt: skip
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_cell)
        refs = [remote.remote(cell) for cell in cells]
        bar = _progress(len(refs), progress, "benchmark (ray)")
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            if bar:
                bar.update(len(done))
        if bar:
            bar.close()
        return ray.get(refs)
    finally:
        if started:
            ray.shutdown()


BACKENDS: dict[str, Callable[..., list[dict]]] = {"local": run_local, "ray": run_ray}


def run_grid(
    cells: Sequence[Cell], backend: str, workers: int, progress: bool, address: str | None = None
) -> list[dict]:
    """Run every cell with the named backend."""
    if backend not in BACKENDS:
        raise unknown_name("backend", backend, BACKENDS)
    return BACKENDS[backend](cells, workers=workers, progress=progress, address=address)
