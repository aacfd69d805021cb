"""The FIFO replay's short cuts (issue 11, traces at scale) decide exactly as before.

FIFO with the consolidated placement reads ``view.requested_gpus(j)`` instead of a full
``JobStatus``, and first-fit on a large cluster scans nodes grouped by GPU speed (kept
per read-only speed array): the same placements, decisions and episodes as the generic
path (a placement subclass takes it) and as the pure-Python consolidation.
"""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.policies.fifo import FifoScheduler
from cluster_envs.policies.placement import (
    ConsolidatedPlacement,
    _consolidate_array,
    _consolidate_list,
)
from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.view import StaleViewError
from cluster_envs.types import JobState
from cluster_envs.workload import load_workload


class _Generic(ConsolidatedPlacement):
    """The same placement, seen by FIFO as any placement (the JobStatus path)."""


def test_cached_speed_groups_agree_with_the_list_path() -> None:
    rng = np.random.default_rng(11)
    speeds = []
    for kinds in ([1.1, 1.7], [1.0, 1.6, 2.5], [1.0]):
        speed = rng.choice(kinds, 90)
        speed.setflags(write=False)  # a view's node_speed: cached by identity
        speeds.append(speed)
    checked = 0
    for _ in range(400):
        speed = speeds[int(rng.integers(len(speeds)))]
        free = rng.integers(0, 9, len(speed)).astype(np.int64)
        free[rng.random(len(speed)) < 0.6] = 0
        free[(speed == speed.max()) & (rng.random(len(speed)) < 0.9)] = 0  # fast nodes full
        num_gpus = int(rng.integers(1, 12))
        args = (num_gpus, "first-fit", True, "fewest-nodes")
        want = _consolidate_list(free.tolist(), speed.tolist(), *args)
        assert _consolidate_array(free, speed, *args) == want, (free, speed, num_gpus)
        checked += want is not None and len(want) == 1 and speed[want[0][0]] < speed.max()
    assert checked > 10  # single-node answers below the fastest speed were exercised


#: Over ``SMALL_CLUSTER`` nodes (the numpy path), two GPU speeds, small enough to queue.
MIXED = {
    "name": "mixed",
    "node_groups": [
        {"num_nodes": 40, "gpus_per_node": 2, "gpu_type": "P100"},
        {"num_nodes": 30, "gpus_per_node": 4, "gpu_type": "V100"},
    ],
}


@pytest.mark.parametrize("cluster", [MIXED, "pollux-testbed"], ids=["mixed-70", "testbed"])
def test_fifo_direct_path_equals_the_job_status_path(cluster) -> None:  # noqa: ANN001
    workload = load_workload("philly-sample", num_jobs=300, time_scale=0.05)
    direct = run_episode(workload, FifoScheduler(), cluster)
    generic = run_episode(workload, FifoScheduler(_Generic("first-fit")), cluster)
    assert direct.metrics["avg_queue_length"] > 1  # jobs waited: FIFO scanned a queue
    assert direct.metrics == pytest.approx(generic.metrics, rel=0, abs=0, nan_ok=True)
    assert direct.segments == generic.segments
    for name in direct.jobs:
        assert np.array_equal(direct.jobs[name], generic.jobs[name], equal_nan=True)


def test_requested_gpus_is_what_job_status_shows() -> None:
    jobs = load_workload("philly-sample", num_jobs=40, time_scale=0.05).jobs
    sim = Simulator(jobs, {"name": "one", "node_groups": [{"num_nodes": 1, "gpus_per_node": 8}]})
    fifo = FifoScheduler()
    while not (sim.queue and len(sim.active) > 1):
        sim.step()
        sim.apply(fifo.decide(sim.view()))
    view = sim.view()
    visible = [*view.queued_ids, *view.running_ids]
    assert view.queued_ids and view.running_ids
    for j in visible:
        synced = sim.last_update_s[j]
        asked = view.requested_gpus(j)
        assert sim.last_update_s[j] == synced  # read only: no sync, unlike view.job
        assert asked == view.job(j).num_gpus == jobs[j].num_gpus
    hidden = [j for j in range(len(jobs)) if sim.state[j] in (JobState.PENDING, JobState.FINISHED)]
    assert any(sim.state[j] == JobState.PENDING for j in hidden)
    for j in hidden:
        with pytest.raises(KeyError, match="not queued or running"):
            view.requested_gpus(j)
    sim.step()
    with pytest.raises(StaleViewError):
        view.requested_gpus(visible[0])
