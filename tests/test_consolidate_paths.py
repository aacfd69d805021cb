"""The small-cluster (pure Python) and numpy paths of ``consolidate`` agree exactly."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.policies.placement import (
    SMALL_CLUSTER,
    _consolidate_array,
    _consolidate_list,
    consolidate,
)


@pytest.mark.parametrize("strategy", ["first-fit", "best-fit"])
@pytest.mark.parametrize("prefer_fast", [True, False])
@pytest.mark.parametrize("split", ["fewest-nodes", "fastest-type"])
def test_list_and_array_paths_agree(strategy: str, prefer_fast: bool, split: str) -> None:
    rng = np.random.default_rng(7)
    differing = 0
    for _ in range(300):
        num_nodes = int(rng.integers(1, 24))
        free = rng.integers(0, 9, num_nodes).astype(np.int64)
        speed = rng.choice([1.0, 1.6, 2.5], num_nodes)
        num_gpus = int(rng.integers(1, 20))
        args = (num_gpus, strategy, prefer_fast, split)
        fast = _consolidate_list(free.tolist(), speed.tolist(), *args)
        slow = _consolidate_array(free, speed, *args)
        assert fast == slow, (free, speed, args)
        if fast is not None and len(fast) > 1:
            differing += 1
    assert differing > 10  # the multi-node splits were exercised


def test_large_cluster_takes_the_array_path_with_the_same_answer() -> None:
    free = np.zeros(SMALL_CLUSTER + 1, dtype=np.int64)
    free[[3, 40, 64]] = [2, 3, 3]
    speed = np.ones(SMALL_CLUSTER + 1)
    assert consolidate(free, speed, 5) == ((40, 3), (64, 2))
    assert consolidate(free[:SMALL_CLUSTER], speed[:SMALL_CLUSTER], 5) == ((3, 2), (40, 3))
    assert consolidate(free, speed, 9) is None
