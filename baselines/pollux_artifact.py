"""The baselines of Pollux's artifact simulator, as it defines them.

* :class:`OptimusOracleAllocator` (``optimus-oracle``) -- "Optimus+Oracle": every job
  first gets one GPU (submission order, while GPUs last); then, one GPU at a time, the
  next GPU goes to the job whose *true* remaining time ``remaining_iterations x
  iteration_time(n)`` drops most, up to ``batch_size // min_local_bsz`` GPUs (one for
  NCF). The remaining iterations are the oracle's: the exact length the workload
  builder gave the job (the model's full epochs at its fixed batch size, or a recorded
  duration at its recorded GPUs), not an estimate.

  Our ``optimus`` (:class:`baselines.allocation.OptimusAllocator`) differs: it sees only
  the *fitted loss-curve estimate* of the remaining work (as Optimus does online), it
  first gives jobs their ``min_gpus`` shortest-first, skips jobs that got none, and
  jumps several GPUs at a time (crossing non-concave steps).
* :func:`tiresias_artifact` (``tiresias-artifact``) -- the artifact's Tiresias: two
  queues split at 16 GPU-hours of attained service, FIFO inside a queue, requested GPU
  count, skip what does not fit, preemptive. Our ``tiresias`` uses three queues split at
  1 and 10 GPU-hours.
"""

from __future__ import annotations

from collections.abc import Mapping

from baselines.allocation import AllocationPolicy, Requests
from baselines.repack import repack_decision
from baselines.tiresias import TiresiasScheduler
from cluster_envs.perf import zoo
from cluster_envs.perf.speed import packed_shape
from cluster_envs.policies.projection import DEFAULT_NUM_SLOTS, AllocationState
from cluster_envs.sim.view import ClusterView, JobStatus
from cluster_envs.types import Decision

#: The artifact's Tiresias queue threshold: 16 GPU-hours (GPU-seconds).
ARTIFACT_TIRESIAS_THRESHOLD_GPU_S = 16 * 3600.0
#: Per-model GPU caps of the artifact's Optimus (its NCF jobs always run on one GPU).
ARTIFACT_MAX_GPUS: Mapping[str, int] = {"ncf": 1}


def oracle_total_iterations(job: JobStatus, gpus_per_node: int = 4) -> float:
    """The job's true length by the workload builder's rule (the oracle).

    Pollux-format records (no duration): the model's full epochs at the job's batch
    (:func:`cluster_envs.perf.zoo.iterations_to_complete`); records with a duration:
    that duration times the rate at the recorded GPUs, packed (T4 reference).
    """
    if job.recorded_duration_s is None:
        return zoo.iterations_to_complete(job.model, job.batch_size)
    shape = packed_shape(job.num_gpus, gpus_per_node)
    return job.recorded_duration_s * job.speed.throughput(shape)


class OptimusOracleAllocator(AllocationPolicy):
    """Optimus+Oracle as Pollux's artifact defines it (see the module docstring).

    Args:
        num_slots: Jobs covered per decision (the env's ``num_slots``).
        max_gpus_by_model: Per-model GPU caps (default: the artifact's ``ncf: 1``).
    """

    name = "optimus-oracle"

    def __init__(
        self,
        num_slots: int = DEFAULT_NUM_SLOTS,
        max_gpus_by_model: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(num_slots)
        self.max_gpus_by_model = dict(
            ARTIFACT_MAX_GPUS if max_gpus_by_model is None else max_gpus_by_model
        )

    def _plan(self, state: AllocationState, counts: Requests) -> Decision:
        """Jobs whose count changes are re-placed, packed (as the artifact does)."""
        return repack_decision(state, counts)

    def _cap(self, job: JobStatus, max_gpus: int) -> int:
        cap = max_gpus
        if job.model in zoo.ZOO_MODELS:
            cap = min(cap, max(job.batch_size // zoo.get_model(job.model).min_local_bsz, 1))
        return max(min(cap, self.max_gpus_by_model.get(job.model, cap)), 1)

    def requests(self, view: ClusterView, state: AllocationState) -> Requests:
        per_node = view.cluster.max_gpus_per_node
        jobs = {j: view.job(j) for j in state.ids}
        remaining = {
            j: max(oracle_total_iterations(job, per_node) - job.iterations_done, 1.0)
            for j, job in jobs.items()
        }
        caps = {
            j: min(self._cap(job, state.max_gpus[j]), state.capacity) for j, job in jobs.items()
        }

        def gain(j: int, n: int) -> float:
            if n + 1 > caps[j]:
                return 0.0
            step_now = 1.0 / self.rate(view, jobs[j], n)
            step_next = 1.0 / self.rate(view, jobs[j], n + 1)
            return (step_now - step_next) * remaining[j]

        counts = dict.fromkeys(state.ids, 0)
        left = state.capacity
        for j in sorted(state.ids, key=lambda j: (jobs[j].submit_time_s, j)):
            need = max(state.min_gpus[j], 1)
            if need <= left:
                counts[j] = need
                left -= need
        gains = {j: gain(j, n) for j, n in counts.items() if n > 0}
        while left > 0 and gains:
            j = max(gains, key=lambda k: (gains[k], -k))
            if not gains[j] > 0:
                break
            counts[j] += 1
            left -= 1
            gains[j] = gain(j, counts[j])
        return counts


def tiresias_artifact(num_slots: int = DEFAULT_NUM_SLOTS) -> TiresiasScheduler:
    """Tiresias with the artifact's single 16-GPU-hour threshold (two queues)."""
    policy = TiresiasScheduler(num_slots, thresholds_gpu_s=(ARTIFACT_TIRESIAS_THRESHOLD_GPU_S,))
    policy.name = "tiresias-artifact"
    return policy


__all__ = [
    "ARTIFACT_TIRESIAS_THRESHOLD_GPU_S",
    "OptimusOracleAllocator",
    "oracle_total_iterations",
    "tiresias_artifact",
]
