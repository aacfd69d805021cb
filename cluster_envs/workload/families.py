"""Workload families: one registry of how episodes are drawn, with fixed disjoint splits.

A *family* names a cluster, a job source and an offered load (a range, drawn per
episode), with ``train`` / ``validation`` / ``test`` splits that never share a job:
the trace families' splits are different window files cut from disjoint trace periods,
virtual clusters or job ranges (``scripts/make_family_samples.py`` cut them, see
``cluster_envs/data/DATA_LICENSES.md``); the Pollux family's splits are different
workload files; the synthetic families' splits are disjoint seed streams (the only
families split by seed, since the generator has no files).

Decisions:

* **One cluster per family**, the same for every split, so an agent trained on a
  family's train split can run on its test split (observation and action sizes depend on
  the cluster). Families differ in cluster (16 to 256 GPUs, 4 and 8 GPUs per node, T4 to
  mixed types): training across clusters means one env per family in a vector env.
* **Offered load is retargeted per episode**: a trace window's arrival times are scaled
  so that its offered load on the env's cluster (submitted GPU-seconds per second over
  the cluster's GPUs, the synthetic generator's definition) equals a load drawn
  uniformly from the split's range; ``load=None`` keeps the trace's own times (Pollux).
* ``mixed`` draws, per episode, one member family (every family whose envs include the
  env's, except the SWF ones outside the moldable env) and one of its episodes on the
  ``mixed`` cluster, with the member's own load range.

Pure numpy: the env side is :mod:`cluster_envs.envs.family_source`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from cluster_envs.config import ClusterConfig, NodeGroup, suggest
from cluster_envs.errors import ConfigError
from cluster_envs.workload.jobs import reference_runtime_s
from cluster_envs.workload.workload import Workload

SPLITS: tuple[str, ...] = ("train", "validation", "test")
ENVS: tuple[str, ...] = ("moldable", "metis", "placement")
#: The Philly-derived job mix of the envs' default presets (moldable, Metis).
SYNTHETIC_MIX: dict = {
    "batch_sizes": "sampled",
    "max_gpu_time_s": 8 * 3600.0,
    "gpu_demand": {"1": 0.5, "2": 0.15, "4": 0.2, "8": 0.15},
}
#: The offered-load range drawn per episode by most families.
LOAD_RANGE = (0.5, 2.5)


@dataclass(frozen=True)
class Family:
    """One workload family (see the module docstring).

    Attributes:
        name: Registry name.
        description: One line: cluster, source and what separates the splits.
        cluster: The cluster of every split.
        splits: Split name -> job sources: window file names under
            ``cluster_envs/data/families/<name>/``, workload presets (``pollux-7``), or
            ``("synthetic",)``.
        load_range: ``(low, high)`` offered load drawn uniformly per episode, or
            ``None`` for the trace's own arrival times.
        num_jobs: Jobs per episode (``None``: the whole source file).
        envs: Envs the family applies to.
        time_slice_s: MetisAllocation's re-allocation interval on this family (s).
        source: Extra workload-source settings (the synthetic job mix).
        members: For ``mixed``: the member families.
    """

    name: str
    description: str
    cluster: ClusterConfig
    splits: dict[str, tuple[str, ...]] = field(hash=False)
    load_range: tuple[float, float] | None = LOAD_RANGE
    num_jobs: int | None = 60
    envs: tuple[str, ...] = ENVS
    time_slice_s: float = 600.0
    source: dict = field(default_factory=dict, hash=False)
    members: tuple[str, ...] = ()

    def files(self, split: str) -> tuple[str, ...]:
        """The job sources of ``split`` as the workload source takes them (paths/presets)."""
        check_split(split)
        return tuple(
            data_file(self.name, item) if item.endswith((".csv", ".swf")) else item
            for item in self.splits[split]
        )


def data_file(family: str, name: str) -> str:
    """Path of a shipped window file of ``family``."""
    return str(resources.files("cluster_envs").joinpath("data", "families", family, name))


def _windows(split: str, count: int, ext: str = "csv") -> tuple[str, ...]:
    return tuple(f"{split}-{i}.{ext}" for i in range(1, count + 1))


def _trace_splits(train: int, validation: int, test: int, ext: str = "csv") -> dict:
    return {
        "train": _windows("train", train, ext),
        "validation": _windows("validation", validation, ext),
        "test": _windows("test", test, ext),
    }


_SYNTHETIC: dict[str, tuple[str, ...]] = {split: ("synthetic",) for split in SPLITS}
_T4_16 = ClusterConfig("fam-16xT4", (NodeGroup(4, 4, "T4"),))
_T4_64 = ClusterConfig("fam-64xT4", (NodeGroup(16, 4, "T4"),))
_V100_128 = ClusterConfig("fam-128xV100", (NodeGroup(16, 8, "V100"),), inter_node_gbps=100.0)
_V100_256 = ClusterConfig("fam-256xV100", (NodeGroup(32, 8, "V100"),), inter_node_gbps=100.0)
_ALIBABA = ClusterConfig(
    "fam-alibaba-128",
    (NodeGroup(8, 8, "T4"), NodeGroup(4, 8, "P100"), NodeGroup(4, 8, "V100")),
    inter_node_gbps=100.0,
)
_T4_128x8 = ClusterConfig("fam-128xT4", (NodeGroup(16, 8, "T4"),))
_T4_256x8 = ClusterConfig("fam-256xT4", (NodeGroup(32, 8, "T4"),))

_LIST: tuple[Family, ...] = (
    Family(
        "synthetic-16",
        "synthetic Philly-like mix on 4 x 4 T4; splits = disjoint seed streams",
        _T4_16, _SYNTHETIC, num_jobs=30, source=SYNTHETIC_MIX,
    ),
    Family(
        "synthetic-64",
        "synthetic Philly-like mix on 16 x 4 T4; splits = disjoint seed streams",
        _T4_64, _SYNTHETIC, source=SYNTHETIC_MIX, time_slice_s=300.0,
    ),
    Family(
        "synthetic-256",
        "synthetic Philly-like mix on 32 x 8 V100; splits = disjoint seed streams",
        _V100_256, _SYNTHETIC, num_jobs=120, source=SYNTHETIC_MIX,
    ),
    Family(
        "philly-time",
        "Philly VC 6214e9 on 16 x 4 T4; train Sep-Oct 2017, validation Nov, test Dec",
        _T4_64, _trace_splits(3, 1, 2), time_slice_s=120.0,
    ),
    Family(
        "philly-vc",
        "Philly Oct-Nov 2017 on 16 x 8 V100; train/validation/test on disjoint virtual clusters",
        _V100_128, _trace_splits(4, 1, 3), time_slice_s=300.0,
    ),
    Family(
        "pollux",
        "Pollux's 160-job workloads on their 16 x 4 T4 testbed; train 1-5, validation 6, "
        "test 7-8; their own arrival times",
        _T4_64,
        {
            "train": tuple(f"pollux-{i}" for i in range(1, 6)),
            "validation": ("pollux-6",),
            "test": ("pollux-7", "pollux-8"),
        },
        load_range=None, num_jobs=None, time_slice_s=60.0,
    ),
    Family(
        "alibaba",
        "Alibaba GPU v2023 tasks on 8x8 T4 + 4x8 P100 + 4x8 V100; split by creation time "
        "(first 60% / next 20% / last 20%)",
        _ALIBABA, _trace_splits(3, 1, 2),
    ),
    Family(
        "kth-sp2",
        "KTH SP2 SWF log (rigid HPC jobs, Downey speedups) on 16 x 8; jobs split 60/20/20 in time",
        _T4_128x8, _trace_splits(3, 1, 2, "swf"), envs=("moldable",),
    ),
    Family(
        "lublin-256",
        "Lublin-Feitelson model SWF (256 procs) on 32 x 8; jobs split 60/20/20 in order",
        _T4_256x8, _trace_splits(3, 1, 2, "swf"), envs=("moldable",),
    ),
)  # fmt: skip

FAMILIES: dict[str, Family] = {f.name: f for f in _LIST}
FAMILIES["mixed"] = Family(
    "mixed",
    "per episode one member family's episode (its split, its load range) on 16 x 4 T4",
    _T4_64,
    {split: () for split in SPLITS},
    time_slice_s=300.0,
    members=tuple(f.name for f in _LIST),
)


def check_split(split: str) -> str:
    """``split`` if it is a split name, else a ConfigError with the closest one."""
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}{suggest(str(split), SPLITS)}; splits: "
                          + ", ".join(SPLITS))  # fmt: skip
    return split


def get_family(name: str, env: str | None = None) -> Family:
    """The family ``name`` (for ``env`` if given), or a ConfigError with the closest names."""
    if name not in FAMILIES:
        raise ConfigError(
            f"unknown workload family {name!r}{suggest(str(name), FAMILIES)}; families: "
            + ", ".join(FAMILIES)
        )
    family = FAMILIES[name]
    if env is not None and env not in family.envs:
        raise ConfigError(
            f"family {name!r} does not apply to the {env} env (only {', '.join(family.envs)}); "
            f"families for {env}: {', '.join(family_names(env))}"
        )
    return family


def family_names(env: str | None = None) -> list[str]:
    """Names of the families that apply to ``env`` (all if ``None``)."""
    return [n for n, f in FAMILIES.items() if env is None or env in f.envs]


def members(family: Family, env: str) -> tuple[Family, ...]:
    """The families an episode of ``family`` is drawn from (itself unless ``mixed``)."""
    if not family.members:
        return (family,)
    return tuple(FAMILIES[m] for m in family.members if env in FAMILIES[m].envs)


def split_seed(seed: int, split: str) -> int:
    """An episode seed of ``split``'s own stream: the streams of two splits never meet."""
    return int(seed) * len(SPLITS) + SPLITS.index(check_split(split))


def draw_load(family: Family, seed: int) -> float | None:
    """The episode's offered load, uniform in the family's range (``None``: native)."""
    if family.load_range is None:
        return None
    low, high = family.load_range
    return float(np.random.default_rng([int(seed), 0x10AD]).uniform(low, high))


def job_gpu_s(workload: Workload) -> np.ndarray:
    """Each job's GPU-seconds at its request: its recorded duration, else the model's."""
    return np.array(
        [
            job.num_gpus
            * (
                job.recorded_duration_s
                if job.recorded_duration_s
                else reference_runtime_s(
                    job,
                    gpu_type=workload.reference_gpu_type,
                    gpus_per_node=workload.ref_gpus_per_node,
                )
            )
            for job in workload.jobs
        ]
    )


def offered_load(workload: Workload, cluster: ClusterConfig) -> float:
    """Submitted GPU-seconds per second of arrivals over the cluster's GPUs."""
    if workload.num_jobs < 2 or workload.span_s <= 0:
        return float("inf")
    gpu_s = job_gpu_s(workload)
    rate_per_s = (workload.num_jobs - 1) / workload.span_s
    return float(rate_per_s * gpu_s.mean() / cluster.num_gpus)


def retarget(workload: Workload, load: float | None, cluster: ClusterConfig) -> Workload:
    """``workload`` rebased to start at 0, its arrivals scaled to offered ``load``."""
    t0 = workload.jobs[0].submit_time_s
    factor = 1.0
    if load is not None and workload.num_jobs > 1 and workload.span_s > 0:
        factor = offered_load(workload, cluster) / load
    if t0 == 0 and factor == 1.0:
        return workload
    jobs = [
        dataclasses.replace(job, submit_time_s=(job.submit_time_s - t0) * factor)
        for job in workload.jobs
    ]
    return workload.with_jobs(jobs)
