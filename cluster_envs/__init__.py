"""cluster-envs: simulator, performance models and Gymnasium envs for GPU-cluster scheduling.

The two-line entry point for people who only want the simulator::

    wl = cluster_envs.load_workload("philly-sample")
    metrics = cluster_envs.simulate(wl, policy="fifo", cluster="pollux-testbed", seed=0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from cluster_envs.config import ClusterConfig, SimConfig
    from cluster_envs.policies.base import SchedulingPolicy
    from cluster_envs.workload.workload import Workload


def load_workload(source: Any, format: str | None = None, **options: Any) -> Workload:  # noqa: A002
    """Load a workload from a trace file or a preset name (see ``cluster_envs.workload``)."""
    from cluster_envs.workload import load_workload as _load

    return _load(source, format=format, **options)


def simulate(
    workload: Any,
    policy: str | SchedulingPolicy = "fifo",
    cluster: str | ClusterConfig | Mapping[str, Any] = "pollux-testbed",
    seed: int | None = 0,
    config: SimConfig | Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """Run one episode and return its metrics (``avg_jct_s``, ``p95_jct_s``, ...).

    Args:
        workload: A Workload, a list of JobSpec, or a path / preset for ``load_workload``.
        policy: Registered policy name (``"fifo"``, ...) or a SchedulingPolicy.
        cluster: Cluster preset name (``"pollux-testbed"``, ``"philly"``, ...) or config.
        seed: Seed for the policy (and for a synthetic workload given by name).
        config: Simulator settings (``time_slice_s``, ``rescale_cost_s``, ...).
    """
    from cluster_envs.runner import run_episode

    if isinstance(workload, str) or hasattr(workload, "__fspath__"):
        workload = load_workload(workload, seed=seed or 0)
    return run_episode(workload, policy, cluster, config, seed).metrics


def _register() -> None:
    from cluster_envs.envs.registration import register_envs

    register_envs()


_register()

__all__ = ["__version__", "load_workload", "simulate"]
