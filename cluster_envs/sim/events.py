"""The simulator's event heap, with stale entries skipped by per-job versions.

Events are ``(time_s, kind, job_id, version)`` ordered as tuples: at one instant
completions come first (their GPUs are free for the next decision), then ends of
rescales, then arrivals, each kind by job id -- a deterministic tie-break. A job's
completion or rescale event is valid only while its version is the job's current one:
changing a job's rate bumps its version, so re-keying is a push, never a heap search.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

EV_COMPLETE, EV_RESCALED, EV_ARRIVAL = 0, 1, 2

Event = tuple[float, int, int, int]


class EventQueue:
    """Pending events of one simulation (owned by the simulator).

    Args:
        arrivals: ``(submit_time_s, job_id)`` of every job.
        num_jobs: Jobs in the workload (size of the version table).
    """

    def __init__(self, arrivals: Iterable[tuple[float, int]], num_jobs: int) -> None:
        self.heap: list[Event] = [(t, EV_ARRIVAL, j, 0) for t, j in arrivals]
        heapq.heapify(self.heap)
        self.version = [0] * num_jobs

    def invalidate(self, j: int) -> int:
        """Make job ``j``'s pending completion/rescale events stale; its new version."""
        self.version[j] += 1
        return self.version[j]

    def drop_arrivals(self) -> int:
        """Forget every pending arrival (a what-if fork's unknown future); how many."""
        kept = [e for e in self.heap if e[1] != EV_ARRIVAL]
        dropped = len(self.heap) - len(kept)
        heapq.heapify(kept)
        self.heap = kept
        return dropped

    def push(self, time_s: float, kind: int, j: int) -> None:
        """Schedule an event of job ``j`` at its current version."""
        heapq.heappush(self.heap, (time_s, kind, j, self.version[j]))

    def next_time(self) -> float:
        """Time of the next valid event (``inf`` when none is left); drops stale ones."""
        heap, version = self.heap, self.version
        while heap:
            t, kind, j, v = heap[0]
            if kind == EV_ARRIVAL or v == version[j]:
                return t
            heapq.heappop(heap)
        return math.inf

    def pop_until(self, t_end: float) -> Event | None:
        """Remove and return the next valid event at or before ``t_end`` (else ``None``)."""
        heap, version = self.heap, self.version
        while heap and heap[0][0] <= t_end:
            event = heapq.heappop(heap)
            if event[1] == EV_ARRIVAL or event[3] == version[event[2]]:
                return event
        return None
