"""Scheduling and placement policies over a ClusterView, and the policy registry."""

from cluster_envs.policies.base import PlacementPolicy, SchedulingPolicy
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import ConsolidatedPlacement, SpreadPlacement
from cluster_envs.policies.registry import POLICIES, make_policy, policy_names, register_policy

__all__ = [
    "POLICIES",
    "ConsolidatedPlacement",
    "FifoScheduler",
    "PlacementPolicy",
    "SchedulingPolicy",
    "SpreadPlacement",
    "make_policy",
    "policy_names",
    "register_policy",
]
