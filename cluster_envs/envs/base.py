"""What every cluster-envs Gymnasium env shares: the episode life cycle and its hooks.

The public methods do the bookkeeping and call protected hooks (the Stable-Baselines3
pattern), so every env advances time, applies the action rule, sums rewards and reports
the end of an episode the same way:

* ``reset(seed)`` seeds ``self.np_random``, derives one episode seed (workload,
  simulator; :mod:`cluster_envs.envs.episodes`), builds the simulator and its
  :class:`~cluster_envs.driver.EpisodeDriver`, calls ``_on_reset()`` and runs to the
  first decision point;
* ``step(action)`` decodes the action (``_decode_action``: the rule of
  :mod:`cluster_envs.envs.actions`), carries it out (``_take_action``, which calls
  ``_advance`` to move time), sums the named reward components of
  ``_reward_components()`` with ``reward_weights`` (``info["reward_components"]``), and
  adds ``info["episode_metrics"]`` (``episode_metrics()``) when the episode ends;
  a step after the end returns the final observation with ``terminated`` /
  ``truncated`` again and reward 0;
* ``step``, ``action_masks`` and ``render`` before ``reset`` raise
  :class:`~cluster_envs.errors.ResetNeededError`;
* the horizon is ``SimConfig.horizon_s`` (env kwarg ``horizon_s`` is an alias);
* ``render_mode="ansi"`` prints the state, ``"rgb_array"`` draws GPU occupancy over time
  (one row per GPU, grouped by node; one column per time bin).

Hooks: ``_is_decision_point``, ``_get_obs``, ``_action_mask``, ``_take_action``,
``_reward_components``, and optionally ``_on_reset``, ``_at_decision``,
``_decode_action``, ``_extra_info``, ``policy_context``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from cluster_envs.config import ClusterConfig, SimConfig, get_cluster
from cluster_envs.driver import DECISION, EpisodeDriver, Outcome
from cluster_envs.envs.actions import discrete_action
from cluster_envs.envs.episodes import WorkloadSource
from cluster_envs.errors import ResetNeededError
from cluster_envs.policies.base import SchedulingPolicy
from cluster_envs.policies.context import PolicyContext, configure_policy
from cluster_envs.policies.registry import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.metrics import compute_metrics
from cluster_envs.workload import Workload

#: Width of the rgb_array occupancy picture (time bins) and pixels per GPU row.
RENDER_WIDTH = 240
RENDER_ROW_PX = 3
BUSY_RGB = np.array([52, 101, 164], dtype=np.uint8)
FREE_RGB = np.array([238, 238, 236], dtype=np.uint8)
NODE_SEPARATOR_RGB = np.array([136, 138, 133], dtype=np.uint8)


class ClusterEnvBase(gym.Env):
    """Base of the cluster-envs environments (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        cluster: str | ClusterConfig | Mapping[str, Any],
        sim_config: SimConfig,
        source: WorkloadSource,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} not supported; use one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.cluster = get_cluster(cluster)
        self.sim_config = sim_config
        self.source = source
        self._sim: Simulator | None = None
        self._workload: Workload | None = None
        self.episode_seed = 0
        self._driver: EpisodeDriver | None = None
        self.num_invalid_actions = 0
        self.num_forced_actions = 0
        self._outcome = DECISION
        self._last: tuple[np.ndarray, dict[str, Any]] | None = None
        self._occupancy: list[tuple[float, np.ndarray]] = []

    # ------------------------------------------------------------------ episode state
    @property
    def sim(self) -> Simulator:
        """The episode's simulator; :class:`ResetNeededError` before ``reset()``."""
        if self._sim is None:
            raise ResetNeededError(
                f"{type(self).__name__}.sim read before reset(); call env.reset() first"
            )
        return self._sim

    @property
    def workload(self) -> Workload:
        """The episode's workload; :class:`ResetNeededError` before ``reset()``."""
        if self._workload is None:
            raise ResetNeededError(
                f"{type(self).__name__}.workload read before reset(); call env.reset() first"
            )
        return self._workload

    @property
    def driver(self) -> EpisodeDriver:
        """The episode's driver; :class:`ResetNeededError` before ``reset()``."""
        if self._driver is None:
            raise ResetNeededError(
                f"{type(self).__name__}.driver read before reset(); call env.reset() first"
            )
        return self._driver

    @property
    def has_episode(self) -> bool:
        """Whether ``reset()`` has started an episode."""
        return self._sim is not None

    #: Weight of each reward component (the keys of ``_reward_components()``, in order).
    reward_weights: dict[str, float] = {}
    #: The Discrete action that waits / ends the decision (None: the env has none).
    wait_action: int | None = None

    # ------------------------------------------------------------------ public API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode and run to its first decision point (see the module doc)."""
        self._new_episode(seed)
        self.num_invalid_actions = 0
        self.num_forced_actions = 0
        self._on_reset()
        self._note_occupancy()
        self._outcome = self._advance(min_one_event=False)
        self._reward_components()  # start the reward accounting here
        zeros = dict.fromkeys(self.reward_weights, 0.0)
        obs, info = self._get_obs(), self._info(zeros, False)
        self._last = (obs, info)
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Carry out ``action``, run to the next decision point, return the reward."""
        self._require_reset("step")
        outcome = self._outcome
        if outcome.ended:  # stepping past the end: the end again, nothing happens
            assert self._last is not None  # reset() set it
            obs, info = self._last
            info = {**info, "reward_components": dict.fromkeys(self.reward_weights, 0.0)}
            return obs.copy(), 0.0, outcome.terminated, outcome.truncated, info
        decoded, invalid, forced = self._decode_action(action)
        self.num_invalid_actions += int(invalid)
        self.num_forced_actions += int(forced)
        return self._finish(self._take_action(decoded), invalid)

    def _finish(self, outcome: Outcome, invalid: bool, mask: np.ndarray | None = None) -> Any:
        """The step's return once its action is applied: the weighted reward, observation
        and info (``mask``: the action mask if the caller has it; the envs' short paths)."""
        self._outcome, components, reward = outcome, self._reward_components(), 0.0
        for k, (name, weight) in enumerate(self.reward_weights.items()):
            term = weight * components[name]
            reward = term if k == 0 else reward + term
        obs, info = self._get_obs(), self._info(components, invalid, mask)
        self._last = (obs, info)
        return obs, float(reward), outcome.terminated, outcome.truncated, info

    def action_masks(self) -> np.ndarray:
        """Which actions are allowed now (flat booleans; MaskablePPO's convention)."""
        self._require_reset("action_masks")
        return self._action_mask()

    # ------------------------------------------------------------------ hooks
    def _is_decision_point(self) -> bool:
        """Hook: whether the agent is to be asked now (else time advances)."""
        raise NotImplementedError

    def _get_obs(self) -> np.ndarray:
        """Hook: the observation of the current state."""
        raise NotImplementedError

    def _action_mask(self) -> np.ndarray:
        """Hook: the action mask of the current state."""
        raise NotImplementedError

    def _take_action(self, action: Any) -> Outcome:
        """Hook: carry out a decoded, feasible ``action``; advance with ``_advance``."""
        raise NotImplementedError

    def _reward_components(self) -> dict[str, float]:
        """Hook: each reward component earned since the previous call."""
        raise NotImplementedError

    def _on_reset(self) -> None:
        """Hook: clear the env's episode state (the simulator is new already)."""

    def _at_decision(self) -> None:
        """Hook: the driver stopped at a decision point (e.g. refresh slots)."""

    def _extra_info(self) -> dict[str, Any]:
        """Hook: env-specific ``info`` entries."""
        return {}

    def _decode_action(self, action: Any) -> tuple[Any, bool, bool]:
        """Hook: ``(feasible action, invalid, forced)`` by the rule of ``envs.actions``.

        This default serves ``Discrete`` spaces: a masked or out-of-range action becomes
        ``wait_action`` if allowed, else the first allowed action (forced).
        """
        space = self.action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise TypeError(f"{type(self).__name__} must override _decode_action for {space}")
        a = discrete_action(action, space)
        if self._allowed(a):
            return a, False, False
        mask = self.action_masks()
        wait = self.wait_action
        if wait is not None and mask[wait]:
            return wait, True, False
        return int(np.flatnonzero(mask)[0]), True, True

    def _allowed(self, a: int) -> bool:
        """Hook: whether Discrete action ``a`` is in range and allowed by the mask now (an
        env may answer without building the whole mask)."""
        mask = self.action_masks()
        return 0 <= a < len(mask) and bool(mask[a])

    # ------------------------------------------------------------------ helpers
    def _advance(self, min_one_event: bool) -> Outcome:
        """Run the driver to the next decision point (then ``_at_decision()``)."""
        outcome = self.driver.advance(min_one_event)
        if outcome is DECISION:
            self._at_decision()
        return outcome

    def _require_reset(self, method: str) -> None:
        if self._sim is None:
            raise ResetNeededError(
                f"{type(self).__name__}.{method}() called before reset(); call env.reset() first"
            )

    def _info(self, components: dict[str, float], invalid: bool,
              mask: np.ndarray | None = None) -> dict[str, Any]:  # fmt: skip
        sim = self.sim
        info = {"action_mask": self.action_masks() if mask is None else mask,
                "invalid_action": invalid, "num_invalid_actions": self.num_invalid_actions,
                "num_forced_actions": self.num_forced_actions, "reward_components": components,
                "time_s": sim.now_s, "num_queued": len(sim.queue), "num_running": len(sim.active),
                **self._extra_info()}  # fmt: skip
        if self._outcome.ended:
            info["episode_metrics"] = self.episode_metrics()
        return info

    def _new_episode(self, seed: int | None) -> None:
        """Seed, draw the workload, build the simulator and its driver."""
        super().reset(seed=seed)
        self.episode_seed = int(self.np_random.integers(2**31 - 1))
        workload = self._workload = self._episode_workload(self.episode_seed)
        sim = self._sim = Simulator(workload.jobs, self.cluster, self.sim_config, self.episode_seed)
        self._driver = EpisodeDriver(sim, self._is_decision_point, self._note_occupancy)
        self._occupancy = []

    def _episode_workload(self, episode_seed: int) -> Workload:
        """The episode's workload; subclasses may transform the jobs."""
        return self.source.sample(episode_seed, self.cluster)

    def _note_occupancy(self) -> None:
        if self.render_mode == "rgb_array":
            inv = self.sim.inventory
            self._occupancy.append((self.sim.now_s, (inv.total - inv.free).copy()))

    def policy_context(self) -> PolicyContext:
        """What a policy may need to know about this env (see ``policies.context``)."""
        return PolicyContext(time_slice_s=self.sim_config.time_slice_s,
                             rescale_cost_s=self.sim_config.rescale_cost_s)  # fmt: skip

    def policy(self, name: str | SchedulingPolicy) -> SchedulingPolicy:
        """The registered heuristic ``name``, told this env's :meth:`policy_context`."""
        return configure_policy(make_policy(name), self.policy_context())

    def runner_args(self) -> dict[str, Any]:
        """``run_episode`` keyword arguments that replay the current episode (parity)."""
        return {
            "jobs": self.workload,
            "cluster": self.cluster,
            "config": self.sim_config,
            "seed": self.episode_seed,
        }

    def episode_metrics(self) -> dict[str, float]:
        """The simulator's metrics for the episode so far."""
        return compute_metrics(self.sim)

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:  # type: ignore[override]  # gym's RenderFrame is an unbound TypeVar
        """The current state as text (``"ansi"``) or an occupancy picture."""
        self._require_reset("render")
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode=...")
            return None
        if self.render_mode == "ansi":
            return self._render_text()
        return self._render_occupancy()

    def _render_text(self) -> str:
        sim = self.sim
        inv = sim.inventory
        nodes = " ".join(f"{int(f)}/{int(t)}" for f, t in zip(inv.free, inv.total, strict=True))
        lines = [
            f"t={sim.now_s:,.0f}s  queued={len(sim.queue)}  running={len(sim.active)}  "
            f"finished={sim.num_finished}/{len(sim.jobs)}  free GPUs={inv.num_free}/{inv.num_gpus}",
            f"free per node: {nodes}",
        ]
        for j in list(sim.queue)[:8]:
            spec = sim.jobs[j]
            lines.append(f"  queued  job {j:4d} {spec.model:12s} asks {spec.num_gpus:2d} GPUs")
        for j in list(sim.active)[:8]:
            spec = sim.jobs[j]
            lines.append(
                f"  running job {j:4d} {spec.model:12s} on {sim.placement[j]} "
                f"({100 * sim.iterations_done(j) / spec.total_iterations:.0f}% done)"
            )
        return "\n".join(lines) + "\n"

    def _render_occupancy(self) -> np.ndarray:
        inv = self.sim.inventory
        history = self._occupancy or [(self.sim.now_s, inv.total - inv.free)]
        times = np.array([t for t, _ in history])
        busy = np.stack([b for _, b in history])  # (T, nodes)
        end = max(float(times[-1]), 1.0)
        bins = np.linspace(0.0, end, RENDER_WIDTH)
        idx = np.clip(np.searchsorted(times, bins, side="right") - 1, 0, len(times) - 1)
        busy_at = busy[idx]  # (W, nodes)
        rows = []
        for node, total in enumerate(inv.total):
            for g in range(int(total)):
                row = np.where((busy_at[:, node] > g)[:, None], BUSY_RGB, FREE_RGB)
                rows.extend([row] * RENDER_ROW_PX)
            rows.append(np.broadcast_to(NODE_SEPARATOR_RGB, (RENDER_WIDTH, 3)))
        return np.ascontiguousarray(np.stack(rows).astype(np.uint8))


def unwrap_cluster_env(env: gym.Env) -> ClusterEnvBase:
    """The cluster env under ``env``'s wrappers; TypeError if ``env`` is not one."""
    base = env.unwrapped
    if not isinstance(base, ClusterEnvBase):
        raise TypeError(f"{type(base).__name__} is not a cluster_envs environment")
    return base
