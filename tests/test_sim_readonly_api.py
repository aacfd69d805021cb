"""The simulator's public state is read-only, private state stays inside the engine, and
observers see exactly what the episode record sees."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import SpreadPenaltySpeed, make_job

from cluster_envs.runner import run_episode
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.metrics import compute_metrics, lower_bound_avg_jct_s
from cluster_envs.sim.observers import SimObserver
from cluster_envs.sim.quality import quality_metrics, track_quality
from cluster_envs.types import Allocate, Decision, JobKind, Preempt

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("cluster_envs", "baselines", "agents")
#: Names a simulator goes by (``sim``, ``self.sim``, ``env.sim``, ``simulator``, ...).
SIM_NAMES = {"sim", "simulator", "_sim", "base_sim"}
TWO_NODES = {"name": "two", "node_groups": [{"num_nodes": 2, "gpus_per_node": 2}]}


def _names_a_simulator(node: ast.expr) -> bool:
    """True for ``sim``, ``x.sim``, ``self.env.simulator`` and chains through them."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(node, ast.Attribute) and node.attr in SIM_NAMES:
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id in SIM_NAMES


def private_simulator_accesses(source: str) -> list[tuple[int, str]]:
    """``(line, expression)`` of every ``<simulator>[...]._name`` (non-dunder) access."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not (node.attr.startswith("__") and node.attr.endswith("__"))
            and _names_a_simulator(node.value)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_scanner_catches_the_patterns_it_must() -> None:
    bad = "sim._stop(1)\nself.sim._state_version\nenv.unwrapped.sim._rate\nsim.inventory._inv\n"
    assert [line for line, _ in private_simulator_accesses(bad)] == [1, 2, 3, 4]
    ok = "sim.state_version\nself._sim_config\nself.sim.queue.__len__()\nother._x\n"
    assert private_simulator_accesses(ok) == []


def test_no_module_outside_the_engine_touches_private_simulator_state() -> None:
    engine = ROOT / "cluster_envs" / "sim" / "engine.py"
    offences = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == engine:
                continue
            for line, expr in private_simulator_accesses(path.read_text()):
                offences.append(f"{path.relative_to(ROOT)}:{line}: {expr}")
    assert offences == []


def _running_sim() -> Simulator:
    sim = Simulator([make_job(0, 0, 100, 2), make_job(1, 0, 50, 1)], TWO_NODES)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 2),)), Allocate(1, ((1, 1),)))))
    return sim


ARRAYS = (
    "state", "progress", "rate", "last_update_s", "first_start_s", "finish_s",
    "attained_gpu_s", "num_restarts", "num_gpus_held", "held_since_s",
)  # fmt: skip


@pytest.mark.parametrize("name", ARRAYS)
def test_arrays_are_live_read_only_views(name: str) -> None:
    sim = _running_sim()
    array = getattr(sim, name)
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 7
    with pytest.raises(ValueError):
        array.flags.writeable = True  # a view of private storage cannot be unlocked
    with pytest.raises(AttributeError):
        setattr(sim, name, np.zeros(2))
    before = array.copy()
    sim.step()  # job 1 finishes at t=50: the same view shows the new state
    assert getattr(sim, name) is array
    if name in ("state", "finish_s", "num_gpus_held"):
        assert not np.array_equal(before, array, equal_nan=True)


def test_containers_and_facades_refuse_writes() -> None:
    sim = _running_sim()
    with pytest.raises(TypeError):
        sim.active[5] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        sim.queue[1] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        sim.placement[0] = ((1, 1),)  # type: ignore[index]
    with pytest.raises(ValueError):
        sim.inventory.free[0] = 0
    for target, attr in ((sim.inventory, "num_free"), (sim.inventory, "network_speed")):
        with pytest.raises(AttributeError):
            setattr(target, attr, 1)
    with pytest.raises(AttributeError):
        sim.contention.enabled = False  # type: ignore[misc]
    for name in ("now_s", "record", "jobs", "estimator", "state_version", "queue", "inventory"):
        with pytest.raises(AttributeError):
            setattr(sim, name, None)
    assert not hasattr(sim.inventory, "take") and not hasattr(sim.contention, "add")


def test_read_only_windows_keep_order_len_and_membership() -> None:
    sim = Simulator([make_job(j, 0, 10 + j) for j in range(4)], TWO_NODES)
    sim.step()
    assert list(sim.queue) == [0, 1, 2, 3] and len(sim.queue) == 4 and 2 in sim.queue
    sim.apply(Decision(tuple(Allocate(j, ((j // 2, 1),)) for j in (3, 1))))
    assert list(sim.queue) == [0, 2] and list(sim.active) == [3, 1]
    sim.apply(Decision((Preempt(3),)))
    assert list(sim.queue) == [0, 2, 3]  # back in submission order
    assert sim.placement[1] == ((0, 1),) and len(sim.placement) == 4
    assert sim.inventory.num_free == 3 and sim.inventory.free.tolist() == [1, 2]


class Mirror(SimObserver):
    """Recomputes the record's sums from the callbacks alone."""

    def __init__(self) -> None:
        self.busy_gpu_s = self.queued_job_s = self.system_job_s = 0.0
        self.segments: list[tuple] = []
        self.finished: list[tuple[int, float]] = []
        self.decisions = 0
        self.last_t1: float | None = None

    def on_advance(self, sim: Simulator, t0: float, t1: float) -> None:
        assert sim.now_s == t0 < t1
        assert self.last_t1 is None or self.last_t1 == t0  # intervals tile the clock
        self.last_t1 = t1
        busy = sim.inventory.num_gpus - sim.inventory.num_free
        self.busy_gpu_s += busy * (t1 - t0)
        self.queued_job_s += len(sim.queue) * (t1 - t0)
        self.system_job_s += (len(sim.queue) + len(sim.active)) * (t1 - t0)

    def on_decision(self, sim: Simulator, num_changed: int) -> None:
        assert num_changed >= 1
        self.decisions += 1

    def on_release(self, sim, job_id, start_s, end_s, placement) -> None:  # type: ignore[no-untyped-def]
        assert end_s == sim.now_s and sim.placement[job_id] == placement
        self.segments.append((job_id, start_s, end_s, placement))

    def on_finish(self, sim: Simulator, job_id: int) -> None:
        self.finished.append((job_id, float(sim.finish_s[job_id])))


def test_an_observer_sees_exactly_what_the_record_saw() -> None:
    mirror = Mirror()
    jobs = [
        make_job(j, 7.0 * j, 40 + 13 * j, 1 + j % 2, kind=JobKind.MALLEABLE, min_gpus=1,
                 max_gpus=3)
        for j in range(6)
    ]  # fmt: skip
    sim = Simulator(jobs, TWO_NODES, {"record_timeline": True, "rescale_cost_s": 2.0})
    sim.add_observer(mirror)
    tracker = track_quality(sim)
    assert sim.observers == (sim.record, mirror, tracker)
    while not sim.done:
        sim.step()
        free = dict(enumerate(sim.inventory.free.tolist()))
        actions = []
        for j in list(sim.queue):
            node = max(free, key=free.get)
            if free[node]:
                actions.append(Allocate(j, ((node, 1),)))
                free[node] -= 1
        if not actions and sim.active and sim.queue:
            actions = [Preempt(next(iter(sim.active)))]
        sim.apply(Decision(tuple(actions)))
    record = sim.record
    assert (mirror.busy_gpu_s, mirror.queued_job_s, mirror.system_job_s) == (
        record.busy_gpu_s, record.queued_job_s, record.system_job_s,
    )  # fmt: skip
    assert mirror.segments == record.segments and len(record.segments) >= len(jobs)
    assert sorted(mirror.finished) == [(j, float(sim.finish_s[j])) for j in range(len(jobs))]
    assert mirror.decisions >= len(jobs)
    assert math.isfinite(quality_metrics(sim)["quality_auc"])
    with pytest.raises(ValueError, match="track_quality"):
        track_quality(sim)


def test_metrics_of_the_runner_match_the_simulator_record() -> None:
    jobs = [make_job(0, 0, 100), make_job(1, 0, 50)]
    one = {"name": "one", "node_groups": [{"num_nodes": 1, "gpus_per_node": 1}]}
    result = run_episode(jobs, "fifo", one, {"record_timeline": True})
    assert result.metrics["gpu_utilization"] == 1.0
    assert result.segments == [(0, 0.0, 100.0, ((0, 1),)), (1, 100.0, 150.0, ((0, 1),))]


MIXED = {
    "name": "mixed",
    "node_groups": [
        {"num_nodes": 1, "gpus_per_node": 2, "gpu_type": "A100"},
        {"num_nodes": 1, "gpus_per_node": 2, "gpu_type": "T4"},
    ],
}


def test_lower_bound_is_finite_for_a_job_that_must_span_gpu_types() -> None:
    # 3 GPUs fit neither 2-GPU group alone: the bound used to be inf and the ratio 0.0.
    job = make_job(0, 0, 300, 3, kind=JobKind.MOLDABLE, min_gpus=3, max_gpus=4,
                   speed=SpreadPenaltySpeed(penalty=0.0))  # fmt: skip
    sim = Simulator([job], MIXED)
    # Best: 4 GPUs (slowest a T4, speed 1.0): 300 / 4 = 75 s.
    assert lower_bound_avg_jct_s(sim) == pytest.approx(75.0)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 2), (1, 2))),)))
    sim.step()
    m = compute_metrics(sim)
    assert m["avg_jct_s"] == pytest.approx(75.0)
    assert m["jct_ratio_to_lower_bound"] == pytest.approx(1.0)


def test_ratio_is_nan_while_jobs_are_unfinished() -> None:
    sim = Simulator([make_job(0, 0, 10), make_job(1, 0, 1000)], TWO_NODES)
    sim.step()
    sim.apply(Decision((Allocate(0, ((0, 1),)), Allocate(1, ((1, 1),)))))
    sim.step()
    m = compute_metrics(sim)
    assert m["num_unfinished"] == 1 and math.isfinite(m["lower_bound_avg_jct_s"])
    assert math.isnan(m["jct_ratio_to_lower_bound"])
