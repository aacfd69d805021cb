"""Scheduling and placement policies over a ClusterView, and the policy registries."""

from cluster_envs.policies.base import PlacementPolicy, SchedulingPolicy
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import ConsolidatedPlacement, SpreadPlacement
from cluster_envs.policies.registry import POLICIES, make_policy, policy_names, register_policy
from cluster_envs.policies.trained import TrainedAgent, make_agent

__all__ = [
    "POLICIES",
    "ConsolidatedPlacement",
    "FifoScheduler",
    "PlacementPolicy",
    "SchedulingPolicy",
    "SpreadPlacement",
    "TrainedAgent",
    "make_agent",
    "make_policy",
    "policy_names",
    "register_policy",
]
