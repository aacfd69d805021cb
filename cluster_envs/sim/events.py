"""The simulator's events: arrivals in a sorted array, the rest in a heap with versions.

Events are ``(time_s, kind, job_id, version)`` ordered as tuples: at one instant
completions come first (their GPUs are free for the next decision), then ends of
rescales, then arrivals, each kind by job id -- a deterministic tie-break. A job's
completion or rescale event is valid only while its version is the job's current one:
changing a job's rate bumps its version, so re-keying is a push, never a heap search.

Arrivals are known up front: they sit in arrays sorted by ``(time_s, job_id)`` behind a
cursor and never enter the heap, which so holds only the events of started jobs. Popping
costs ``O(log running)`` whatever the number of jobs pending or queued.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from cluster_envs.sim.copying import copy_sharing

EV_COMPLETE, EV_RESCALED, EV_ARRIVAL = 0, 1, 2

Event = tuple[float, int, int, int]


class EventQueue:
    """Pending events of one simulation (owned by the simulator).

    Args:
        submit_s: Submit time of job ``j`` at ``submit_s[j]``, for every job.
    """

    def __init__(self, submit_s: np.ndarray) -> None:
        times = np.asarray(submit_s, dtype=np.float64)
        self.submit_s = times
        order = np.argsort(times, kind="stable")  # ties by job id
        self._arrival_s = times[order]  # 8 bytes a job; read one by one as floats
        self._arrival_job = order
        self._next = 0  # cursor into the arrivals
        self._next_arrival_s = float(self._arrival_s[0]) if len(order) else math.inf
        self.heap: list[Event] = []
        self.version = [0] * len(times)

    def __deepcopy__(self, memo: dict[int, Any]) -> EventQueue:
        """A fork's copy: the versions (ints) and the heap of events (tuples of numbers)
        copied one level (:mod:`cluster_envs.sim.copying`)."""
        return copy_sharing(self, memo, ("heap", "version"))

    def invalidate(self, j: int) -> int:
        """Make job ``j``'s pending completion/rescale events stale; its new version."""
        self.version[j] += 1
        return self.version[j]

    def drop_arrivals(self) -> int:
        """Forget every pending arrival (a what-if fork's unknown future); how many."""
        dropped = len(self._arrival_s) - self._next
        self._next = len(self._arrival_s)
        self._next_arrival_s = math.inf
        return dropped

    def set_arrivals(self, ids: np.ndarray, times: np.ndarray) -> None:
        """Make jobs ``ids`` arriving at ``times`` the only pending arrivals (a what-if
        fork's sampled future; their ``submit_s`` entries are overwritten)."""
        self.submit_s[ids] = times
        order = np.lexsort((ids, times))
        self._arrival_s, self._arrival_job = times[order], ids[order]
        self._next = 0
        self._next_arrival_s = float(self._arrival_s[0]) if len(ids) else math.inf

    def push(self, time_s: float, kind: int, j: int) -> None:
        """Schedule an event of job ``j`` at its current version."""
        heapq.heappush(self.heap, (time_s, kind, j, self.version[j]))

    def _drop_stale(self) -> None:
        heap, version = self.heap, self.version
        while heap and heap[0][3] != version[heap[0][2]]:
            heapq.heappop(heap)

    def next_time(self) -> float:
        """Time of the next valid event (``inf`` when none is left); drops stale ones."""
        self._drop_stale()
        heap = self.heap
        if heap and heap[0][0] <= self._next_arrival_s:
            return heap[0][0]
        return self._next_arrival_s

    def pop_until(self, t_end: float) -> Event | None:
        """Remove and return the next valid event at or before ``t_end`` (else ``None``)."""
        heap, arrival_s, version = self.heap, self._next_arrival_s, self.version
        while heap and heap[0][3] != version[heap[0][2]]:
            heapq.heappop(heap)  # stale
        if heap and heap[0][0] <= arrival_s:  # a heap event's kind < EV_ARRIVAL: it is first
            return heapq.heappop(heap) if heap[0][0] <= t_end else None
        if arrival_s > t_end:
            return None
        k = self._next
        self._next = k + 1
        more = k + 1 < len(self._arrival_s)
        self._next_arrival_s = float(self._arrival_s[k + 1]) if more else math.inf
        return (arrival_s, EV_ARRIVAL, int(self._arrival_job[k]), 0)
