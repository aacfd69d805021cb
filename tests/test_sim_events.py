"""The event queue (arrivals behind a cursor) pops what one heap of every event would."""

from __future__ import annotations

import heapq
import math

import numpy as np

from cluster_envs.sim.events import EV_ARRIVAL, EV_COMPLETE, EV_RESCALED, EventQueue


class _OneHeap:
    """The reference: every event, arrivals included, in one heap with versions."""

    def __init__(self, submit_s: np.ndarray) -> None:
        self.heap = [(float(t), EV_ARRIVAL, j, 0) for j, t in enumerate(submit_s)]
        heapq.heapify(self.heap)
        self.version = [0] * len(submit_s)

    def push(self, t: float, kind: int, j: int) -> None:
        heapq.heappush(self.heap, (t, kind, j, self.version[j]))

    def next_time(self) -> float:
        while self.heap:
            t, kind, j, v = self.heap[0]
            if kind == EV_ARRIVAL or v == self.version[j]:
                return t
            heapq.heappop(self.heap)
        return math.inf

    def pop_until(self, t_end: float):
        while self.heap and self.heap[0][0] <= t_end:
            event = heapq.heappop(self.heap)
            if event[1] == EV_ARRIVAL or event[3] == self.version[event[2]]:
                return event
        return None


def test_events_come_out_as_from_one_heap() -> None:
    rng = np.random.default_rng(4)
    n = 300
    submit = np.round(rng.uniform(0, 50, size=n))  # many ties at one instant
    fast, slow = EventQueue(submit), _OneHeap(submit)
    now, popped = 0.0, 0
    while True:
        assert fast.next_time() == slow.next_time()
        t_end = now + float(rng.choice([0.0, 0.5, 2.0]))
        a, b = fast.pop_until(t_end), slow.pop_until(t_end)
        assert a == b
        if a is None:
            if fast.next_time() == math.inf:
                break
            now = t_end
            continue
        popped += 1
        now = a[0]
        j = int(rng.integers(n))
        if rng.random() < 0.3:
            fast.invalidate(j)
            slow.version[j] += 1
        kind = EV_COMPLETE if rng.random() < 0.7 else EV_RESCALED
        if rng.random() < 0.6:  # some events land exactly on an arrival instant
            t = float(np.round(now + rng.uniform(0, 5)))
            fast.push(t, kind, j)
            slow.push(t, kind, j)
    assert popped > n
