"""The simulator's queue, with snapshots that cost O(1) whatever its length.

A view shows the queued job ids as they were when it was taken. Copying them into a
tuple at every decision made each event O(queued); on a growing queue that dominated the
simulator. :class:`JobQueue` keeps, next to the insertion-ordered dict that
``Simulator.queue`` shows, an append-only log of the ids in queue order with, per entry,
the stamp at which it left the queue. A :class:`QueueSnapshot` is then just
``(log, head, end, stamp, length)``: it reads the entries of ``log[head:end]`` still in
the queue at its stamp. Later changes only append past ``end`` or stamp entries with a
larger stamp, so a snapshot never changes; when two thirds of the log are dead, or a
preempted job goes back into the middle, the queue starts a new log (the old one stays
with the snapshots that read it). Iterating a snapshot from the front costs only what is
read (a FIFO scan that stops at the first job that does not fit); its length is O(1).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, islice
from typing import Any, overload

import numpy as np

from cluster_envs.sim.ordering import requeue

#: Stamp of an entry still in the queue (larger than every stamp).
_LIVE = sys.maxsize
#: A log with fewer dead entries than this is never rebuilt.
_MIN_DEAD = 1024


class QueueSnapshot(Sequence[int]):
    """The queued job ids at one instant, in queue order: an immutable sequence that
    compares, hashes and prints like the tuple of its ids."""

    __slots__ = ("_log", "_gone", "_head", "_end", "_stamp", "_len", "_tuple", "_ascending")

    def __init__(
        self,
        log: list[int],
        gone: list[int],
        head: int,
        end: int,
        stamp: int,
        length: int,
        ascending: bool = False,
    ) -> None:
        self._log, self._gone, self._head, self._end = log, gone, head, end
        self._stamp, self._len, self._ascending = stamp, length, ascending
        self._tuple: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        if self._tuple is not None:
            return iter(self._tuple)
        span = range(self._head, self._end)
        if len(span) == self._len:  # no entry of the span had left at the stamp
            return map(self._log.__getitem__, span)
        kept = map(self._stamp.__lt__, map(self._gone.__getitem__, span))
        return compress(map(self._log.__getitem__, span), kept)

    def smallest(self, k: int) -> tuple[int, ...]:
        """The ``k`` smallest ids, ascending (the first ``k`` where the queue's submission
        order is id order, as in every workload sorted by submit time)."""
        if self._ascending:
            return tuple(islice(self, max(k, 0)))
        return tuple(sorted(self)[: max(k, 0)])

    def as_tuple(self) -> tuple[int, ...]:
        """The ids as a tuple (built once)."""
        if self._tuple is None:
            self._tuple = tuple(self.__iter__())
        return self._tuple

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...
    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        return self.as_tuple()[index]

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.as_tuple()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, QueueSnapshot):
            other = other.as_tuple()
        return self.as_tuple() == other

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __add__(self, other: tuple[Any, ...]) -> tuple[Any, ...]:
        return self.as_tuple() + tuple(other)

    def __radd__(self, other: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(other) + self.as_tuple()

    def __repr__(self) -> str:
        return repr(self.as_tuple())


class JobQueue:
    """Queued job ids in submission order (owned by the simulator).

    ``ids`` is the insertion-ordered dict ``Simulator.queue`` shows (changed in place,
    never replaced); :meth:`snapshot` gives what a view shows.

    Args:
        submit_s: Every job's submit time, by id: where they never decrease, submission
            order is id order and snapshots know that their ids ascend.
    """

    def __init__(self, submit_s: np.ndarray) -> None:
        self.ascending = bool(np.all(np.diff(submit_s) >= 0))
        self.ids: dict[int, None] = {}
        self._stamp = 0
        self._snapshot: QueueSnapshot | None = None
        self._new_log()

    def _new_log(self) -> None:
        """Start a fresh log of the queue as it is (the old lists are never changed)."""
        self._log = list(self.ids)
        self._gone = [_LIVE] * len(self._log)
        self._pos = {j: p for p, j in enumerate(self._log)}
        self._head = 0

    def _changed(self) -> None:
        self._stamp += 1
        self._snapshot = None

    def add(self, j: int) -> None:
        """Append job ``j`` (an arrival: arrivals come in submission order)."""
        self.ids[j] = None
        self._pos[j] = len(self._log)
        self._log.append(j)
        self._gone.append(_LIVE)
        self._changed()

    def discard(self, j: int) -> None:
        """Remove job ``j`` if it is queued."""
        p = self._pos.pop(j, None)
        if p is None:
            return
        del self.ids[j]
        self._changed()
        gone = self._gone
        gone[p] = self._stamp
        if p == self._head:
            head, end = p + 1, len(gone)
            while head < end and gone[head] != _LIVE:
                head += 1
            self._head = head
        live = len(self.ids)
        if len(gone) - live > max(2 * live, _MIN_DEAD):
            self._new_log()

    def requeue(self, j: int, rank_of: Callable[[int], int]) -> None:
        """Put job ``j`` back at its place in submission order (a preempted job)."""
        if requeue(self.ids, j, rank_of):
            self._pos[j] = len(self._log)
            self._log.append(j)
            self._gone.append(_LIVE)
        else:
            self._new_log()
        self._changed()

    def snapshot(self) -> QueueSnapshot:
        """The queued ids now (the same object until the queue changes)."""
        if self._snapshot is None:
            log = self._log
            self._snapshot = QueueSnapshot(
                log, self._gone, self._head, len(log), self._stamp, len(self.ids), self.ascending
            )
        return self._snapshot
