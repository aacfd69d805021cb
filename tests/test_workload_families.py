"""Workload families: disjoint splits, clear errors, seeded episodes, loads on target."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import cluster_envs  # noqa: F401 - registers the envs
from cluster_envs.errors import ConfigError
from cluster_envs.workload.families import FAMILIES, SPLITS, family_names, offered_load
from cluster_envs.workload.formats import parse_swf

ENV_IDS = {
    "moldable": "cluster_envs/MoldableScheduling-v0",
    "metis": "cluster_envs/MetisAllocation-v0",
    "placement": "cluster_envs/JobPlacement-v0",
}
TRACE_FAMILIES = [n for n, f in FAMILIES.items() if not f.members and "synthetic" not in n]


def _keys(path: str) -> set[str]:
    """Identity of every job of a window file (its trace row / job id)."""
    if path.endswith(".swf"):
        return {r.name for r in parse_swf(path)}
    df = pd.read_csv(path, dtype=str)
    if "job_id" in df:
        return set(df["job_id"])
    return set(df.astype(str).agg("|".join, axis=1))


@pytest.mark.parametrize("name", TRACE_FAMILIES)
def test_splits_never_share_a_file_or_a_job(name: str) -> None:
    family = FAMILIES[name]
    files = {split: family.files(split) for split in SPLITS}
    for a in SPLITS:
        assert files[a], f"{name}/{a} has no source"
        for b in SPLITS:
            if a < b:
                assert not set(files[a]) & set(files[b])
                if name != "pollux":
                    jobs_a = set().union(*(_keys(f) for f in files[a]))
                    jobs_b = set().union(*(_keys(f) for f in files[b]))
                    assert not jobs_a & jobs_b, f"{name}: {a} and {b} share jobs"


def test_philly_time_trains_on_earlier_months_than_it_tests() -> None:
    family = FAMILIES["philly-time"]
    last_train = max(pd.read_csv(f)["timestamp"].max() for f in family.files("train"))
    first_val = min(pd.read_csv(f)["timestamp"].min() for f in family.files("validation"))
    first_test = min(pd.read_csv(f)["timestamp"].min() for f in family.files("test"))
    assert last_train < first_val < first_test


def test_philly_vc_splits_use_disjoint_virtual_clusters() -> None:
    family = FAMILIES["philly-vc"]
    vcs = {s: set().union(*(set(pd.read_csv(f, dtype=str)["cluster"]) for f in family.files(s)))
           for s in SPLITS}  # fmt: skip
    assert not vcs["train"] & vcs["test"] and not vcs["train"] & vcs["validation"]


def test_synthetic_split_seed_streams_are_disjoint() -> None:
    env_kw = {"family": "synthetic-16", "num_jobs": 10}
    names = {}
    for split in SPLITS:
        env = gym.make(ENV_IDS["moldable"], split=split, **env_kw)
        names[split] = set()
        for seed in range(6):
            env.reset(seed=seed)
            names[split].add(env.unwrapped.workload.name.split(":")[1])
    assert not names["train"] & names["test"] and not names["train"] & names["validation"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"family": "phily-time"}, "did you mean 'philly-time'"),
        ({"family": "pollux", "split": "tset"}, "did you mean 'test'"),
        ({"split": "test"}, "needs family"),
        ({"family": "pollux", "preset": "toy"}, "not both"),
    ],
)
def test_bad_family_or_split_fails_clearly(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        gym.make(ENV_IDS["moldable"], **kwargs)


def test_swf_families_are_moldable_only() -> None:
    with pytest.raises(ConfigError, match="does not apply to the metis env"):
        gym.make(ENV_IDS["metis"], family="kth-sp2")
    assert "kth-sp2" in family_names("moldable") and "kth-sp2" not in family_names("placement")


@pytest.mark.parametrize("env", list(ENV_IDS))
def test_same_seed_same_episode_for_every_family(env: str) -> None:
    for name in family_names(env):
        a = gym.make(ENV_IDS[env], family=name, split="test", num_jobs=20)
        b = gym.make(ENV_IDS[env], family=name, split="test", num_jobs=20)
        obs_a, _ = a.reset(seed=7)
        obs_b, _ = b.reset(seed=7)
        np.testing.assert_array_equal(obs_a, obs_b)
        wa, wb = a.unwrapped.workload, b.unwrapped.workload
        assert [j.submit_time_s for j in wa] == [j.submit_time_s for j in wb], name
        a.reset(seed=8)
        assert a.unwrapped.workload.name != wa.name or [
            j.submit_time_s for j in a.unwrapped.workload
        ] != [j.submit_time_s for j in wa], f"{name}: seeds 7 and 8 gave the same episode"


def test_trace_windows_are_retargeted_to_the_drawn_load() -> None:
    env = gym.make(ENV_IDS["placement"], family="alibaba", split="test")
    loads = []
    for seed in range(5):
        env.reset(seed=seed)
        loads.append(offered_load(env.unwrapped.workload, env.unwrapped.cluster))
    assert all(0.5 - 1e-6 <= x <= 2.5 + 1e-6 for x in loads)
    assert max(loads) - min(loads) > 0.3  # drawn per episode, not fixed


def test_mixed_draws_several_member_families_on_one_cluster() -> None:
    env = gym.make(ENV_IDS["metis"], family="mixed", split="train", num_jobs=10)
    members = set()
    for seed in range(12):
        env.reset(seed=seed)
        members.add(env.unwrapped.workload.name.split("/")[0])
        assert env.unwrapped.cluster.num_gpus == FAMILIES["mixed"].cluster.num_gpus
    assert len(members) >= 3 and "kth-sp2" not in members


def test_metis_slice_follows_the_family() -> None:
    assert gym.make(ENV_IDS["metis"], family="pollux").unwrapped.config.time_slice_s == 60.0
    slices = {FAMILIES[n].time_slice_s for n in family_names("metis")}
    assert min(slices) == 60.0 and max(slices) == 600.0
