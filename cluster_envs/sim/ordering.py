"""Submission order of the simulator's queue: a preempted job goes back to its place.

Pure helpers over the engine's insertion-ordered queue dict (the read-only proxy the
simulator exposes shows that very dict, so it is rebuilt in place, never replaced).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import numpy as np


def submission_rank(submit_s: np.ndarray) -> Callable[[int], int]:
    """Job id -> its rank by (submit time, id): the queue's order."""
    order = np.argsort(submit_s, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank.tolist().__getitem__


def requeue(queue: dict[int, None], j: int, rank_of: Callable[[int], int]) -> bool:
    """Insert ``j`` into ``queue`` in submission order: a binary search on the rank, then
    one C-level rebuild of the dict in place (or an append when it goes last: returns
    True then)."""
    ids = list(queue)
    pos = bisect.bisect(ids, rank_of(j), key=rank_of)
    if pos == len(ids):
        queue[j] = None
        return True
    ids.insert(pos, j)
    queue.clear()
    queue.update(dict.fromkeys(ids))
    return False
