"""``family=NAME, split=...`` kwargs of every env: a family resolves to env kwargs + a source.

:func:`family_kwargs` turns a family split into the kwargs the env already takes (its
cluster, jobs per episode, the split's job sources, the Metis slice), and
:class:`FamilySource` is the :class:`~cluster_envs.envs.episodes.WorkloadSource` that
draws each episode: the member family (``mixed``), the split's seed stream, the
window, and the offered load (retargeted on the env's cluster). User kwargs given next
to ``family`` override the family's (``num_jobs=20`` for quick runs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.config import ClusterConfig
from cluster_envs.envs.episodes import WorkloadSource
from cluster_envs.errors import ConfigError
from cluster_envs.workload import Workload
from cluster_envs.workload import families as fam

#: Env config class name -> the env's short name in the family registry.
ENV_OF_CONFIG = {"MoldableConfig": "moldable", "MetisConfig": "metis",
                 "PlacementConfig": "placement"}  # fmt: skip
#: Seed tag of ``mixed``'s member draw.
MEMBER_TAG = 0x3A1


def _source_kwargs(family: fam.Family, split: str) -> dict[str, Any]:
    kw: dict[str, Any] = {"num_jobs": family.num_jobs, **family.source}
    files = family.files(split)
    kw["workload"] = files[0] if len(files) == 1 else tuple(files)
    return kw


def family_kwargs(env: str, name: str, split: str) -> dict[str, Any]:
    """Env kwargs of family ``name``'s ``split`` for env ``env`` (moldable/metis/placement)."""
    family = fam.get_family(name, env)
    fam.check_split(split)
    kw: dict[str, Any] = {"cluster": family.cluster, "num_jobs": family.num_jobs}
    if not family.members:
        kw.update(_source_kwargs(family, split))
    if env == "metis":
        kw["time_slice_s"] = family.time_slice_s
    if env == "placement":
        kw["kind"] = "rigid"
    return kw


@dataclass(frozen=True)
class FamilySource(WorkloadSource):
    """A workload source that draws episodes of a family split (see the module docstring).

    Attributes:
        family: Family name.
        split: ``train``, ``validation`` or ``test``.
        env: The env's short name (which members ``mixed`` draws from).
        user_num_jobs: ``num_jobs`` given by the user next to ``family`` (wins).
    """

    family: str = ""
    split: str = "train"
    env: str = "moldable"
    user_num_jobs: int | None = None

    @classmethod
    def wrap(
        cls, source: WorkloadSource, name: str, split: str, env: str, user_kw: dict[str, Any]
    ) -> FamilySource:
        """``source`` (built from :func:`family_kwargs`) drawing ``name``'s ``split``."""
        fields = {f.name: getattr(source, f.name) for f in dataclasses.fields(WorkloadSource)}
        return cls(
            **fields, family=name, split=split, env=env, user_num_jobs=user_kw.get("num_jobs")
        )

    def _member_source(self, member: fam.Family) -> WorkloadSource:
        kw = _source_kwargs(member, self.split)
        if self.user_num_jobs is not None:
            kw["num_jobs"] = self.user_num_jobs
        keep: dict[str, Any] = {"kind": self.kind, "max_gpus_cap": self.max_gpus_cap}
        if "batch_sizes" not in member.source:
            kw["batch_sizes"] = self.batch_sizes
        if "workload" in kw and not isinstance(kw["workload"], str):
            kw["workload"] = tuple(kw["workload"])
        return WorkloadSource(**kw, **keep)

    def sample(self, seed: int, cluster: ClusterConfig) -> Workload:
        """The workload of the episode with seed ``seed`` of this family split."""
        family = fam.get_family(self.family, self.env)
        pool = fam.members(family, self.env)
        if not pool:
            raise ConfigError(f"family {self.family!r} has no member for the {self.env} env")
        stream = fam.split_seed(seed, self.split)
        pick = np.random.default_rng([stream, MEMBER_TAG]).integers(len(pool))
        member = pool[int(pick)]
        if member is family:
            source = WorkloadSource(
                **{f.name: getattr(self, f.name) for f in dataclasses.fields(WorkloadSource)}
            )
        else:
            source = self._member_source(member)
        load = fam.draw_load(member, stream)
        if source.workload == "synthetic":
            source = dataclasses.replace(source, load=load or source.load)
            load = None  # generated at the target load on this cluster
        workload = source.sample(stream, cluster)
        workload = fam.retarget(workload, load, cluster)
        return workload.with_jobs(workload.jobs, name=f"{member.name}/{self.split}:{workload.name}")
