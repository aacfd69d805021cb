"""Pollux's goodput-maximising co-adaptive scheduler (Qiao et al., OSDI'21), ``pollux``.

Every round Pollux picks, for every job, a GPU count *and* the batch size that
maximises that job's goodput there, so that the cluster's power mean of *speedups*

    SPEEDUP_j(n) = goodput_j(n GPUs, best batch) / goodput_j(1 GPU, best batch)

with exponent ``p`` (the fairness knob; ``p = -1``, Pollux's default, weighs slow jobs
heavily; ``p -> 0`` is the geometric mean, ``p = 1`` the plain sum) is as large as
possible. Like the artifact, a job whose allocation changes has its speedup scaled by
``max(age - restarts * restart_s, 0) / (age + restart_s)`` (the restart penalty), an
unallocated job counts as speedup 0 (so, for ``p <= 0``, Pollux first gives as many
jobs as possible one GPU, least attained service first), and a job may grow to at most
twice the largest GPU count it has run on (its throughput was never profiled beyond).

Search: the artifact runs a genetic algorithm (pymoo, 100 x 100 candidates per round);
here a deterministic **greedy marginal-gain allocator** over GPU counts -- each step
gives the GPUs to the job (and jump size, which crosses the non-concave step to a
second node and the restart penalty) with the largest gain of the power-mean objective
per GPU -- followed by re-placing every job whose count changed, consolidated
(:mod:`baselines.repack`; distributed jobs rarely share a node: Pollux's interference
avoidance). Greedy is exact for concave
per-job utilities, costs O(GPUs x jobs x max count) numpy work per round (milliseconds
instead of the GA's seconds) and is reproducible without a seed.

Jobs with a :class:`~cluster_envs.perf.goodput.GoodputSpeed` (Pollux-format workloads
loaded with ``adaptive_batch=True``) get their batch size set with the allocation
(``Allocate.batch_size``). Other jobs (fixed batch: the rigid-batch variant, e.g. in
MetisAllocation-v0) use their throughput model's speedup and keep their batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from baselines.allocation import AllocationPolicy, Requests
from baselines.repack import repack_decision
from cluster_envs.errors import ConfigError
from cluster_envs.perf.goodput import GoodputSpeed
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import NO_DECISION, Action, Allocate, Decision

#: Pollux's default fairness exponent of the power mean.
DEFAULT_P = -1.0
#: Restart penalty the objective assumes (s; the artifact's 30 s).
DEFAULT_RESTART_S = 30.0
#: Speedup floor inside the power mean (the artifact's 1e-3): keeps unallocated jobs finite.
SPEEDUP_EPS = 1e-3
#: Largest GPU count over the largest one a job has run on (the artifact's 2x rule).
EXPLORE_FACTOR = 2
#: Smallest job age in the restart factor (a job submitted this instant still starts).
MIN_AGE_S = 1.0
#: Per-model GPU caps of the artifact (its NCF jobs always run on one GPU).
ARTIFACT_MAX_GPUS: Mapping[str, int] = {"ncf": 1}


class PolluxAllocator(AllocationPolicy):
    """Goodput-maximising allocation + batch size with fairness exponent ``p``.

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
        p: Power-mean exponent (fairness knob), any real number (0 = geometric mean).
        restart_s: Restart penalty assumed by the objective (s).
        max_gpus_by_model: Per-model GPU caps (default: the artifact's ``ncf: 1``).
    """

    name = "pollux"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        p: float = DEFAULT_P,
        restart_s: float = DEFAULT_RESTART_S,
        max_gpus_by_model: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(num_slots)
        if not math.isfinite(p) or restart_s < 0:
            raise ConfigError(f"pollux needs a finite p and restart_s >= 0, got {p}, {restart_s}")
        self.p = float(p)
        self.restart_s = float(restart_s)
        self.max_gpus_by_model = dict(
            ARTIFACT_MAX_GPUS if max_gpus_by_model is None else max_gpus_by_model
        )
        self._max_seen: dict[int, int] = {}
        self._batches: dict[int, int] = {}

    def reset(self, seed: int | None = None) -> None:
        """Forget the last decision, the GPU counts seen and the batches chosen."""
        super().reset(seed)
        self._max_seen = {}
        self._batches = {}

    # ---------------------------------------------------------------- objective
    def _utility(self, v: np.ndarray) -> np.ndarray:
        """Per-job term of the power mean (maximised as a sum)."""
        v = v + SPEEDUP_EPS
        if self.p == 0:
            return np.log(v)
        return np.sign(self.p) * v**self.p

    def _cap(self, view: ClusterView, job: JobStatus, max_gpus: int) -> int:
        cap = min(max_gpus, EXPLORE_FACTOR * max(self._max_seen.get(job.job_id, 0), 1))
        cap = min(cap, self.max_gpus_by_model.get(job.model, cap))
        if isinstance(job.speed, GoodputSpeed):
            good = job.speed.model
            cap = min(cap, good.max_batch_size // good.min_local_bsz)
        return max(cap, 1)

    def _speedups(self, view: ClusterView, job: JobStatus, cap: int, fair: int) -> np.ndarray:
        """Scaled ``SPEEDUP(n)`` for n = 0..cap on packed placements (index 0 is 0).

        As in the artifact the base is the job's goodput at its fair share (``fair``
        GPUs on one node) and the speedup is scaled so that one node's worth of GPUs
        at fair-share efficiency counts 1; a job that never ran (no profile yet) looks
        linear, ``n / fair``.
        """
        per_node = view.cluster.max_gpus_per_node
        gpus = np.arange(1, cap + 1)
        if job.first_start_s is None:
            return np.concatenate([[0.0], gpus / fair]) / per_node
        if isinstance(job.speed, GoodputSpeed):
            good = job.speed.model
            nodes = np.ceil(gpus / per_node)
            speed = float(np.max(view.node_speed))
            f = self._fraction(job)
            net = view.network_speed
            rates, _ = good.goodput_table(gpus, nodes, f, speed, net)
            base, _ = good.goodput_table(np.array([fair]), np.array([1]), f, speed, net)
            base_rate = base[0] if base[0] > 0 else rates[0]
        else:
            rates = np.array([self.rate(view, job, int(n)) for n in gpus])
            base_rate = self.rate(view, job, min(fair, per_node)) * fair / min(fair, per_node)
        return np.concatenate([[0.0], rates / base_rate]) / per_node

    @staticmethod
    def _fraction(job: JobStatus) -> float:
        good = job.speed.model  # type: ignore[attr-defined]
        return min(job.iterations_done / good.total_progress, 1.0)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        ids = sorted(state.ids, key=lambda j: (view.job(j).attained_gpu_s, j))
        for j in state.ids:
            self._max_seen[j] = max(self._max_seen.get(j, 0), state.count(j))
        caps = [self._cap(view, view.job(j), state.max_gpus[j]) for j in ids]
        width = max(caps) + 1
        fair = max(math.ceil(state.capacity / max(len(ids), 1)), 1)
        util = np.full((len(ids), width), -np.inf)
        for row, j in enumerate(ids):
            job = view.job(j)
            speedup = self._speedups(view, job, caps[row], fair)
            age = max(view.time_s - job.submit_time_s, MIN_AGE_S)
            factor = max(age - job.num_restarts * self.restart_s, 0.0) / (age + self.restart_s)
            current = state.count(j)
            scaled = speedup * factor
            if current <= caps[row]:
                scaled[current] = speedup[current]
            util[row, : caps[row] + 1] = self._utility(scaled)
            util[row, 1 : state.min_gpus[j]] = -np.inf  # below the job's minimum
        counts = np.zeros(len(ids), dtype=int)
        left = state.capacity
        cols = np.arange(width)
        while left > 0:
            base = util[np.arange(len(ids)), counts][:, None]
            step = cols[None, :] - counts[:, None]
            ok = (step > 0) & (step <= left)
            gain = np.where(ok, (util - base) / np.maximum(step, 1), -np.inf)
            flat = int(np.argmax(gain))
            row, n2 = divmod(flat, width)
            if not gain[row, n2] > 0:
                break
            left -= n2 - counts[row]
            counts[row] = n2
        return {j: int(counts[row]) for row, j in enumerate(ids)}

    # ---------------------------------------------------------------- decision
    def decide(self, view: ClusterView) -> Decision:
        if not view.queued_ids and not view.running_ids:
            return NO_DECISION
        state = AllocationState.from_view(view, self.num_slots)
        fresh = self._time_s != view.time_s
        if fresh:
            self._requests = self.requests(view, state)
            self._time_s = view.time_s
        decision = repack_decision(state, state.project(self._requests))
        return self._with_batches(view, state, decision, fresh)

    def _with_batches(
        self, view: ClusterView, state: AllocationState, decision: Decision, fresh: bool
    ) -> Decision:
        """Attach each adaptive job's best batch for its (new or kept) placement.

        The projection's actions keep their order (shrinks free GPUs before grows use
        them); jobs that keep their GPUs get a batch-only action after them.
        """
        moved = {a.job_id for a in decision.actions}
        out = [self._batched(view, a, fresh) for a in decision.actions]
        for j in state.ids:
            if j not in moved and state.placement[j]:
                out.append(self._batched(view, Allocate(j, state.placement[j]), fresh))
        return Decision(tuple(a for a in out if a is not None))

    def _batched(self, view: ClusterView, action: Action, fresh: bool) -> Action | None:
        if not isinstance(action, Allocate) or not action.placement:
            return action
        job = view.job(action.job_id)
        if not isinstance(job.speed, GoodputSpeed):
            return action if action.placement != job.placement else None
        j = action.job_id
        if fresh or j not in self._batches:
            shape = tuple(g for _, g in action.placement)
            speed = float(np.min(view.node_speed[[n for n, _ in action.placement]]))
            batch, _ = job.speed.model.best_batch(
                shape, self._fraction(job), speed, view.network_speed
            )
            self._batches[j] = batch
        return Allocate(j, action.placement, self._batches[j])


__all__ = ["DEFAULT_P", "PolluxAllocator"]
