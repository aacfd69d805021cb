"""MetisAllocation's settings: the config dataclass, its presets, the reward names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster_envs.envs.episodes import SYNTHETIC_JOBS
from cluster_envs.envs.metis_features import JOB_FEATURES
from cluster_envs.envs.metis_hints import ACTIONS, FIXED_OPTIONS, HINT_POLICIES
from cluster_envs.errors import ConfigError
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS
from cluster_envs.sim.quality import QUALITY_THRESHOLD, QUALITY_WINDOW_S, QualitySettings

#: Names of the reward components in ``info["reward_components"]``.
REWARD_COMPONENTS = ("quality_gain", "quality_gap", "quality_auc")


@dataclass(frozen=True)
class MetisConfig:
    """Settings of MetisAllocation (all JSON-serialisable kwargs of the env).

    Attributes:
        cluster: Cluster preset name.
        num_slots: J, the jobs the action covers (the lowest ids in the system).
        max_gpus_per_job: G, the largest count per job (jobs are capped to it).
        time_slice_s: The re-allocation interval (simulated seconds).
        quality_window_s: ``W`` of the ``quality_auc`` metric.
        quality_threshold: "Reached its quality" at this fraction of the final quality.
        gain_weight: Weight of the ``quality_gain`` reward component (0 by default:
            it gives every policy that lets all jobs converge the same return).
        gap_weight: Weight of the ``quality_gap`` reward component.
        gap_scale_s: ``quality_gap`` is divided by this (s).
        auc_weight: Weight of the ``quality_auc`` reward component (the increments of
            ``n * quality_auc``; 1 by default, so the return ranks policies as the
            ``quality_auc`` metric does; the shipped agents train on it).
        max_stalled_slices: Truncate after this many slices in a row with jobs waiting,
            nothing running, nothing allocated and nothing left to happen.
        job_features: ``"fitted"`` (default: loss curves fitted to noisy observations),
            ``"oracle"`` (ABLATION ONLY: the true curves and true lengths, which no real
            scheduler has) or ``"no_curve"`` (ablation: every field derived from the
            loss curve zeroed), to measure whether the state design matters.
        observation: ``"default"``, ``"scale_free"`` (fields that do not depend on
            the cluster size, slot count or slice length: :mod:`cluster_envs.envs.scale_free`)
            or ``"scale_free_hints"`` (those and each option's GPU count per slot:
            :mod:`cluster_envs.envs.metis_hints`).
        action: ``"counts"`` (default: a GPU count per slot) or ``"hints"`` (per slot,
            one of :data:`~cluster_envs.envs.metis_hints.OPTIONS`: follow a heuristic,
            keep or pause; the same space at every cluster size).
        hint_policies: The registered heuristics the ``hints`` options follow, in
            option order (default slaq, optimus, tiresias, fair); the observation's
            ``option=<o>`` fields follow the same list.
        observe_slice: The scale-free observations also hold the slice length, as
            ``slices_per_window`` (:data:`~cluster_envs.envs.metis_scale_free.SLICE_FIELD`),
            so one agent can tell 60 s slices from 300 s ones (off by default: the field
            changes the observation's length, and agents trained without it keep theirs).
    """

    cluster: str = "small"
    num_slots: int = DEFAULT_NUM_SLOTS
    max_gpus_per_job: int = 16
    time_slice_s: float = 600.0
    quality_window_s: float = QUALITY_WINDOW_S
    quality_threshold: float = QUALITY_THRESHOLD
    gain_weight: float = 0.0
    gap_weight: float = 0.0
    gap_scale_s: float = 3600.0
    auc_weight: float = 1.0
    max_stalled_slices: int = 10
    job_features: str = "fitted"
    observation: str = "default"
    action: str = "counts"
    hint_policies: tuple[str, ...] = HINT_POLICIES
    observe_slice: bool = False

    def __post_init__(self) -> None:
        check_hint_policies(self.hint_policies)
        if self.observe_slice and self.observation == "default":
            raise ConfigError(
                "observe_slice needs a scale-free observation ('scale_free' or "
                "'scale_free_hints'): the default one has no field for it"
            )
        if self.job_features not in JOB_FEATURES:
            raise ConfigError(
                f"job_features must be one of {JOB_FEATURES}, got {self.job_features!r}"
            )
        if self.action not in ACTIONS:
            raise ConfigError(f"action must be one of {ACTIONS}, got {self.action!r}")
        for name in ("num_slots", "max_gpus_per_job", "max_stalled_slices"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("time_slice_s", "gap_scale_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        QualitySettings(self.quality_window_s, self.quality_threshold)


def check_hint_policies(names: Any) -> None:
    """Reject (ConfigError) a ``hint_policies`` value that is not a non-empty tuple of
    distinct registered heuristic names other than the fixed options."""
    from cluster_envs.policies.registry import check_policy_name

    if not isinstance(names, tuple) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"hint_policies must be a non-empty list of names, got {names!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"hint_policies must not repeat a name, got {list(names)}")
    for name in names:
        if name in FIXED_OPTIONS:
            raise ConfigError(f"hint_policies: {name!r} is a fixed option, not a heuristic")
        check_policy_name(name)


PRESETS: dict[str, dict[str, Any]] = {
    # 30 malleable jobs on 8 x 4 T4; 32 slots, so every job in the system is covered.
    "default": {"cluster": "small", "num_jobs": 30, **SYNTHETIC_JOBS},
    # 12 jobs on 4 x 4 T4 with 8 slots (later jobs wait for a slot): tests, quick looks.
    "toy": {"cluster": "toy", "num_jobs": 12, "num_slots": 8, **SYNTHETIC_JOBS},
    # The Pollux testbed, its eight 160-job workloads, Pollux's 60 s rounds.
    "pollux": {
        "cluster": "pollux-testbed",
        "workload": [f"pollux-{i}" for i in range(1, 9)],
        "num_jobs": None,
        "time_slice_s": 60.0,
    },
}
