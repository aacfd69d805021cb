"""The JCT reward of MoldableScheduling and JobPlacement: one component, ``"jct"``.

Each call returns ``-(job-seconds spent in the system since the last call) / scale_s``,
so an episode's return is minus its total JCT over ``scale_s`` (Decima's reward).
"""

from __future__ import annotations

from cluster_envs.sim.engine import Simulator


class JctReward:
    """``{"jct": ...}`` earned between two calls (see the module docstring).

    Args:
        scale_s: The job-seconds that make one unit of (negative) reward.
    """

    def __init__(self, scale_s: float) -> None:
        self.scale_s = scale_s
        self._job_s = 0.0

    def __call__(self, sim: Simulator) -> dict[str, float]:
        job_s = sim.record.system_job_s
        jct = -(job_s - self._job_s) / self.scale_s
        self._job_s = job_s
        return {"jct": jct}
