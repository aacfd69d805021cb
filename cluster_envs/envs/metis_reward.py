"""MetisAllocation's reward: named quality components, each the change since last asked.

* ``quality_gain``: the summed normalised (true) quality gained; sums to the jobs' final
  quality, so alone it gives every policy that lets all jobs converge the same return;
* ``quality_gap``: ``-(job-seconds of quality still missing) / gap_scale_s``;
* ``quality_auc``: the increment of ``n * quality_auc`` computed as if the episode
  stopped now (sums to ``n * quality_auc`` minus its value at reset); the default.
"""

from __future__ import annotations

from cluster_envs.sim.quality import QualityTracker

#: Names of the reward components in ``info["reward_components"]``, in summing order.
REWARD_COMPONENTS = ("quality_gain", "quality_gap", "quality_auc")


class QualityReward:
    """The components of :data:`REWARD_COMPONENTS` earned between two calls.

    Args:
        tracker: The episode's quality tracker (read only).
        gap_scale_s: ``quality_gap`` is divided by this (s).
    """

    def __init__(self, tracker: QualityTracker, gap_scale_s: float) -> None:
        self.tracker = tracker
        self.gap_scale_s = gap_scale_s
        self.quality = self.gap = self.auc = 0.0

    def components(self) -> dict[str, float]:
        """Each component since the previous call (the first call starts the count)."""
        tracker = self.tracker
        quality, gap, auc = tracker.reward_terms()
        out = {
            "quality_gain": quality - self.quality,
            "quality_gap": -(gap - self.gap) / self.gap_scale_s,
            "quality_auc": auc - self.auc,
        }
        self.quality, self.gap, self.auc = quality, gap, auc
        return out
