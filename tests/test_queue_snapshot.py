"""The queue's O(1) snapshots (issue 11, a growing queue) show exactly what a tuple of the
queue showed: every snapshot, however old, equals the tuple taken when it was; and whole
episodes (FIFO, FIFO with skipping, SJF, Tiresias with preemption and requeue) are the
same as with the reference path that copies the queue into a tuple for every view. SJF
skips jobs asking for more GPUs than are free without building their JobStatus: the
same episodes as the JobStatus path.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import make_job

import cluster_envs.sim.queue as queue_module
from baselines.moldable import SjfScheduler
from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.ordering import submission_rank
from cluster_envs.sim.queue import JobQueue, QueueSnapshot
from cluster_envs.sim.state_api import SimulatorState
from cluster_envs.sim.view import JobStatus
from cluster_envs.types import JobKind
from cluster_envs.workload import load_workload


def _check(snap: QueueSnapshot, want: tuple[int, ...]) -> None:
    assert len(snap) == len(want) and bool(snap) == bool(want)
    assert tuple(iter(snap)) == want and list(snap) == list(want)
    assert snap == want and want == snap and hash(snap) == hash(want)
    assert repr(snap) == repr(want)
    if want:
        assert snap[0] == want[0] and snap[-1] == want[-1] and snap[1:3] == want[1:3]
        assert want[len(want) // 2] in snap
    assert -1 not in snap
    assert (*snap, -5) == (*want, -5) and snap + (7,) == (*want, 7) and (7,) + snap == (7, *want)


@pytest.mark.parametrize("min_dead", [4, 1024])
def test_snapshots_never_change_whatever_happens_later(
    monkeypatch: pytest.MonkeyPatch, min_dead: int
) -> None:
    monkeypatch.setattr(queue_module, "_MIN_DEAD", min_dead)
    rng = np.random.default_rng(min_dead)
    q = JobQueue(np.arange(10_000.0))
    rank_of = int  # job ids arrive in submission order: the rank is the id
    nxt, snaps, logs = 0, [], set()
    out: list[int] = []  # jobs not queued (started), to requeue
    for step in range(6000):
        u = rng.random()
        if u < 0.45 or not q.ids:
            q.add(nxt)
            nxt += 1
        elif u < 0.75:
            q.discard(next(iter(q.ids)))  # the head (a FIFO start)
            out.append(-1)
        elif u < 0.9:
            ids = list(q.ids)
            j = ids[int(rng.integers(len(ids)))]  # anywhere (SJF, backfilling)
            q.discard(j)
            q.discard(j)  # a second discard is a no-op
            out.append(j)
        elif out and out[-1] >= 0:
            q.requeue(out.pop(), rank_of)  # a preempted job back to its place
        logs.add(id(q._log))
        snap = q.snapshot()
        assert q.snapshot() is snap  # kept while the queue does not change
        want = tuple(q.ids)
        assert list(snap) == sorted(want)  # submission order
        if step % 7 == 0:
            snaps.append((snap, want))
            assert snap.smallest(5) == tuple(sorted(want)[:5])
    assert len(logs) > 5  # logs were rebuilt (dead entries, requeues in the middle)
    for snap, want in snaps:
        _check(snap, want)


def test_smallest_ids_when_submission_order_is_not_id_order() -> None:
    rng = np.random.default_rng(5)
    submit = rng.permutation(400).astype(float)
    q, rank_of = JobQueue(submit), submission_rank(submit)
    assert not q.ascending and JobQueue(np.sort(submit)).ascending
    for j in np.argsort(submit).tolist():  # arrivals, in submission order
        q.add(j)
        if rng.random() < 0.4:
            q.discard(int(rng.choice(list(q.ids))))
        want = tuple(q.ids)
        for k in (0, 1, 7, 1000):
            assert q.snapshot().smallest(k) == tuple(sorted(want)[:k])
    assert list(q.ids) == sorted(q.ids, key=rank_of) and list(q.ids) != sorted(q.ids)


def test_a_view_keeps_its_queue_after_the_simulator_moves_on() -> None:
    jobs = load_workload("philly-sample", num_jobs=200, time_scale=0.02).jobs
    sim = Simulator(jobs, "pollux-testbed")
    fifo, seen = FifoScheduler(strict=False), []
    while not sim.done:
        sim.step()
        view = sim.view()
        seen.append((view, tuple(sim.queue), tuple(sim.active)))
        sim.apply(fifo.decide(view))
    assert max(len(q) for _, q, _ in seen) > 20
    for view, queued, running in seen:
        _check(view.queued_ids, queued)
        assert view.running_ids == running


def _reference_ids(self: SimulatorState) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The path before snapshots: copy the queue and the running jobs per view."""
    return tuple(self.queue), tuple(self.active)


@pytest.mark.parametrize("policy", ["fifo", "fifo-skip", "sjf", "tiresias"])
@pytest.mark.parametrize("min_dead", [4, 1024])
def test_episodes_equal_the_tuple_path(
    monkeypatch: pytest.MonkeyPatch, policy: str, min_dead: int
) -> None:
    monkeypatch.setattr(queue_module, "_MIN_DEAD", min_dead)
    workload = load_workload("philly-sample", num_jobs=300, time_scale=0.01)
    appended: list[bool] = []
    spy = queue_module.requeue

    def counting(queue: dict[int, None], j: int, rank_of) -> bool:  # noqa: ANN001
        appended.append(spy(queue, j, rank_of))
        return appended[-1]

    monkeypatch.setattr(queue_module, "requeue", counting)
    pol = FifoScheduler(strict=False) if policy == "fifo-skip" else policy
    fast = run_episode(workload, pol, "pollux-testbed", seed=3)
    with monkeypatch.context() as m:
        m.setattr(SimulatorState, "queued_and_running_ids", _reference_ids)
        pol = FifoScheduler(strict=False) if policy == "fifo-skip" else policy
        slow = run_episode(workload, pol, "pollux-testbed", seed=3)
    assert fast.metrics["avg_queue_length"] > 10  # a long queue
    if policy == "tiresias":
        assert False in appended  # preempted jobs went back into the middle of the queue
    assert fast.metrics == pytest.approx(slow.metrics, rel=0, abs=0, nan_ok=True)
    assert fast.segments == slow.segments
    for table in ("timeline", "jobs"):
        fast_table, slow_table = getattr(fast, table), getattr(slow, table)
        assert fast_table.keys() == slow_table.keys()
        for name in fast_table:
            assert np.array_equal(fast_table[name], slow_table[name], equal_nan=True)


class _JobStatusSjf(SjfScheduler):
    """SJF on the JobStatus path (an overridden ``_request`` turns the size skip off)."""

    def _request(self, job: JobStatus) -> int:
        return super()._request(job)


def _moldable_jobs(num_jobs: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(num_jobs):
        lo = int(rng.integers(1, 5))
        hi = lo + int(rng.integers(0, 9))
        asked = int(rng.integers(lo, hi + 1))
        submit, work = float(j * 2.0), float(rng.uniform(50, 3000))
        kind = JobKind.RIGID if lo == hi else JobKind.MOLDABLE
        jobs.append(make_job(j, submit, work, asked, kind=kind, min_gpus=lo, max_gpus=hi))
    return jobs


@pytest.mark.parametrize("levels", [(1, 2, 4, 8, 16), (3, 6)])
def test_sjf_size_skip_equals_the_job_status_path(levels: tuple[int, ...]) -> None:
    jobs = _moldable_jobs(200, seed=len(levels))
    sim = Simulator(jobs, "pollux-testbed")
    while len(sim.queue) < 30:
        sim.step()
    view = sim.view()
    sjf = SjfScheduler(levels)
    ids = list(view.queued_ids)
    sizes = sjf.request_sizes(view.job_table(ids))
    assert sizes == [sjf._request(view.job(j)) for j in ids]
    assert len(set(sizes)) > 2  # the jobs asked for different sizes
    fast = run_episode(jobs, SjfScheduler(levels), "pollux-testbed", seed=1)
    slow = run_episode(jobs, _JobStatusSjf(levels), "pollux-testbed", seed=1)
    assert fast.metrics["avg_queue_length"] > 10
    assert fast.metrics == pytest.approx(slow.metrics, rel=0, abs=0, nan_ok=True)
    assert fast.segments == slow.segments


def test_tiresias_on_unsorted_ids_equals_the_tuple_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Submit times not in id order: the eligible (smallest) ids are not the queue's head.
    jobs = _moldable_jobs(300, seed=9)
    rng = np.random.default_rng(9)
    submits = rng.permutation([job.submit_time_s for job in jobs])
    jobs = [replace(job, submit_time_s=float(t)) for job, t in zip(jobs, submits, strict=True)]
    fast = run_episode(jobs, "tiresias", "pollux-testbed", seed=2)
    with monkeypatch.context() as m:
        m.setattr(SimulatorState, "queued_and_running_ids", _reference_ids)
        slow = run_episode(jobs, "tiresias", "pollux-testbed", seed=2)
    assert fast.metrics["avg_queue_length"] > 10
    assert fast.metrics == pytest.approx(slow.metrics, rel=0, abs=0, nan_ok=True)
    assert fast.segments == slow.segments
