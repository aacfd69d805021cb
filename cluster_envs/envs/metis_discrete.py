"""``cluster_envs/MetisAllocationDiscrete-v0``: MetisAllocation, one GPU per step."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.driver import DECISION, Outcome
from cluster_envs.envs.base import ClusterEnvBase
from cluster_envs.envs.metis import MetisAllocationEnv
from cluster_envs.envs.metis_features import MetisEncoder
from cluster_envs.errors import ConfigError
from cluster_envs.types import Decision


class MetisAllocationDiscreteEnv(MetisAllocationEnv):
    """MetisAllocation with DL2-style incremental actions (for DQN and friends).

    ## Action Space
    ``Discrete(J + 1)``: action ``k < J`` adds one GPU to slot ``k``'s *pending*
    allocation (no time passes, reward 0); action ``J`` ends the slice: the pending
    counts are projected and applied exactly as a MetisAllocation-v0 action, and the
    next slice starts from an empty plan (as in DL2, every slice allocates from zero; a
    job left at 0 is preempted). ``action_masks()`` / ``info["action_mask"]``: adding is
    allowed for an occupied slot below its ``max_gpus`` while the cluster has GPUs not
    pending; ending is always allowed. The action rule of every env
    (:mod:`cluster_envs.envs.actions`): any integral scalar (``np.array([2])``) is
    accepted, a fraction or NaN raises ``InvalidActionError``; an invalid action ends
    the slice (the wait action), sets ``info["invalid_action"]`` and counts in
    ``info["num_invalid_actions"]`` (``info["num_forced_actions"]`` stays 0).

    ## Observation Space
    As MetisAllocation-v0; ``pending_gpus`` holds the plan being built.

    Everything else (rewards, metrics, arguments) is MetisAllocation-v0's.
    """

    #: The slot the last step added a GPU to (the default encoders' hint), else None.
    _changed: int | None = None

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(render_mode, **kwargs)
        if self.config.action != "counts":
            raise ConfigError("MetisAllocationDiscrete-v0 has its own action: leave action unset")
        self.end_action = self.wait_action = self.num_slots
        self.pending = np.zeros(self.num_slots, dtype=np.int64)
        self._limits: list[int] = [-1] * self.num_slots  # max_gpus per slot
        self._limits_array = np.array(self._limits)  # the same, for the mask
        self._limits_key: tuple[object, int] | None = None

    def _make_action_space(self) -> spaces.Space:
        return spaces.Discrete(self.num_slots + 1)

    def _begin_slice(self) -> None:
        self.pending = np.zeros(self.num_slots, dtype=np.int64)
        self._changed = None

    def _decode_action(self, action: Any) -> tuple[int, bool, bool]:
        return ClusterEnvBase._decode_action(self, action)

    def _take_action(self, action: int) -> Outcome:
        if action != self.end_action:
            self.pending[action] += 1
            self._changed = action
            return DECISION
        requests = {j: int(self.pending[k]) for k, j in enumerate(self.slots) if j is not None}
        return self._commit(requests)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """:meth:`ClusterEnvBase.step`; an allowed "+1 GPU" step (a plain ``int``) takes a
        shorter path with the same results: no time passes, so it is the base step
        without the decoding chain, the time advance and the end-of-episode checks."""
        sim = self._sim
        if (
            type(action) is not int
            or sim is None
            or self._outcome.ended
            or not 0 <= action < self.num_slots
        ):
            return super().step(action)
        counts = self.pending.tolist()
        gpus = sim.inventory.num_gpus
        if sum(counts) >= gpus or counts[action] >= self._slot_limits(sim)[action]:
            return super().step(action)  # not allowed: the base step's invalid action
        self.pending[action] += 1
        self._changed = action
        return self._finish(DECISION, False, self._mask_of(sim, sum(counts) + 1 >= gpus))

    def _action_mask(self) -> np.ndarray:
        """Which actions are allowed now (the end-slice action is last)."""
        sim = self.sim
        return self._mask_of(sim, sum(self.pending.tolist()) >= sim.inventory.num_gpus)

    def _mask_of(self, sim: Any, full: bool) -> np.ndarray:
        """The mask; ``full``: every GPU of the cluster is pending (only ending allowed)."""
        mask = np.zeros(self.num_slots + 1, dtype=bool)
        mask[self.end_action] = True
        if full:
            return mask
        self._slot_limits(sim)
        np.less(self.pending, self._limits_array, out=mask[: self.num_slots])
        return mask

    def _slot_limits(self, sim: Any) -> list[int]:
        """``max_gpus`` of each slot's job (-1: empty), kept while the state stays."""
        if self._limits_key != (sim, sim.state_version):  # slots change with the state
            jobs = sim.jobs
            self._limits = [-1 if j is None else jobs[j].max_gpus for j in self.slots]
            self._limits_array = np.array(self._limits, dtype=np.int64)
            self._limits_key = (sim, sim.state_version)
        return self._limits

    def _allowed(self, a: int) -> bool:
        """``action_masks()[a]`` (in range) without building the mask."""
        if a == self.end_action:
            return True
        if not 0 <= a < self.num_slots:
            return False
        sim = self.sim
        pending = self.pending.tolist()
        if sum(pending) >= sim.inventory.num_gpus:
            return False
        return pending[a] < self._slot_limits(sim)[a]

    def action_for(self, decision: Decision) -> int:
        """The next increment towards ``decision``'s counts, or the end-slice action."""
        target = super().action_for(decision)
        below = np.flatnonzero(self.pending < target)
        return int(below[0]) if below.size else self.end_action

    def _pending(self) -> np.ndarray:
        return self.pending.copy()

    def _get_obs(self) -> np.ndarray:
        changed, self._changed = self._changed, None
        if isinstance(self.encoder, MetisEncoder):  # reads the counts; told the changed slot
            return self.encoder.encode(self.sim, self.slots, self.pending, changed)
        return super()._get_obs()
