"""Typed, validated configuration: clusters, simulator settings and named presets.

Configs are frozen dataclasses with units in field names. ``from_dict`` rejects unknown
keys with a close-match suggestion, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cluster_envs.errors import ConfigError
from cluster_envs.names import suggest, unknown_name
from cluster_envs.types import Immutable

T = TypeVar("T")

#: Relative compute speed of each GPU type for DL training, normalised to the NVIDIA T4
#: the Pollux profiles were measured on. A100/T4 = 2.67 is the median ratio of the
#: ElasticFlow single-A100 and the fitted Pollux T4 iteration rates of the models both
#: measured (cifar10 1.7-4.1, deepspeech2 3.3-3.4, imagenet 2.4; see
#: benchmarks/results/model_zoo_fit.md and scripts/fit_model_zoo.py). V100 and P100 are
#: placed from public mixed-precision training benchmarks relative to those two.
GPU_SPEED: dict[str, float] = {
    "T4": 1.0,
    "P100": 1.1,
    "V100": 1.7,
    "A100": 2.67,
}

#: Inter-node bandwidth of the Pollux testbed (AWS g4dn.12xlarge), the reference for
#: the fitted cross-node synchronisation cost.
REFERENCE_INTER_NODE_GBPS = 50.0


def check_keys(cls: type, data: Mapping[str, Any]) -> None:
    """Raise ConfigError naming every key of ``data`` that ``cls`` has no field for."""
    names = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in names:
            raise unknown_name(f"{cls.__name__} key", key, names, listed="valid keys")


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Build the dataclass ``cls`` from a mapping, rejecting unknown keys."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{cls.__name__} config must be a mapping, got {type(data).__name__}")
    check_keys(cls, data)
    return cls(**data)  # type: ignore[call-arg]


@dataclass(frozen=True)
class NodeGroup(Immutable):
    """``num_nodes`` identical nodes with ``gpus_per_node`` GPUs of ``gpu_type`` each."""

    num_nodes: int
    gpus_per_node: int
    gpu_type: str = "T4"

    def __post_init__(self) -> None:
        if self.num_nodes < 1 or self.gpus_per_node < 1:
            raise ConfigError(
                f"NodeGroup needs num_nodes >= 1 and gpus_per_node >= 1, got "
                f"{self.num_nodes} x {self.gpus_per_node}"
            )
        if self.gpu_type not in GPU_SPEED:
            raise unknown_name("gpu_type", self.gpu_type, GPU_SPEED, listed="known")


@dataclass(frozen=True)
class ClusterConfig(Immutable):
    """A cluster: groups of identical nodes plus the inter-node link speed.

    Attributes:
        name: Preset name or a user label.
        node_groups: The node groups, in node-id order.
        inter_node_gbps: Bandwidth between nodes; scales cross-node sync time relative to
            the 50 Gbit/s of the Pollux testbed. Within a node GPUs talk over the local
            interconnect (the fitted intra-node cost).
    """

    name: str
    node_groups: tuple[NodeGroup, ...]
    inter_node_gbps: float = REFERENCE_INTER_NODE_GBPS

    def __post_init__(self) -> None:
        if not self.node_groups:
            raise ConfigError(f"cluster {self.name!r} has no nodes")
        if not self.inter_node_gbps > 0:
            raise ConfigError(f"cluster {self.name!r}: inter_node_gbps must be > 0")

    @property
    def num_nodes(self) -> int:
        return sum(g.num_nodes for g in self.node_groups)

    @property
    def num_gpus(self) -> int:
        return sum(g.num_nodes * g.gpus_per_node for g in self.node_groups)

    @property
    def max_gpus_per_node(self) -> int:
        return max(g.gpus_per_node for g in self.node_groups)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterConfig:
        """Build from plain data, e.g. ``{"name": "x", "node_groups": [{...}]}``."""
        check_keys(cls, data)
        groups = tuple(
            g if isinstance(g, NodeGroup) else from_dict(NodeGroup, g)
            for g in data.get("node_groups", ())
        )
        rest = {k: v for k, v in data.items() if k != "node_groups"}
        return cls(node_groups=groups, **rest)


CLUSTER_PRESETS: dict[str, ClusterConfig] = {
    "toy": ClusterConfig("toy", (NodeGroup(4, 4, "T4"),)),
    "small": ClusterConfig("small", (NodeGroup(8, 4, "T4"),)),
    "pollux-testbed": ClusterConfig("pollux-testbed", (NodeGroup(16, 4, "T4"),)),
    "hetero-small": ClusterConfig(
        "hetero-small",
        (NodeGroup(4, 4, "T4"), NodeGroup(2, 4, "V100"), NodeGroup(2, 8, "A100")),
        inter_node_gbps=25.0,
    ),
    "hetero-large": ClusterConfig(
        "hetero-large",
        (NodeGroup(64, 4, "T4"), NodeGroup(32, 8, "V100"), NodeGroup(16, 8, "A100")),
        inter_node_gbps=100.0,
    ),
    # Microsoft Philly had about 2,500 GPUs in 2- to 8-GPU servers (Jeon et al., ATC'19).
    "philly": ClusterConfig(
        "philly",
        (NodeGroup(130, 2, "P100"), NodeGroup(95, 4, "P100"), NodeGroup(232, 8, "V100")),
        inter_node_gbps=100.0,
    ),
}


def get_cluster(cluster: str | ClusterConfig | Mapping[str, Any]) -> ClusterConfig:
    """Resolve a preset name, a ClusterConfig, or a plain mapping into a ClusterConfig."""
    if isinstance(cluster, ClusterConfig):
        return cluster
    if isinstance(cluster, Mapping):
        return ClusterConfig.from_dict(cluster)
    if isinstance(cluster, str):
        try:
            return CLUSTER_PRESETS[cluster]
        except KeyError:
            raise unknown_name(
                "cluster preset", cluster, CLUSTER_PRESETS, listed="presets"
            ) from None
    raise ConfigError(f"cluster must be a preset name, ClusterConfig or mapping, got {cluster!r}")


@dataclass(frozen=True)
class SimConfig(Immutable):
    """Simulator settings.

    Attributes:
        time_slice_s: ``None`` for event-driven scheduling (the policy is asked after
            every arrival/completion instant); a number for round-based scheduling (the
            policy is asked every ``time_slice_s`` simulated seconds).
        rescale_cost_s: Time a malleable job spends re-configuring after its allocation
            changes (holds the GPUs, makes no progress). Pollux uses 30 s.
        restart_cost_s: Time a preempted job spends restoring its checkpoint on resume.
        start_cost_s: Time a job spends starting up on its first allocation (holds the
            GPUs, makes no progress). 0 by default; Pollux's artifact charges 30 s on
            every allocation, the first included.
        horizon_s: Stop the episode at this simulated time (``None``: run to the end).
        record_timeline: Keep (time, queued, running, busy GPUs) after every event.
        link_contention: Distributed jobs sharing a node split its inter-node bandwidth
            (see :mod:`cluster_envs.sim.contention`).
        node_interference: Compute slowdown per extra job sharing a node (0 = none).
        loss_noise_std: Relative noise of the loss observations schedulers see.
    """

    time_slice_s: float | None = None
    rescale_cost_s: float = 30.0
    restart_cost_s: float = 30.0
    start_cost_s: float = 0.0
    horizon_s: float | None = None
    record_timeline: bool = True
    link_contention: bool = True
    node_interference: float = 0.0
    loss_noise_std: float = 0.03

    def __post_init__(self) -> None:
        if self.time_slice_s is not None and not self.time_slice_s > 0:
            raise ConfigError(f"time_slice_s must be > 0 or None, got {self.time_slice_s}")
        for name in ("rescale_cost_s", "restart_cost_s", "start_cost_s"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.loss_noise_std < 0:
            raise ConfigError(f"loss_noise_std must be >= 0, got {self.loss_noise_std}")
        if self.node_interference < 0:
            raise ConfigError(f"node_interference must be >= 0, got {self.node_interference}")
        if self.horizon_s is not None and not self.horizon_s > 0:
            raise ConfigError(f"horizon_s must be > 0 or None, got {self.horizon_s}")


def sim_config(config: SimConfig | Mapping[str, Any] | None) -> SimConfig:
    """Resolve ``None`` / a mapping / a SimConfig into a SimConfig."""
    if config is None:
        return SimConfig()
    if isinstance(config, SimConfig):
        return config
    return from_dict(SimConfig, config)


__all__ = [
    "CLUSTER_PRESETS",
    "GPU_SPEED",
    "ClusterConfig",
    "NodeGroup",
    "SimConfig",
    "check_keys",
    "from_dict",
    "get_cluster",
    "sim_config",
    "suggest",
    "unknown_name",
]
