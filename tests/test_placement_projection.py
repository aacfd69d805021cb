"""The online placer's projection: it sees the queue, and bad settings fail clearly."""

from __future__ import annotations

import pytest

from baselines.placement.online import BOPlacement
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import settle
from cluster_envs.workload import synthetic_workload


def _view_with_queue():
    wl = synthetic_workload(
        num_jobs=30, cluster="hetero-small", seed=2, load=3.0, gpu_demand_probs={4: 0.5, 8: 0.5}
    )
    sim = Simulator(wl.jobs, "hetero-small", {"node_interference": 0.1}, seed=0)
    policy = make_policy("fifo")
    while not sim.done:
        sim.step()
        view = sim.view()
        if (
            len(view.queued_ids) >= 2
            and view.job(view.queued_ids[0]).num_gpus <= view.num_free_gpus
        ):
            return view
        settle(sim, policy)
    raise AssertionError("no decision with a queue behind the head job")


def test_projection_charges_the_queued_jobs_behind_the_placed_one() -> None:
    view = _view_with_queue()
    head = view.job(view.queued_ids[0])
    free = view.free_gpus.copy()
    placement = make_policy("fifo").placement.place(view, head, head.num_gpus, free)
    alone = BOPlacement("rf", queue_horizon=0).projected_cost(view, head, free, placement)
    queued = BOPlacement("rf").projected_cost(view, head, free, placement)
    assert queued > alone > 0


def test_bad_queue_horizon_fails_with_a_clear_message() -> None:
    with pytest.raises(ConfigError, match="queue_horizon"):
        BOPlacement("gp-ei", queue_horizon=-1)


def test_expected_arrivals_add_to_the_projection_only_when_asked() -> None:
    view = _view_with_queue()
    head = view.job(view.queued_ids[0])
    free = view.free_gpus.copy()
    placement = make_policy("fifo").placement.place(view, head, head.num_gpus, free)
    assert view.num_pending > 0
    default = BOPlacement("rf")
    assert default.arrivals == 0
    base = default.projected_cost(view, head, free, placement)
    ahead = BOPlacement("rf", arrivals=4)
    assert ahead.projected_cost(view, head, free, placement) > base
    future = ahead._expected_arrivals(view, 100)
    assert len(future) == min(4, view.num_pending)
    assert [s.job_id for s in future] == list(range(100, 100 + len(future)))
    submits = [s.submit_time_s for s in future]
    assert submits == sorted(submits) and submits[0] >= 0.0
    assert not set(s.name for s in future) - {view.job(j).name for j in view.queued_ids}


@pytest.mark.parametrize("arrivals", [-1, 1.5, True])
def test_bad_arrivals_fail_with_a_clear_message(arrivals) -> None:
    with pytest.raises(ConfigError, match="arrivals must be an integer >= 0"):
        BOPlacement("gp-ei", arrivals=arrivals)
