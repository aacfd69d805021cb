"""First-in-first-out scheduling at the requested GPU count."""

from __future__ import annotations

from cluster_envs.policies.base import PlacementPolicy
from cluster_envs.policies.placement import ConsolidatedPlacement, consolidate
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import NO_DECISION, Allocate, Decision


class FifoScheduler:
    """Start queued jobs in submission order at their requested size.

    Args:
        placement: Where to put each job (default: consolidated first-fit).
        strict: If True (classic FIFO), stop at the first job that does not fit
            (head-of-line blocking); if False, skip it and try the next (greedy backfill
            without reservations).
    """

    def __init__(self, placement: PlacementPolicy | None = None, strict: bool = True) -> None:
        self.placement = placement or ConsolidatedPlacement("first-fit")
        self.strict = strict
        self.name = "fifo" if strict else "fifo-skip"

    @property
    def settles_in_one_decision(self) -> bool:
        """True when a second ``decide`` at the same instant is sure to be empty.

        Strict FIFO with the (deterministic) consolidated placement stops at a job that
        does not fit the GPUs left after its own actions, which are the GPUs the second
        call would see: the runner may skip that call (same trajectory, half the views).
        """
        return (
            self.strict
            and type(self.placement) is ConsolidatedPlacement
            and type(self).decide is FifoScheduler.decide
        )

    def reset(self, seed: int | None = None) -> None:
        """FIFO keeps no state."""

    def decide(self, view: ClusterView) -> Decision:
        if not view.queued_ids or not view.free_gpus.any():
            return NO_DECISION
        free = view.free_gpus.copy()
        left = int(free.sum())  # free GPUs, kept as an int (no array reduction per job)
        actions = []
        placer = self.placement
        # The consolidated placement reads no job status: read only the GPUs asked for.
        direct = isinstance(placer, ConsolidatedPlacement) and type(placer) is ConsolidatedPlacement
        for job_id in view.queued_ids:
            placement = None
            if direct:
                asked = view.requested_gpus(job_id)
                if asked <= left:
                    strategy, fast = placer.strategy, placer.prefer_fast  # type: ignore[attr-defined]
                    placement = consolidate(free, view.node_speed, asked, strategy, fast)
            else:
                job = view.job(job_id)
                if job.num_gpus <= left:
                    placement = placer.place(view, job, job.num_gpus, free)
            if placement is None:
                if self.strict:
                    break
                continue
            for node, gpus in placement:
                free[node] -= gpus
                left -= gpus
            actions.append(Allocate(job_id, placement))
            if not left:
                break
        return Decision(tuple(actions))
