"""Placement instances: presets, JSON round trip, validation errors, cost and encoding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.placement.cost import PlacementCost, check_configuration
from baselines.placement.encoding import PlacementEncoding, enumerate_configurations
from baselines.placement.instance_json import instance_from_dict, load_instance
from baselines.placement.presets import make_instance
from cluster_envs.errors import ConfigError

TOY = {
    "name": "toy",
    "cluster": {
        "name": "two-types",
        "node_groups": [
            {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "T4"},
            {"num_nodes": 1, "gpus_per_node": 4, "gpu_type": "A100"},
        ],
    },
    "batch": [
        {
            "model": "cifar10",
            "num_gpus": 2,
            "batch_size": 256,
            "total_iterations": 20000,
            "estimated_iterations": 20000,
        },
        {
            "model": "cifar10",
            "num_gpus": 2,
            "batch_size": 256,
            "total_iterations": 10000,
            "estimated_iterations": 10000,
        },
    ],
}


def test_presets_are_seeded_and_fit() -> None:
    a, b = make_instance("small", 3), make_instance("small", 3)
    assert a.to_dict() == b.to_dict()
    assert make_instance("small", 4).to_dict() != a.to_dict()
    for preset in ("small", "medium", "large"):
        inst = make_instance(preset, 0)
        assert sum(inst.num_gpus) <= inst.free_gpus.sum()
        assert (inst.free_gpus >= 0).all()
    assert make_instance("large", 0).cluster.num_nodes >= 100


def test_json_round_trip(tmp_path) -> None:
    inst = make_instance("medium", 1)
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(inst.to_dict()))
    again = load_instance(path)
    assert again.to_dict() == inst.to_dict()
    enc = PlacementEncoding(inst.num_gpus, inst.free_gpus, inst.node_speed)
    config = enc.decode([d.low for d in enc.dims])
    assert PlacementCost(again)(config) == PlacementCost(inst)(config)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"batch": [{"model": "bret", "num_gpus": 1}]}, "did you mean 'bert'"),
        ({"batch": [{"model": "bert", "num_gpu": 1}]}, "did you mean 'num_gpus'"),
        ({"clusterr": "toy"}, "did you mean 'cluster'"),
        ({"cluster": "hetero-smal"}, "did you mean 'hetero-small'"),
        ({"batch": [{"model": "bert", "num_gpus": 0}]}, "num_gpus: must be finite and > 0"),
        ({"batch": [{"model": "bert", "num_gpus": 9}]}, "needs 9 GPUs, only 8 are free"),
        (
            {"existing": [{"model": "bert", "placement": [[5, 1]], "remaining_iterations": 9}]},
            "uses node 5",
        ),
        ({"observed_fraction": 1.5}, "observed_fraction must be in (0, 1]"),
    ],
)
def test_bad_instance_errors_name_the_problem(tmp_path, patch, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**TOY, **patch}))
    with pytest.raises(ConfigError) as err:
        load_instance(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_not_json_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "cluster": "toy",\n  "batch": [,]\n}')
    with pytest.raises(ConfigError, match=r"broken.json:3: not valid JSON"):
        load_instance(path)


def test_cost_sees_gpu_types_and_interference() -> None:
    inst = instance_from_dict(TOY)
    quiet = instance_from_dict({**TOY, "node_interference": 0.0})
    apart = (((1, 2),), ((0, 2),))  # long job on the A100 node, short one on the T4 node
    swapped = (((0, 2),), ((1, 2),))
    shared = (((1, 2),), ((1, 2),))
    assert PlacementCost(inst)(apart) < PlacementCost(inst)(swapped)
    assert PlacementCost(inst)(shared) > PlacementCost(quiet)(shared)
    assert PlacementCost(inst)(apart) == PlacementCost(quiet)(apart)
    truth = PlacementCost(
        instance_from_dict(
            {**TOY, "batch": [{**TOY["batch"][0], "estimated_iterations": 5000}, TOY["batch"][1]]}
        )
    )
    assert truth(apart) < PlacementCost(inst)(apart)  # estimates, not true lengths
    with pytest.raises(ConfigError, match="needs 2 GPUs"):
        check_configuration(inst, (((1, 4),), ((0, 2),)))
    busy = instance_from_dict(
        {**TOY, "existing": [{"model": "ncf", "placement": [[1, 1]], "remaining_iterations": 100}]}
    )
    with pytest.raises(ConfigError, match="over capacity on nodes \\[1\\]"):
        check_configuration(busy, shared)


def test_encoding_always_decodes_feasibly() -> None:
    inst = make_instance("medium", 2)
    enc = PlacementEncoding(inst.num_gpus, inst.free_gpus, inst.node_speed, inst.node_load)
    rng = np.random.default_rng(0)
    for _ in range(200):
        config = enc.decode(enc.sample(rng))
        check_configuration(inst, config)


def test_exhaustive_enumeration_counts_by_hand() -> None:
    # Two nodes with 2 free GPUs each, jobs of 2 and 1 GPUs: job A takes (2,0), (1,1) or
    # (0,2); job B then has 1, 2 and 1 choices = 4 configurations.
    configs = list(enumerate_configurations((2, 1), np.array([2, 2]), limit=100))
    assert len(configs) == 4
    with pytest.raises(ConfigError, match="too large for exhaustive"):
        list(enumerate_configurations((2, 1), np.array([2, 2]), limit=3))
