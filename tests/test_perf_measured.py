"""Measured step-time tables (the Pollux artifact's truth), shipped with the package."""

from __future__ import annotations

import copy
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.interpolate import LinearNDInterpolator

from cluster_envs.cli import main
from cluster_envs.errors import ConfigError
from cluster_envs.perf import zoo
from cluster_envs.perf.goodput import GoodputSpeed, get_goodput_model
from cluster_envs.perf.measured import (
    MeasuredThroughput,
    get_table,
    measured_data,
    measured_speed_model,
    micro_batches,
    placement_key,
)
from cluster_envs.runner import run_episode
from cluster_envs.sim.view import ClusterView
from cluster_envs.types import Allocate, Decision
from cluster_envs.workload.loaders import load_workload
from cluster_envs.workload.pollux_artifact import ARTIFACT_SIM_CONFIG, artifact_workload

MODELS = zoo.ZOO_MODELS


def raw_rows(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shipped rows as the artifact's data frames (placements, scalability)."""
    raw = measured_data()["models"][name]
    place = pd.DataFrame(
        [(int(p), *row) for p, rows in raw["placements"].items() for row in rows],
        columns=["placement", "local_bsz", "step_time", "sync_time"],
    )
    cols = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
    return place, pd.DataFrame(raw["scalability"], columns=cols)


def test_placement_key_is_the_smallest_rotation() -> None:
    assert placement_key((4, 0, 4, 1)) == (1, 4, 4)
    assert placement_key((2, 1, 2, 1)) == (1, 2, 1, 2)  # a rotation, not a sort
    assert placement_key((3,)) == (3,)


@pytest.mark.parametrize("name", MODELS)
def test_every_placement_of_up_to_four_nodes_is_measured(name: str) -> None:
    """108 placements: every necklace of 1-4 nodes with 1-4 GPUs each."""
    placements = get_table(name).placements
    assert len(placements) == 108
    for shape in placements:
        assert placement_key(shape) == shape


@pytest.mark.parametrize("name", ["cifar10", "bert", "yolov3"])
def test_measured_rows_come_back_and_interpolate_linearly(name: str) -> None:
    table = get_table(name)
    place, _ = raw_rows(name)
    rows = place[place.placement == 144].sort_values("local_bsz")
    for bsz, step, sync in rows[["local_bsz", "step_time", "sync_time"]].to_numpy():
        assert table.step_sync((4, 1, 4), int(bsz)) == (step, sync)  # a rotation of 144
    (b0, s0), (b1, s1) = rows[["local_bsz", "step_time"]].to_numpy()[:2]
    if b1 - b0 > 1:
        mid = int((b0 + b1) // 2)
        want = s0 + (s1 - s0) * (mid - b0) / (b1 - b0)
        assert table.step_sync((1, 4, 4), mid)[0] == pytest.approx(want, rel=1e-12)
    assert table.step_sync((1, 4, 4), int(rows.local_bsz.max()) + 1) is None


@pytest.mark.parametrize("name", ["cifar10", "imagenet", "ncf"])
def test_many_node_interpolation_is_the_artifacts(name: str) -> None:
    """5+ nodes: the artifact's pandas groupby-mean + scalability rows, LinearND."""
    place, scal = raw_rows(name)
    place["num_nodes"] = place.placement.apply(lambda p: len(str(p)))
    place["num_replicas"] = place.placement.apply(lambda p: sum(map(int, str(p))))
    xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
    df = pd.concat([place.groupby(xs)[ys].mean().reset_index(), scal], ignore_index=True)
    reference = LinearNDInterpolator(df[xs].to_numpy(), df[ys].to_numpy())
    table = get_table(name)
    low, high = scal.local_bsz.min(), scal.local_bsz.max()
    checked = 0
    for shape in [(4,) * 6, (4,) * 5 + (2,), (2,) * 10, (4,) * 16, (4,) * 17, (1,) * 8]:
        for bsz in np.linspace(low, high, 5).round().astype(int):
            nodes = min(len(shape), 16)
            want = reference([[nodes, sum(shape), bsz]])[0]
            got = table.step_sync(shape, int(bsz))
            if not np.all(np.isfinite(want)):
                assert got is None
                continue
            checked += 1
            assert got == pytest.approx(tuple(want), rel=1e-12)
    assert checked >= 10


def test_artifact_micro_batch_rule_and_fallback() -> None:
    """One GPU above the initial batch takes two micro-steps (the artifact's rule)."""
    info = zoo.get_model("cifar10")
    m0 = info.batch_sizes[0]
    table = get_table("cifar10")
    at_m0 = measured_speed_model("cifar10", m0)
    step, sync = table.step_sync((1,), m0)
    assert at_m0.iteration_time((1,)) == pytest.approx(step)
    double = measured_speed_model("cifar10", 2 * m0)
    step, sync = table.step_sync((1,), m0)
    assert double.iteration_time((1,)) == pytest.approx(step + (step - sync))
    # 4 GPUs at 4 * m0: one micro-step of m0 each.
    assert measured_speed_model("cifar10", 4 * m0).iteration_time((4,)) == pytest.approx(
        table.step_sync((4,), m0)[0]
    )
    # A local batch below the smallest measured one: the fitted model answers.
    tiny = measured_speed_model("cifar10", m0)
    shape = (4,) * 8  # 32 GPUs x 4 samples < 32 measured minimum
    assert tiny.iteration_time(shape) == zoo.speed_model("cifar10", m0).iteration_time(shape)
    # Slower GPUs stretch the compute part, a slower network the cross-node sync only.
    step, sync = table.step_sync((2, 2), 2 * m0 // 4)
    model = measured_speed_model("cifar10", 2 * m0)
    assert model.iteration_time((2, 2), 0.5, 1.0) == pytest.approx(2 * (step - sync) + sync)
    assert model.iteration_time((2, 2), 1.0, 0.5) == pytest.approx(step - sync + 2 * sync)


def test_micro_batches_is_pollux_rule() -> None:
    assert micro_batches(4096, 4, 1024) == (0, 1024)
    assert micro_batches(4096, 2, 1024) == (1, 1024)
    assert micro_batches(100, 3, 8) == (4, 7)  # 33.3 per GPU: 5 steps of 7
    assert micro_batches(1, 4, 8) == (0, 1)


def test_goodput_truth_is_measured_beliefs_are_fitted() -> None:
    good = get_goodput_model("imagenet")
    fitted = GoodputSpeed(good, good.init_batch_size)
    measured = GoodputSpeed(good, good.init_batch_size, get_table("imagenet"))
    shape, batch, frac = (4, 4), 1600, 0.4
    accum, micro = micro_batches(batch, 8, good.perf.max_local_bsz)
    time = get_table("imagenet").iteration_time(shape, micro, accum)
    assert time is not None
    want = float(good.gain(batch, frac)) / time
    assert measured.goodput_rate(shape, 1.0, 1.0, batch, frac) == pytest.approx(want, rel=1e-12)
    assert fitted.goodput_rate(shape, 1.0, 1.0, batch, frac) != pytest.approx(want, rel=1e-3)
    # What a scheduler reads (the model) is the same object either way.
    assert measured.model is fitted.model


def test_tables_are_shared_by_copies_and_pickles() -> None:
    model = measured_speed_model("ncf", 1024)
    assert copy.deepcopy(model).table is model.table
    again = pickle.loads(pickle.dumps(model))
    assert again.table is model.table and again == model


def test_loader_option_builds_measured_speeds_and_rejects_bad_values() -> None:
    fitted = load_workload("pollux-1", num_jobs=6)
    measured = load_workload("pollux-1", num_jobs=6, throughput="measured")
    for a, b in zip(fitted.jobs, measured.jobs, strict=True):
        assert isinstance(b.speed, MeasuredThroughput)
        assert (a.total_iterations, a.batch_size, a.model) == (
            b.total_iterations, b.batch_size, b.model,
        )  # fmt: skip
        assert b.speed.fitted == a.speed
    adaptive = load_workload("pollux-1", num_jobs=3, adaptive_batch=True, throughput="measured")
    assert all(job.speed.truth is get_table(job.model) for job in adaptive.jobs)
    with pytest.raises(ConfigError, match="throughput 'meassured'.*measured"):
        load_workload("pollux-1", throughput="meassured")


def packed(num_gpus: int) -> tuple[tuple[int, int], ...]:
    return tuple((i, min(4, num_gpus - 4 * i)) for i in range(math.ceil(num_gpus / 4)))


class StartOnFirstRound:
    """Puts every queued job on nodes 0, 1, ... (4 GPUs each) with its requested GPUs."""

    name = "start-packed"

    def reset(self, seed: int | None = None) -> None:
        return None

    def decide(self, view: ClusterView) -> Decision:
        return Decision(tuple(Allocate(j.job_id, packed(j.num_gpus)) for j in view.queue))


def test_start_cost_delays_the_first_allocation_exactly() -> None:
    wl = load_workload("pollux-1", num_jobs=1)
    base = {"time_slice_s": 60.0, "link_contention": False}
    plain = run_episode(wl, StartOnFirstRound(), "pollux-testbed", base, 0)
    costly = run_episode(wl, StartOnFirstRound(), "pollux-testbed", {**base, "start_cost_s": 30}, 0)
    delta = costly.metrics["avg_jct_s"] - plain.metrics["avg_jct_s"]
    assert math.isclose(delta, 30.0, rel_tol=1e-9)
    with pytest.raises(ConfigError, match="start_cost_s must be >= 0"):
        run_episode(wl, StartOnFirstRound(), "pollux-testbed", {"start_cost_s": -1}, 0)


def test_artifact_semantics_per_policy_and_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """``artifact_workload`` builds each policy's jobs as the artifact does; the CLI runs it."""
    rigid = artifact_workload("pollux-1", "tiresias-artifact", num_jobs=4)
    oracle = artifact_workload("pollux-1", "optimus-oracle", num_jobs=4)
    pollux = artifact_workload("pollux-1", "pollux", num_jobs=4)
    assert all(j.min_gpus == j.max_gpus == j.num_gpus for j in rigid.jobs)
    assert all(isinstance(j.speed, MeasuredThroughput) for j in (*rigid.jobs, *oracle.jobs))
    assert all(j.max_gpus == 64 and j.min_gpus == 1 for j in oracle.jobs)
    assert all(isinstance(j.speed, GoodputSpeed) and j.speed.truth for j in pollux.jobs)
    assert ARTIFACT_SIM_CONFIG["start_cost_s"] == 30.0
    args = ["simulate", "--workload", "pollux-1", "--num-jobs", "6", "--json"]
    assert main([*args, "--policies", "tiresias-artifact,pollux", "--pollux-artifact"]) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)}
    want = run_episode(
        artifact_workload("pollux-1", "pollux", num_jobs=6),
        "pollux", "pollux-testbed", ARTIFACT_SIM_CONFIG, 0,
    ).metrics  # fmt: skip
    assert rows["pollux"]["avg_jct_s"] == want["avg_jct_s"]
    # Plain semantics (fitted speeds, no start cost, event-driven): another run.
    assert main([*args, "--policies", "tiresias-artifact"]) == 0
    plain = json.loads(capsys.readouterr().out)[0]["avg_jct_s"]
    assert plain != rows["tiresias-artifact"]["avg_jct_s"]
