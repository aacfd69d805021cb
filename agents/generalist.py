"""Train and evaluate a generalist agent for MoldableScheduling, JobPlacement or
MetisAllocation (issue 13).

``--env`` picks the env (:data:`ENV_SPECS`: ``moldable``, the default, ``placement`` or
``metis``), its observation (scale-free; JobPlacement's and MetisAllocation's with
heuristic hints, MetisAllocation's action its cluster-free ``action="hints"``), its
reference heuristic (the best single heuristic across families: ``threshold-eta``;
consolidated first-fit ``fifo``; ``slaq``), its metric (average JCT; Metis: quality AUC,
higher is better, so every ratio is taken as ``best / agent``: > 1 is worse), its
baselines and its default teacher.

``python -m agents.generalist train --out DIR [...]``: MaskablePPO with
:class:`agents.set_policy.SetPolicy` on scale-free observations of a family's *train*
split, optionally warm-started by behaviour cloning (+ DAgger) from a teacher
(``--teacher``: a heuristic, ``lookahead``, ``lookahead-arrivals``, ``lookahead-multi`` or
``lookahead-multi-arrivals`` (moldable) or ``switch`` (Metis); see :mod:`agents.teacher`),
optionally with input-dependent baselines (``--groups``: envs in groups sharing workload
seeds). Every ``--eval-freq`` steps the deterministic policy plays the *validation* split
and its geometric-mean JCT ratio to the env's reference heuristic there is logged to
``curve.json``; the best checkpoint by that ratio is ``best_model.zip`` (test splits are
never looked at). ``--val-families`` scores each checkpoint on several families'
validation splits (the worst family's ratio, then the geometric mean, decide).

``python -m agents.generalist evaluate --model M.zip [...]``: the model (adapted to each
family's shapes) next to every heuristic of the env on every family's *test* split,
seeds as the generalization suite's (``--quick``: 12 jobs per episode).

``python -m agents.generalist report F.json [...] --titles T [...] [--json S.json]``: each
evaluate file's table (:func:`summarize`) as a section of generalist_moldable.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import cluster_envs  # noqa: F401  (registers the envs)
from agents.grouped_rollouts import InputDependentBaseline, SharedSeedWrapper
from agents.imitation import (
    Demonstrations,
    PretrainSettings,
    cached_demonstrations,
    collect_demonstrations,
    pretrain,
    pretrain_interleaved,
    teacher_agreement,
    warm_start,
)
from agents.set_policy import FlatPolicy, SetPolicy, adapt
from cluster_envs.cli import positive_int
from cluster_envs.envs.metis_scale_free import SLICE_FIELD
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError
from cluster_envs.harness.suites import METIS_BASELINES, MOLDABLE_BASELINES, PLACEMENT_BASELINES

ENV_ID = "cluster_envs/MoldableScheduling-v0"
#: The best single moldable heuristic across families (generalization_heuristics.md).
BEST_SINGLE = "threshold-eta"
#: Validation seeds of the learning curve.
VAL_SEEDS = tuple(range(500, 508))
#: A workload name that stands for the env's preset, not a family (:func:`env_kwargs`).
PRESET_PREFIX = "preset:"


@dataclass(frozen=True)
class EnvSpec:
    """What the generalist needs to know about one env (``--env``).

    Attributes:
        env_id: Gymnasium id.
        short: The env's name in the family registry.
        observation: The env's ``observation`` setting the agent plays in.
        reference: The best single heuristic across families (the validation ratio's and
            the report's denominator).
        teacher: Default ``--teacher``.
        baselines: Heuristics ``evaluate`` plays next to the agent.
        metric: The episode metric compared (``higher_better``: quality).
        action: The env's ``action`` setting the agent plays with (None: the default).
        val_best_of: When set, the validation ratio's denominator is, per family, the best
            of these heuristics there (by mean over the validation seeds), not
            ``reference``.
        hint_policies: MetisAllocation's ``hint_policies`` (the heuristics its options
            follow); None: the env's default.
        val_of_means: The validation ratio of a family is the agent's mean over the
            validation seeds against the reference's mean (the targets' and ``summarize``'s
            ratio), not the geometric mean of per-seed ratios. MetisAllocation: an
            episode's quality AUC can be near zero (a burst that no allocation serves in
            time), and its per-seed ratio (0.05 against 0.10: 2x) then outweighs the
            family's other seeds in a geometric mean.
        observe_slice: MetisAllocation: the observation also holds the slice length
            (the env's ``observe_slice``; ``--observe-slice``).
    """

    env_id: str
    short: str
    observation: str
    reference: str
    teacher: str
    baselines: tuple[str, ...]
    metric: str = "avg_jct_s"
    higher_better: bool = False
    action: str | None = None
    val_best_of: tuple[str, ...] = ()
    hint_policies: tuple[str, ...] | None = None
    val_of_means: bool = False
    observe_slice: bool = False

    def ratio(self, value: Any, ref: Any) -> Any:
        """``value`` relative to ``ref``, > 1 when worse (quality: ``ref / value``)."""
        v, r = np.maximum(np.asarray(value, float), 1e-9), np.maximum(np.asarray(ref, float), 1e-9)
        return r / v if self.higher_better else v / r

    def best(self, means: dict[str, float]) -> str:
        """The name with the best mean."""
        return (max if self.higher_better else min)(means, key=lambda p: means[p])


#: ``--env`` choices. JobPlacement plays with heuristic hints (each FIFO placement rule's
#: next node: cluster_envs/envs/placement_hints.py), so consolidated first-fit, the best
#: single placement heuristic (generalization_heuristics.md), can be cloned exactly.
ENV_SPECS = {
    "moldable": EnvSpec(ENV_ID, "moldable", "scale_free", BEST_SINGLE, BEST_SINGLE,
                        MOLDABLE_BASELINES),
    "placement": EnvSpec("cluster_envs/JobPlacement-v0", "placement", "scale_free_hints",
                         "fifo", "fifo", PLACEMENT_BASELINES),
    # MetisAllocation picks, per slot, an option of cluster_envs/envs/metis_hints.py
    # (follow slaq/optimus/tiresias/fair, keep, pause): one action space at every cluster.
    "metis": EnvSpec("cluster_envs/MetisAllocation-v0", "metis", "scale_free_hints", "slaq",
                     "slaq", METIS_BASELINES, "quality_auc", True, "hints",
                     ("slaq", "optimus", "tiresias", "fair", "slaq-window"),
                     val_of_means=True),
}  # fmt: skip
MOLDABLE = ENV_SPECS["moldable"]


def env_kwargs(family: str, split: str, num_jobs: int | None = None,
               spec: EnvSpec = MOLDABLE) -> dict[str, Any]:  # fmt: skip
    """The env kwargs of ``family``'s ``split`` as the generalist plays it.

    ``family`` may also be ``preset:NAME``, the env's preset NAME (e.g. ``preset:default``,
    the main job's workload): a preset has no split streams, so its splits are told apart
    by their seeds alone (validation :data:`VAL_SEEDS`, demonstrations from
    ``DEMO_SEED_OFFSET``, cards' tests 100-119: disjoint).
    """
    extra: dict[str, Any] = {} if num_jobs is None else {"num_jobs": num_jobs}
    if spec.action is not None:
        extra["action"] = spec.action
    if spec.hint_policies is not None:
        extra["hint_policies"] = list(spec.hint_policies)
    if spec.observe_slice:
        extra["observe_slice"] = True
    if family.startswith(PRESET_PREFIX):
        where = {"preset": family[len(PRESET_PREFIX) :]}
    else:
        where = {"family": family, "split": split}
    return {**where, "observation": spec.observation, **extra}


def make_env(family: str, split: str, num_jobs: int | None = None,
             spec: EnvSpec = MOLDABLE) -> gym.Env:  # fmt: skip
    return gym.make(spec.env_id, **env_kwargs(family, split, num_jobs, spec))


def heuristic_env(family: str, split: str, num_jobs: int | None = None,
                  spec: EnvSpec = MOLDABLE) -> gym.Env:  # fmt: skip
    """The env the heuristics play: the env's own action (counts on MetisAllocation) and
    the plain scale-free observation (hints would only ask every heuristic again each step;
    the metrics are the same)."""
    plain = dataclasses.replace(spec, action=None, observation="scale_free", hint_policies=None,
                                observe_slice=False)  # fmt: skip
    return make_env(family, split, num_jobs, plain)


def spec_of(name: str) -> EnvSpec:
    """The :data:`ENV_SPECS` entry ``name`` (a short name or an env id)."""
    for key, spec in ENV_SPECS.items():
        if name in (key, spec.env_id):
            return spec
    raise SystemExit(f"unknown --env {name!r}; choose one of {', '.join(ENV_SPECS)}")


def with_observation_of(model: Any, spec: EnvSpec) -> EnvSpec:
    """``spec`` with the observation ``model`` was trained on: ``scale_free_hints`` when its
    observation has hint fields (``pick=``/``next=``), else ``scale_free``."""
    from cluster_envs.envs.layout import layout_of

    layout = layout_of(model.observation_space)
    fields = layout.slot_fields if layout is not None else ()
    hinted = any(f.startswith(("pick=", "next=", "option=")) for f in fields)
    spec = dataclasses.replace(spec, observation="scale_free_hints" if hinted else "scale_free",
                               observe_slice=layout is not None and SLICE_FIELD in layout.global_fields)  # fmt: skip
    followed = tuple(f[len("option=") :] for f in fields if f.startswith("option="))
    if followed and spec.action == "hints":  # MetisAllocation: the heuristics it learned
        from cluster_envs.envs.metis_hints import HINT_POLICIES

        policies = tuple(o for o in followed if o != "keep")
        spec = dataclasses.replace(
            spec, hint_policies=None if policies == HINT_POLICIES else policies
        )
    return spec


def env_kwargs_of(spec: EnvSpec) -> dict[str, Any]:
    """The env kwargs the agent plays with besides the family (observation, action)."""
    return {"observation": spec.observation,
            **({} if spec.action is None else {"action": spec.action}),
            **({} if spec.hint_policies is None
               else {"hint_policies": list(spec.hint_policies)}),
            **({"observe_slice": True} if spec.observe_slice else {})}  # fmt: skip


def families_of(names: str, spec: EnvSpec) -> list[str]:
    """A comma-separated family list; ``all`` (or the env's short name) in it: every family
    there; ``preset:NAME`` entries (:func:`env_kwargs`) are kept as given."""
    from cluster_envs.workload.families import family_names

    listed: list[str] = []
    for name in (f for f in names.split(",") if f):
        for f in family_names(spec.short) if name in ("all", spec.short) else [name]:
            if f not in listed:
                listed.append(f)
    return listed


class _ModelAgent:
    def __init__(self, model: Any) -> None:
        self.model, self.name = model, "agent"

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
        action, _ = self.model.predict(obs, deterministic=True, action_masks=mask)
        return action if isinstance(env.action_space, gym.spaces.MultiDiscrete) else int(action)


def play(env: gym.Env, agent: Any, seeds: Any, metric: str = "avg_jct_s") -> list[float]:
    return [rollout(env, agent, seed=s).metrics[metric] for s in seeds]


class IdleProbe:
    """Plays ``agent`` on MetisAllocation and counts the slices whose allocation (the
    agent's request after the env's projection) leaves GPUs idle while a job in the
    system holds none (issue 13's "idle GPUs while jobs wait")."""

    def __init__(self, agent: Any) -> None:
        self.agent, self.name = agent, getattr(agent, "name", "agent")
        self.steps = self.idle = 0

    def reset(self, seed: int | None) -> None:
        self.steps = self.idle = 0
        if hasattr(self.agent, "reset"):
            self.agent.reset(seed)

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        from cluster_envs.envs.metis_hints import decode_options
        from cluster_envs.policies.projection import AllocationState

        action = self.agent.act(env, obs, info)
        base: Any = env.unwrapped
        sim, slots = base.sim, base.slots
        counts = np.asarray(action).reshape(-1)
        if base.config.action == "hints":
            counts, _ = decode_options(counts, base.hints.table(sim, slots), slots)
        requests = {j: int(counts[k]) for k, j in enumerate(slots) if j is not None}
        got = self.allocation(AllocationState.from_sim(sim, base.num_slots), requests)
        idle = sim.inventory.num_gpus - sum(got.values())
        waiting = len(sim.queue) + len(sim.active) - sum(1 for v in got.values() if v > 0)
        self.steps += 1
        self.idle += int(idle > 0 and waiting > 0)
        return action

    @staticmethod
    def allocation(state: Any, requests: dict[int, int]) -> dict[int, int]:
        """GPUs per eligible job the env grants for ``requests`` (its projection)."""
        return state.project(requests)  # type: ignore[no-any-return]


def play_probed(env: gym.Env, agent: Any, seeds: Any,
                metric: str) -> tuple[list[float], list[float], list[float]]:  # fmt: skip
    """Per seed: ``metric``, ``gpu_utilization`` and the :class:`IdleProbe` share."""
    probe = IdleProbe(agent)
    vals, util, idle = [], [], []
    for s in seeds:
        m = rollout(env, probe, seed=s).metrics
        vals.append(m[metric])
        util.append(m["gpu_utilization"])
        idle.append(probe.idle / max(probe.steps, 1))
    return vals, util, idle


def heuristic(env: gym.Env, name: str) -> HeuristicAgent:
    return HeuristicAgent(env.unwrapped.policy(name))  # type: ignore[attr-defined]


class ValCurve(BaseCallback):
    """Validation-ratio learning curve and best checkpoint (see the module docstring).

    Per validation family, the geometric mean over :data:`VAL_SEEDS` of the model's
    metric relative to the reference heuristic's (:meth:`EnvSpec.ratio`: > 1 is worse;
    MetisAllocation: the best of ``val_best_of`` in that family, and the ratio of the
    means, ``val_of_means``); a checkpoint is better
    when its worst family's ratio is lower, or equal and its geometric mean over families
    is lower. Each point's ``wall_s`` is seconds since ``start`` (a ``time.time()`` value;
    default: when the curve was made), i.e. since training began.
    """

    def __init__(self, families: str | list[str], every: int, out: Path,
                 num_jobs: int | None, spec: EnvSpec = MOLDABLE,
                 refs_file: Path | None = None,
                 start: float | None = None) -> None:  # fmt: skip
        super().__init__()
        self.start = time.time() if start is None else start
        names = [families] if isinstance(families, str) else list(families)
        self.spec = spec
        self.envs = {f: make_env(f, "validation", num_jobs, spec) for f in names}
        self.refs, self.ref_names = {}, {}
        # The heuristics' validation runs depend only on these keys: reuse a saved copy.
        candidates = list(spec.val_best_of or (spec.reference,))
        key: dict[str, Any] = {"env": spec.env_id, "seeds": list(VAL_SEEDS), "num_jobs": num_jobs,
               "candidates": candidates}  # fmt: skip
        saved = json.loads(refs_file.read_text()) if refs_file and refs_file.is_file() else {}
        for f in names:
            entry = saved.get(f)
            if entry is None or entry["key"] != key:
                e = heuristic_env(f, "validation", num_jobs, spec)
                runs = {p: play(e, heuristic(e, p), VAL_SEEDS, spec.metric)
                        for p in candidates}  # fmt: skip
                best = spec.best({p: float(np.mean(v)) for p, v in runs.items()})
                entry = saved[f] = {"key": key, "name": best, "values": runs[best]}
            self.ref_names[f], self.refs[f] = entry["name"], np.array(entry["values"])
        if refs_file:
            refs_file.write_text(json.dumps(saved, indent=1))
        print("[val] references", self.ref_names, flush=True)
        self.every, self.out, self.next = every, out, 0
        self.curve: list[dict[str, Any]] = []
        self.best = np.inf
        self._best_key = (np.inf, np.inf)

    def evaluate(self, model: Any, steps: int) -> float:
        per = {}
        for f, env in self.envs.items():
            vals = np.array(play(env, _ModelAgent(adapt(model, env)), VAL_SEEDS, self.spec.metric))
            if self.spec.val_of_means:
                per[f] = float(self.spec.ratio(vals.mean(), self.refs[f].mean()))
            else:
                per[f] = float(np.exp(np.mean(np.log(self.spec.ratio(vals, self.refs[f])))))
        ratio = float(np.exp(np.mean(np.log(list(per.values())))))
        worst = max(per.values())
        self.curve.append({"timesteps": steps, "val_ratio_to_best_single": ratio,
                           "val_worst_family": worst, "val_families": per,
                           "wall_s": round(time.time() - self.start, 1)})  # fmt: skip
        (self.out / "curve.json").write_text(json.dumps(self.curve, indent=1))
        if (worst, ratio) < self._best_key:
            self._best_key, self.best = (worst, ratio), ratio
            model.save(self.out / "best_model.zip")
        print(f"[val] steps={steps} ratio={ratio:.4f} worst={worst:.4f} best={self.best:.4f}",
              flush=True)  # fmt: skip
        return ratio

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next:
            self.next += self.every
            self.evaluate(self.model, self.num_timesteps)
        return True


def critic_only(policy: torch.nn.Module) -> list[torch.nn.Parameter]:
    """Freeze every parameter of ``policy`` but the critic's (SetPolicy's
    ``mlp_extractor.critic``, an MlpExtractor's ``mlp_extractor.value_net``, and the value
    head ``value_net``); returns the frozen ones. PPO then moves only the value function:
    a cloned policy's critic is untrained (cloning with normalised rewards fits no values),
    and advantages from it would push the clone anywhere in its first updates."""
    critic = ("mlp_extractor.critic.", "mlp_extractor.value_net.", "value_net.")
    frozen = [p for n, p in policy.named_parameters()
              if not n.startswith(critic) and p.requires_grad]  # fmt: skip
    if len(frozen) == len(list(policy.parameters())):
        raise ConfigError(f"{type(policy).__name__} has no critic parameters to warm up")
    for param in frozen:
        param.requires_grad_(False)
    return frozen


_PENDING: list[Callable[[], Any]] = []  # the jobs run_all's forked workers inherit


def _run_pending(i: int) -> Any:
    torch.set_num_threads(1)
    return _PENDING[i]()


def run_all(jobs: list[Callable[[], Any]], workers: int = 1) -> list[Any]:
    """``[job() for job in jobs]``, in ``workers`` forked processes when > 1.

    The jobs are closures (over models, envs), so they are not pickled: the workers are
    forked after they are set and inherit them; only the results travel back. Results
    come back in the jobs' order, whatever the workers' speeds.
    """
    if workers <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    _PENDING[:] = jobs
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            return pool.map(_run_pending, range(len(jobs)), chunksize=1)
    finally:
        _PENDING.clear()


def warm_start_families(
    model: Any,
    families: list[str],
    settings: PretrainSettings,
    seed: int,
    num_jobs: int | None = None,
    spec: EnvSpec = MOLDABLE,
    interleaved: bool = False,
    workers: int = 1,
    cache: str | None = None,
    family_teachers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """BC (+ DAgger) from ``settings.teacher`` on each of ``families``' *train* splits into
    ``model``'s one set of weights, in place (``--demo-families``).

    ``family_teachers`` (``--family-teacher FAMILY=TEACHER``) names another teacher for
    some families, in both the teacher's episodes and the DAgger rounds' labels: e.g. the
    plain ``switch-window`` option where the lookahead's one-slice departures, free by its
    own score, compound into a loss over the episode (MetisAllocation's philly-vc).

    The clusters differ in shape, so each family keeps its own demonstrations and its own
    view of the model (:func:`adapt`: same weights, that family's spaces). By default
    (``--demo-fit passes``) every epoch fits one pass over each family's data in turn, the
    weights carried from view to view, a fresh optimizer per pass. With ``interleaved``
    (``--demo-fit interleaved``) the views share their parameter tensors and
    :func:`pretrain_interleaved` visits all families' minibatches in one shuffled order per
    epoch with one optimizer, so the last family of an epoch does not pull the weights its
    way. The value head is not fitted (``value_coef`` 0: the model's returns are
    normalised, the demonstrations' are not). DAgger rounds let each family's view play
    its episodes. ``workers`` > 1 collects the episodes in that many forked processes
    (``--demo-workers``; a lookahead teacher costs a minute per Metis episode), one job
    per episode; each episode is seeded on its own, so the demonstrations are the same.
    ``cache`` (``--demo-cache``) keeps the teacher's own episodes (round 0) in a folder
    (:func:`agents.imitation.cached_demonstrations`) for refits of other networks.
    """
    one_pass = dataclasses.replace(settings, epochs=1, value_coef=0.0)
    teachers = {f: settings.teacher for f in families}
    for f, name in (family_teachers or {}).items():
        if f not in teachers:
            raise ConfigError(f"--family-teacher {f}={name}: {f!r} is not among the "
                              f"demonstration families ({', '.join(families)})")  # fmt: skip
        teachers[f] = name
    envs = {f: make_env(f, "train", num_jobs, spec) for f in families}
    kwargs = {f: env_kwargs(f, "train", num_jobs, spec) for f in families}
    views = {f: adapt(model, envs[f], tie=interleaved) for f in families}
    gamma, n = float(model.gamma), settings.episodes

    def sync(src: Any, dst: Any) -> None:
        if src is not dst and not interleaved:
            dst.policy.load_state_dict(src.policy.state_dict())

    def fit(demos: dict[str, Demonstrations], salt: int) -> dict[str, Any]:
        if interleaved:
            whole = dataclasses.replace(settings, value_coef=0.0)
            return pretrain_interleaved(views, demos, whole, seed + salt * 1000)
        losses: dict[str, Any] = {}
        for epoch in range(settings.epochs):
            for f in families:
                sync(model, views[f])
                losses[f] = pretrain(views[f], demos[f], one_pass, seed + salt * 1000 + epoch)
                sync(views[f], model)
        for f in families:  # the weights kept are those after the last family's pass:
            sync(model, views[f])  # each family's agreement with them, not with its own pass
            losses[f]["agreement_after_own_pass"] = losses[f]["teacher_agreement"]
            losses[f]["teacher_agreement"] = teacher_agreement(views[f], demos[f])
        return losses

    env_id = spec.env_id

    # With workers, one job per episode (a family's episodes differ in length by 10x and
    # the families by more); episode k of a round is seeded seed + r * n + k either way.
    parts = [(f, k, 1) for f in families for k in range(n)] if workers > 1 else \
        [(f, 0, n) for f in families]  # fmt: skip

    def collect(r: int) -> dict[str, Demonstrations]:
        def job(f: str, k: int, m: int) -> Callable[[], Demonstrations]:
            if not r:  # the teacher plays: the same rows for every student
                return lambda: cached_demonstrations(
                    cache, env_id, kwargs[f], teachers[f], m, seed + k, gamma
                )
            student = views[f]  # DAgger rounds: the family's view plays
            return lambda: collect_demonstrations(
                env_id, kwargs[f], teachers[f], m, seed + r * n + k, gamma, student=student
            )

        out: dict[str, Demonstrations] = {}
        done = run_all([job(*part) for part in parts], workers)
        for (f, _, _), d in zip(parts, done, strict=True):
            out[f] = out[f] + d if f in out else d
        return out

    demos = collect(0)
    rounds = [{"round": 0, "player": settings.teacher, "losses": fit(demos, 0)}]
    for r in range(1, settings.dagger_rounds + 1):
        for f in families:
            sync(model, views[f])
        played = {}
        for f, more in collect(r).items():
            demos[f] = demos[f] + more
            played[f] = float(np.mean([m[spec.metric] for m in more.episode_metrics]))
        rounds.append({"round": r, "player": "agent", spec.metric: played,
                       "losses": fit(demos, r)})  # fmt: skip
    return {"teacher": settings.teacher, "families": families, "episodes_per_round": n,
            **({"family_teachers": {f: t for f, t in teachers.items() if t != settings.teacher}}
               if family_teachers else {}),
            "fit": "interleaved" if interleaved else "passes",
            "dagger_rounds": settings.dagger_rounds, "regret_coef": settings.regret_coef,
            "max_rows_per_epoch": settings.max_rows_per_epoch,
            "steps": {f: len(d) for f, d in demos.items()}, "rounds": rounds}  # fmt: skip


def family_teacher_map(items: list[str]) -> dict[str, str]:
    """``--family-teacher`` values (``FAMILY=TEACHER``) as {family: teacher}."""
    out: dict[str, str] = {}
    for item in items:
        family, sep, teacher = item.partition("=")
        if not sep or not family or not teacher:
            raise ConfigError(f"--family-teacher {item!r}: expected FAMILY=TEACHER")
        if family in out:
            raise ConfigError(f"--family-teacher names {family!r} twice")
        out[family] = teacher
    return out


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    n_envs = args.groups * args.group_size
    spec = spec_of(args.env)
    if args.no_hints:  # the ablation: JobPlacement's scale-free fields without the hints
        spec = dataclasses.replace(spec, observation="scale_free")
    if args.hints:  # MoldableScheduling with its heuristic hints (moldable_hints.py)
        spec = dataclasses.replace(spec, observation="scale_free_hints")
    if args.hint_policies:  # MetisAllocation: the heuristics the options follow
        spec = dataclasses.replace(spec, hint_policies=tuple(args.hint_policies.split(",")))
    if args.observe_slice:  # MetisAllocation: the slice length among the cluster fields
        spec = dataclasses.replace(spec, observe_slice=True)
    if args.val_best_of:  # the heuristics the checkpoint rule takes the best of
        spec = dataclasses.replace(spec, val_best_of=tuple(args.val_best_of.split(",")))
    teacher = spec.teacher if args.teacher is None else args.teacher
    warm_only = [flag for flag, given in (("--family-teacher", args.family_teacher),
                                          ("--demo-rows-per-epoch", args.demo_rows_per_epoch))
                 if given is not None and given != []]  # fmt: skip
    if warm_only and (args.init_model or not teacher or args.pretrain_episodes <= 0):
        # these flags act only in a warm start; never let one pass silently unused
        raise ConfigError(f"{' and '.join(warm_only)}: acts only in a warm start from "
                          "demonstrations, not with --init-model, --pretrain-episodes 0 "
                          "or --teacher ''")  # fmt: skip
    # --family may list several families: PPO's env groups cycle through them (group g
    # plays train_families[g % len]), so one rollout mixes clusters and workloads.
    train_families = families_of(args.family, spec)
    if args.groups < len(train_families):
        raise ConfigError(f"--groups {args.groups} < {len(train_families)} --family entries: "
                          "every family needs a group of its own")  # fmt: skip

    def thunk(i: int) -> Any:
        def make() -> gym.Env:
            group = i // args.group_size
            env = make_env(train_families[group % len(train_families)], "train",
                           args.num_jobs, spec)  # fmt: skip
            return SharedSeedWrapper(env, args.seed * 1_000_000, group if args.groups_share else i)

        return make

    # Rewards (minus job-seconds / 1 h) differ by orders of magnitude across families:
    # normalise returns only; observations are scale-free already (no statistics to ship).
    venv = VecNormalize(DummyVecEnv([thunk(i) for i in range(n_envs)]), norm_obs=False,
                        gamma=args.gamma)  # fmt: skip
    policy_kwargs: dict[str, Any] = {"hidden": args.hidden}
    # --flat: the same inputs through one MLP (FlatPolicy; plain MlpPolicy could not serve
    # the families whose node size changes the observation's length).
    policy: Any = FlatPolicy if args.flat else SetPolicy
    model = MaskablePPO(policy, venv, n_steps=args.n_steps, batch_size=args.batch_size,
                        learning_rate=args.lr, ent_coef=args.ent_coef, gamma=args.gamma,
                        gae_lambda=0.95, n_epochs=args.n_epochs, target_kl=0.02,
                        policy_kwargs=policy_kwargs, seed=args.seed, device="cpu")  # fmt: skip
    val_families = families_of(args.val_families, spec) if args.val_families else train_families
    refs_file = Path(args.val_refs) if args.val_refs else None
    curve = ValCurve(val_families, args.eval_freq, out, args.num_jobs, spec, refs_file, start)
    record: dict[str, Any] = {"args": vars(args), "env_id": spec.env_id,
                              "env_kwargs": env_kwargs_of(spec)}  # fmt: skip
    if args.init_model:  # the weights of an earlier run (e.g. its BC/DAgger policy)
        init = MaskablePPO.load(args.init_model, device="cpu")
        model.policy.load_state_dict(init.policy.state_dict())
        earlier = Path(args.init_model).parent / "train.json"
        before = json.loads(earlier.read_text()).get("warm_start", {}) if earlier.is_file() else {}
        record["warm_start"] = {**before, "init_model": args.init_model}
    # --pretrain-episodes 0 (or --teacher ''): no warm start, PPO from random weights.
    elif teacher and args.pretrain_episodes > 0:
        settings = PretrainSettings(teacher=teacher, episodes=args.pretrain_episodes,
                                    epochs=args.pretrain_epochs,
                                    dagger_rounds=args.dagger_rounds,
                                    regret_coef=args.regret_coef,
                                    max_rows_per_epoch=args.demo_rows_per_epoch)  # fmt: skip
        kwargs = env_kwargs(train_families[0], "train", args.num_jobs, spec)
        demo_families = args.demo_families or (args.family if len(train_families) > 1 else "")
        if args.family_teacher and not demo_families:
            raise ConfigError("--family-teacher needs --demo-families (or several --family)")
        if demo_families:
            families = families_of(demo_families, spec)
            record["warm_start"] = warm_start_families(
                model, families, settings, args.seed, args.num_jobs, spec,
                interleaved=args.demo_fit == "interleaved", workers=args.demo_workers,
                cache=args.demo_cache or None,
                family_teachers=family_teacher_map(args.family_teacher))  # fmt: skip
        else:
            record["warm_start"] = warm_start(model, spec.env_id, kwargs, settings, args.seed)
        model.save(out / "pretrained_model.zip")
        print("[warm start]", record["warm_start"]["rounds"], flush=True)
    callbacks: list[BaseCallback] = [curve]
    baseline = None
    if args.groups_share and args.group_size > 1:
        baseline = InputDependentBaseline(args.group_size)
        callbacks.append(baseline)
    if args.critic_warmup > 0:  # fit the critic to this policy's returns before PPO moves it
        frozen = critic_only(model.policy)
        model.learn(args.critic_warmup, callback=CallbackList(callbacks[1:]))
        for param in frozen:
            param.requires_grad_(True)
        value_loss = model.logger.name_to_value.get("train/value_loss")
        record["critic_warmup"] = {"timesteps": model.num_timesteps,
                                   "value_loss": None if value_loss is None else float(value_loss)}  # fmt: skip
        print("[critic warm-up]", record["critic_warmup"], flush=True)
    model.learn(args.timesteps, callback=CallbackList(callbacks),
                reset_num_timesteps=args.critic_warmup <= 0)  # fmt: skip
    curve.evaluate(model, model.num_timesteps)
    model.save(out / "final_model.zip")
    record.update(train_wall_s=round(time.time() - start, 1), timesteps=model.num_timesteps,
                  best_val_ratio=curve.best, curve=curve.curve)  # fmt: skip
    if baseline is not None and baseline.replaced_share:  # empty: no PPO step
        record["input_baseline_share"] = float(np.mean(baseline.replaced_share))
    (out / "train.json").write_text(json.dumps(record, indent=1, default=str))


def evaluate(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    spec = spec_of(args.env)
    model = None
    if args.model != "none":  # "none": the heuristics only (for --heuristics-from)
        model = MaskablePPO.load(args.model, device="cpu")
        spec = with_observation_of(model, spec)  # the observation the model was trained on
    seeds = range(args.seeds[0], args.seeds[1] + 1)
    if args.baselines:
        spec = dataclasses.replace(spec, baselines=tuple(args.baselines.split(",")))
    split = args.split
    families = families_of(args.families, spec)
    earlier: dict[str, Any] = {}
    if args.heuristics_from:  # the heuristics' runs of an earlier evaluate file
        earlier = json.loads(Path(args.heuristics_from).read_text())
        same = {"env": spec.env_id, "split": split, "quick": args.quick, "seeds": list(seeds)}
        if any(earlier.get(k) != v for k, v in same.items()):
            raise SystemExit(f"{args.heuristics_from}: not the same env, split, seeds, quick")
    probed = spec.action == "hints"  # MetisAllocation: also utilisation and idle slices

    def one(fam: str) -> tuple[dict[str, Any], float]:
        """``fam``'s runs: {policy: (metric per seed[, utilisation, idle share])}."""
        start = time.process_time()
        num_jobs = 12 if args.quick else None
        played: dict[str, Any] = {}
        for p in spec.baselines:
            if p in earlier.get("rows", {}).get(fam, {}):
                played[p] = tuple(earlier[k][fam][p] for k in
                                  ("rows", "gpu_utilization", "idle_wait_share") if k in earlier)  # fmt: skip
                continue
            plain = heuristic_env(fam, split, num_jobs, spec)
            agent = heuristic(plain, p)
            played[p] = (play_probed(plain, agent, seeds, spec.metric) if probed
                         else (play(plain, agent, seeds, spec.metric),))  # fmt: skip
        if model is not None:
            env = make_env(fam, split, num_jobs, spec)
            model_agent = _ModelAgent(adapt(model, env))
            played["agent"] = (play_probed(env, model_agent, seeds, spec.metric) if probed
                               else (play(env, model_agent, seeds, spec.metric),))  # fmt: skip
        res = {p: v[0] for p, v in played.items()}
        best = spec.best({p: float(np.mean(res[p])) for p in spec.baselines})
        print(fam, "best", best, {p: round(float(spec.ratio(np.mean(v), np.mean(res[best]))), 3)
                                  for p, v in res.items()}, flush=True)  # fmt: skip
        return played, time.process_time() - start

    # --workers: families side by side in forked processes (the same runs, in family order)
    done = run_all([functools.partial(one, f) for f in families], args.workers)
    runs = dict(zip(families, (d[0] for d in done), strict=True))
    rows = {f: {p: v[0] for p, v in r.items()} for f, r in runs.items()}
    util = {f: {p: v[1] for p, v in r.items()} for f, r in runs.items()} if probed else {}
    idle = {f: {p: v[2] for p, v in r.items()} for f, r in runs.items()} if probed else {}
    cpu_s = sum(d[1] for d in done)
    Path(args.out).write_text(json.dumps({"model": args.model, "env": spec.env_id,
                                          "split": split, "quick": args.quick,
                                          "seeds": list(seeds), "rows": rows,
                                          **({"gpu_utilization": util,
                                              "idle_wait_share": idle} if util else {}),
                                          "heuristics_from": args.heuristics_from or None,
                                          "cpu_s": round(cpu_s, 1)},
                                         indent=1))  # fmt: skip


def summarize(path: str, single: str | None = None, draws: int = 2000) -> dict[str, Any]:
    """Per-family ratios of an ``evaluate`` file: agent / best heuristic of the family (by
    mean) and agent / ``single`` (default: the file's env's reference heuristic), with a
    paired bootstrap interval over seeds of the per-family geometric-mean ratio to
    ``single``."""
    data = json.loads(Path(path).read_text())
    spec = spec_of(data.get("env", ENV_ID))
    single = single or spec.reference
    rng = np.random.default_rng(0)
    fams: dict[str, Any] = {}
    for fam, res in data["rows"].items():
        heur = {p: np.asarray(v) for p, v in res.items() if p != "agent"}
        agent = np.asarray(res["agent"])
        best = spec.best({p: float(heur[p].mean()) for p in heur})
        paired = np.log(spec.ratio(agent, heur[single]))
        boot = [np.exp(paired[rng.integers(0, len(paired), len(paired))].mean())
                for _ in range(draws)]  # fmt: skip
        fams[fam] = {
            "best_heuristic": best,
            "agent_to_best": float(spec.ratio(agent.mean(), heur[best].mean())),
            "single_to_best": float(spec.ratio(heur[single].mean(), heur[best].mean())),
            "agent_to_single": float(spec.ratio(agent.mean(), heur[single].mean())),
            "paired_geo_to_single": float(np.exp(paired.mean())),
            "paired_ci95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
        }

    def geo(key: str) -> float:
        return float(np.exp(np.mean([np.log(f[key]) for f in fams.values()])))

    return {"families": fams, "single": single, "geomean_agent_to_best": geo("agent_to_best"),
            "geomean_single_to_best": geo("single_to_best"),
            "geomean_agent_to_single": geo("agent_to_single"),
            "worst_agent_to_best": max(f["agent_to_best"] for f in fams.values())}  # fmt: skip


def markdown(summary: dict[str, Any], title: str, single: str | None = None) -> str:
    """A :func:`summarize` result as a ``## title`` section (generalist_moldable.md)."""
    single = single or summary.get("single", BEST_SINGLE)
    lines = [
        f"## {title}",
        "",
        f"| family | best heuristic | agent / best | {single} / best | "
        f"agent / {single} (paired geo) [95% bootstrap] |",
        "|---|---|---|---|---|",
    ]
    for fam, f in summary["families"].items():
        lo, hi = f["paired_ci95"]
        lines.append(
            f"| {fam}/test | {f['best_heuristic']} | {f['agent_to_best']:.3f} | "
            f"{f['single_to_best']:.3f} | {f['paired_geo_to_single']:.3f} [{lo:.3f}, {hi:.3f}] |"
        )
    lines += [
        "",
        f"Geomean agent / best-per-family **{summary['geomean_agent_to_best']:.3f}** "
        f"({single}: {summary['geomean_single_to_best']:.3f}); worst family "
        f"{summary['worst_agent_to_best']:.3f}; geomean agent / {single} "
        f"{summary['geomean_agent_to_single']:.3f}.",
    ]
    return "\n".join(lines) + "\n"


def report(args: argparse.Namespace) -> None:
    """Print each ``evaluate`` file's section; with ``--json``, add its summary there."""
    if len(args.titles) != len(args.files):
        raise SystemExit("report: one --titles entry per file")
    store = Path(args.json) if args.json else None
    data = json.loads(store.read_text()) if store and store.exists() else {}
    for path, title in zip(args.files, args.titles, strict=True):
        summary = summarize(path)
        data[title] = summary
        print(markdown(summary, title))
    if store:
        store.write_text(json.dumps(data, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m agents.generalist")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--env", default="moldable", help="moldable, placement or metis (ENV_SPECS)")
    t.add_argument(
        "--family",
        default="mixed",
        help="the train split PPO plays; comma-separated: the env groups cycle through them",
    )
    t.add_argument(
        "--val-families",
        default="",
        help="comma-separated families whose validation splits choose the checkpoint "
        "('all': every family of the env); default: --family",
    )
    t.add_argument("--num-jobs", type=int, default=None)
    t.add_argument("--timesteps", type=int, default=20_000)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--groups", type=int, default=2)
    t.add_argument("--group-size", type=int, default=2)
    t.add_argument("--no-shared-seeds", dest="groups_share", action="store_false")
    t.add_argument("--flat", action="store_true", help="flat MLP (FlatPolicy) instead of SetPolicy")
    t.add_argument(
        "--no-hints",
        action="store_true",
        help="ablation (placement): observation 'scale_free', without the heuristic hints",
    )
    t.add_argument(
        "--hints",
        action="store_true",
        help="observation 'scale_free_hints' (moldable: each candidate heuristic's action now)",
    )
    t.add_argument(
        "--hint-policies",
        default="",
        help="metis: comma-separated heuristics the hints options follow "
        "(the env's hint_policies; default: the env's)",
    )
    t.add_argument("--hidden", type=int, default=64)
    t.add_argument("--n-steps", type=int, default=256)
    t.add_argument("--batch-size", type=int, default=256)
    t.add_argument("--n-epochs", type=int, default=4)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--ent-coef", type=float, default=0.005)
    t.add_argument("--gamma", type=float, default=0.999)
    t.add_argument("--teacher", default=None, help="default: the env's (ENV_SPECS)")
    t.add_argument(
        "--family-teacher",
        action="append",
        default=[],
        metavar="FAMILY=TEACHER",
        help="another teacher for one of --demo-families (its episodes and DAgger labels); "
        "repeatable",
    )
    t.add_argument(
        "--pretrain-episodes",
        type=int,
        default=30,
        help="demonstration episodes of BC (and of each DAgger round); 0: no warm start",
    )
    t.add_argument("--pretrain-epochs", type=int, default=20)
    t.add_argument(
        "--demo-families",
        default="",
        help="comma-separated families whose train splits the warm start imitates "
        "(each its own cluster; 'all' or the env's name: every family); default: --family",
    )
    t.add_argument(
        "--demo-fit",
        default="passes",
        choices=("passes", "interleaved"),
        help="how --demo-families' data is fitted: one pass per family in turn each epoch "
        "(passes, the shipped recipes') or all families' minibatches shuffled together with "
        "one optimizer (interleaved)",
    )
    t.add_argument(
        "--demo-workers",
        type=positive_int,
        default=1,
        help="processes that collect --demo-families' episodes side by side (same "
        "demonstrations as 1; a lookahead teacher's episodes cost minutes)",
    )
    t.add_argument(
        "--demo-cache",
        default="",
        help="folder keeping --demo-families' teacher episodes (round 0) for later runs "
        "with the same teacher, families and seed (other networks, epochs or fits); "
        "use a new folder after changing the simulator or the teacher",
    )
    t.add_argument("--dagger-rounds", type=int, default=1)
    t.add_argument(
        "--demo-rows-per-epoch",
        type=int,
        default=None,
        metavar="N",
        help="warm start: at most N rows of each demonstration family per epoch (a fresh "
        "seeded draw each epoch), so a family with long episodes does not outweigh the "
        "others by its row count; default: every row",
    )
    t.add_argument(
        "--regret-coef",
        type=float,
        default=0.0,
        help="cost-sensitive cloning: weight of the expected regret the lookahead teacher "
        "scores for each option (MetisAllocation); 0: plain cloning",
    )
    t.add_argument(
        "--init-model",
        default="",
        help="start from this model's weights instead of a warm start (e.g. an earlier "
        "run's best_model.zip after BC/DAgger with --timesteps 0)",
    )
    t.add_argument(
        "--critic-warmup",
        type=int,
        default=0,
        help="PPO timesteps that train only the critic (the actor frozen) before --timesteps "
        "of full PPO: a cloned policy's value head is untrained",
    )
    t.add_argument(
        "--observe-slice",
        action="store_true",
        help="metis: the observation also holds the slice length (slices_per_window)",
    )
    t.add_argument(
        "--val-best-of",
        default="",
        help="comma-separated heuristics whose best per validation family the checkpoint "
        "rule compares with (default: the env's; metis: slaq, optimus, tiresias, fair, "
        "slaq-window)",
    )
    t.add_argument("--eval-freq", type=int, default=2048)
    t.add_argument(
        "--val-refs",
        default="",
        help="JSON file caching the heuristics' validation runs (read if it "
        "matches, written after)",
    )
    e = sub.add_parser("evaluate")
    e.add_argument("--model", required=True, help="model zip; 'none': heuristics only")
    e.add_argument("--out", required=True)
    e.add_argument("--env", default="moldable", help="moldable, placement or metis (ENV_SPECS)")
    e.add_argument("--families", default="all", help="comma-separated; default: every family")
    e.add_argument("--split", default="test", choices=("train", "validation", "test"))
    e.add_argument("--seeds", type=int, nargs=2, default=(100, 109))
    e.add_argument("--quick", action="store_true")
    e.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="processes that evaluate families side by side (the same runs; default 1)",
    )
    e.add_argument(
        "--heuristics-from",
        default="",
        help="an earlier evaluate file (same env, split, seeds) whose heuristic "
        "runs to reuse instead of playing them again",
    )
    e.add_argument(
        "--baselines",
        default="",
        help="comma-separated heuristics to play (default: the env's baselines)",
    )
    r = sub.add_parser("report", help="markdown tables of evaluate files")
    r.add_argument("files", nargs="+", help="evaluate --out files")
    r.add_argument("--titles", nargs="+", required=True, help="section title per file")
    r.add_argument("--json", help="summary JSON to add the sections to (by title)")
    args = ap.parse_args(argv)
    {"train": train, "evaluate": evaluate, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
