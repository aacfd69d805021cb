"""A teacher stronger than any single heuristic: per-decision lookahead on believed forks.

At every decision :class:`LookaheadTeacher` asks each candidate heuristic what it would do,
plays that heuristic forward on a fork of the simulator in which **only what a scheduler
knows now is true** (:func:`cluster_envs.sim.fork.fork_believed`: every queued or running
job lasts exactly as long as its current estimate says, estimates are frozen, and the
arrivals still to come are dropped), and takes the first action of the candidate whose
fork ends with the lowest total completion time of the jobs in the system now. It never
reads a true job length: the forks' lengths are the estimates the policies see.

On MetisAllocation the candidates are the heuristics its ``action="hints"`` options
follow, the fork is scored by believed model quality (``objective="quality"``) and the
teacher answers with the chosen candidate's option on every slot.

It is an *agent* (``act(env, obs, info)``), so it plays through any env with
``action_for`` and ``sim`` (MoldableScheduling, JobPlacement, MetisAllocation), and
:func:`agents.imitation.collect_demonstrations` takes it as a DAgger teacher
(``--pretrain lookahead``; :data:`TEACHERS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from cluster_envs.errors import ConfigError, InfeasibleDecisionError
from cluster_envs.sim.fork import fork_believed, play_ahead, settle
from cluster_envs.sim.sampled import add_sampled_arrivals

#: Candidates of the moldable lookahead: the heuristics that win some family
#: (benchmarks/results/generalization_heuristics.md) plus the greedy extremes.
MOLDABLE_CANDIDATES = (
    "threshold-eta", "sjf", "tetris", "easy-backfill", "best-threshold", "max-parallelism",
)  # fmt: skip
#: Values of LookaheadTeacher's ``objective`` option.
OBJECTIVES = ("jct", "quality")
#: Samples of the believed quality over the horizon (``objective="quality"``).
QUALITY_SAMPLES = 12
#: Values of LookaheadTeacher's ``arrivals`` option.
ARRIVALS = ("none", "sampled")
#: Candidates on JobPlacement.
PLACEMENT_CANDIDATES = ("fifo", "fifo-best-fit", "fifo-spread")
#: Candidates on MetisAllocation: the heuristics its ``action="hints"`` options follow.
METIS_CANDIDATES = ("slaq", "optimus", "tiresias", "fair")


class LookaheadTeacher:
    """Best-of-candidates lookahead on believed forks (see the module docstring).

    Args:
        candidates: Registered heuristic names tried at every decision.
        horizon_s: How far each fork is played (s); ``None``: until the jobs known now
            (and the sampled ones) have all finished (a believed fork's arrivals are
            finite, so this ends).
        arrivals: ``"none"``: the forks drop the future; ``"sampled"``: each fork gets
            ``num_samples`` future jobs resampled from those submitted so far
            (:func:`cluster_envs.sim.sampled.add_sampled_arrivals`; the same draw for
            every candidate at one decision, seeded by the episode seed and the decision
            index), and the cost adds the sampled jobs' believed completion times.
        num_samples: Sampled future jobs per fork (with ``arrivals="sampled"``).
        objective: ``"jct"``: the lowest total believed completion time (above);
            ``"quality"`` (MetisAllocation): the highest believed quality area of the
            known jobs over the next ``horizon_s`` (default: the quality window), each
            job's quality at its *believed* fraction done (iterations done over its
            frozen estimate) on its model's curve, counted inside its own window only
            (as the ``quality_auc`` metric), sampled every :data:`QUALITY_SAMPLES`-th of
            the horizon.
        continuations: ``None``: each candidate's first decision is scored by playing
            *that candidate* on (a policy-selection lookahead). Otherwise a rollout with
            several base heuristics: the candidates' distinct first decisions are each
            scored by the best (lowest-cost) fork among these heuristics playing on after
            it, so a decision is judged by its best known continuation, not by the
            heuristic that proposed it (``lookahead-multi``; JCT objective only).
        commit: Decisions a choice is kept for: the chosen candidate is followed for
            the next ``commit - 1`` decisions without a lookahead (``1``: re-chosen at
            every decision).
        margin: Hysteresis: a challenger replaces the candidate chosen last only when
            its cost is lower by more than ``margin`` times the incumbent's (``0``: the
            lowest cost wins, ties to the earlier candidate).
        prefer: MetisAllocation ``action="hints"`` only: an option name. On every slot
            where that option asks the same GPU count as the chosen candidate's, the
            label is the preferred option instead (:func:`prefer_option`). The env gets
            the same counts, so the teacher's own play is unchanged; what changes is what
            a clone is shown: the chosen candidate's name only where it differs from a
            default the student can follow everywhere (on pollux's 60 s slices most picks
            tie, and the first candidate's name on them taught a clone that candidate).
    """

    def __init__(
        self,
        candidates: Sequence[str],
        horizon_s: float | None = None,
        arrivals: str = "none",
        num_samples: int = 16,
        objective: str = "jct",
        continuations: Sequence[str] | None = None,
        commit: int = 1,
        margin: float = 0.0,
        prefer: str | None = None,
    ) -> None:
        if isinstance(commit, bool) or not isinstance(commit, int) or commit < 1:
            raise ConfigError(f"LookaheadTeacher commit must be an int >= 1, got {commit!r}")
        if not 0.0 <= margin < 1.0:
            raise ConfigError(f"LookaheadTeacher margin must be in [0, 1), got {margin!r}")
        self.commit, self.margin = commit, float(margin)
        if objective not in OBJECTIVES:
            raise ConfigError(f"LookaheadTeacher objective must be one of {OBJECTIVES}")
        self.objective = objective
        if not candidates:
            raise ConfigError("LookaheadTeacher needs at least one candidate heuristic")
        if horizon_s is not None and not horizon_s > 0:
            raise ConfigError(f"LookaheadTeacher horizon_s must be > 0, got {horizon_s}")
        if arrivals not in ARRIVALS:
            raise ConfigError(
                f"LookaheadTeacher arrivals must be one of {ARRIVALS}, got {arrivals!r}"
            )
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise ConfigError(
                f"LookaheadTeacher num_samples must be an int >= 1, got {num_samples!r}"
            )
        if continuations is not None and (not continuations or objective != "jct"):
            raise ConfigError(
                "LookaheadTeacher continuations need at least one heuristic and objective='jct'"
            )
        self.candidates = tuple(candidates)
        self.continuations = None if continuations is None else tuple(continuations)
        self.horizon_s = horizon_s
        self.num_samples = num_samples if arrivals == "sampled" else 0
        self.arrivals = arrivals
        suffix = f";arrivals={num_samples}" if self.num_samples else ""
        if self.continuations is not None:
            suffix += ";then=" + ",".join(self.continuations)
        if commit > 1:
            suffix += f";commit={commit}"
        if margin:
            suffix += f";margin={margin:g}"
        self.prefer = prefer
        if prefer:
            suffix += f";prefer={prefer}"
        self.name = "lookahead(" + ",".join(self.candidates) + suffix + ")"
        self._decision = 0
        self._incumbent: int | None = None  # rank of the candidate chosen last
        self._hold = 0  # decisions left before the next lookahead
        self._policies: list[tuple[str, Any]] = []
        self._continue: list[Any] = []
        self._env: Any = None
        self._seed: int | None = 0
        self.choices: dict[str, int] = {}
        #: Return the chosen candidate's option (MetisAllocation ``action="hints"``).
        self.options = False
        #: After :meth:`act`: each action entry's relative regret (:meth:`_option_regrets`),
        #: or ``None`` where no lookahead ran (a held or pending decision, no options).
        self.regrets: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        """Forget the configured candidates (a new episode reconfigures them)."""
        self._seed, self._env, self._policies = seed, None, []
        self._decision, self._incumbent, self._hold = 0, None, 0

    def _configure(self, base: Any) -> None:
        if base is not self._env:
            self._env = base
            self._policies = [(name, self._fresh(base, name)) for name in self.candidates]
            self._continue = [self._fresh(base, name) for name in self.continuations or ()]

    def _fresh(self, base: Any, name: str) -> Any:
        """The env's heuristic ``name``, reset for this episode."""
        policy = base.policy(name)
        policy.reset(self._seed)
        return policy

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        base: Any = env.unwrapped
        self.regrets = None
        pending = getattr(base, "pending_action", None)
        if pending is not None:
            action = pending()
            if action is not None:
                return action
        self._configure(base)
        sim = base.sim
        if self._hold > 0 and self._incumbent is not None:
            self._hold -= 1  # committed: follow the candidate chosen last, no lookahead
            return self._answer(env, obs, info, self._incumbent, None)
        known = np.array([*sim.queue, *sim.active], dtype=np.int64)
        self._decision += 1
        best: tuple[float, int, Any] | None = None
        costs: dict[int, tuple[float, Any]] = {}
        seen: set[str] = set()
        for rank, (_name, policy) in enumerate(self._policies):
            decision = policy.decide(sim.view())
            try:
                action = base.action_for(decision)
            except InfeasibleDecisionError:
                continue  # this candidate's choice is one the env cannot express
            if self._continue:
                key = repr(action)
                if key in seen:
                    continue  # an earlier candidate proposed the same action: same cost
                seen.add(key)
                cost = min(self._cost(sim, c, decision, known) for c in self._continue)
            elif self.objective == "quality":
                cost = self._quality_cost(base, policy, decision, known)
            else:
                cost = self._cost(sim, policy, decision, known)
            costs[rank] = (cost, decision)
            if best is None or (cost, rank) < (best[0], best[1]):
                best = (cost, rank, decision)
        if best is None:
            raise ConfigError(f"{self.name}: no candidate's decision fits the env")
        held_rank = -1 if self._incumbent is None else self._incumbent
        held = costs.get(held_rank)
        if held is not None and self.margin and held[0] - best[0] <= self.margin * abs(held[0]):
            best = (held[0], held_rank, held[1])  # not better by the margin: keep it
        self._incumbent, self._hold = best[1], self.commit - 1
        if self.options:
            self.regrets = self._option_regrets(base, {r: c for r, (c, _) in costs.items()})
        return self._answer(env, obs, info, best[1], best[2])

    def _option_regrets(self, base: Any, costs: dict[int, float]) -> np.ndarray:
        """Flat ``(J * len(options),)``, the action mask's layout: for slot ``k`` and option
        ``o``, the relative regret ``(cost_c - cost_best) / |cost_best|`` of the cheapest
        scored candidate ``c`` that asks slot ``k`` for the GPU count option ``o`` asks
        there (names do not matter, counts reach the env), else the worst candidate's.

        A cost-sensitive clone (``PretrainSettings.regret_coef``) pays for a departure what
        the lookahead says it loses, not one unit per differing label."""
        options = base.hints.options
        table = base.hints.table(base.sim, base.slots)  # (options, J) counts, -1: unavailable
        best = min(costs.values())
        rel = {r: (c - best) / max(abs(best), 1e-12) for r, c in costs.items()}
        out = np.full(table.shape, max(rel.values()))
        for rank, regret in rel.items():
            counts = table[options.index(self.candidates[rank])]
            same = (table == counts) & (table >= 0)
            out[same] = np.minimum(out[same], regret)
        return out.T.reshape(-1)

    def _answer(
        self, env: gym.Env, obs: np.ndarray, info: dict[str, Any], rank: int, decision: Any
    ) -> Any:
        """The env action of candidate ``rank``: its option (``options``), else its
        ``decision`` (``None``: asked now)."""
        base: Any = env.unwrapped
        chosen = self.candidates[rank]
        self.choices[chosen] = self.choices.get(chosen, 0) + 1
        if self.options:
            action = FollowOption(chosen, base.hints.options).act(env, obs, info)
            return action if self.prefer is None else prefer_option(base, action, self.prefer)
        if decision is None:
            decision = self._policies[rank][1].decide(base.sim.view())
        # action_for may store a multi-step plan (JobPlacement: the job's remaining nodes,
        # replayed by pending_action): ask it last for the CHOSEN decision, or the env
        # would follow the plan of whichever candidate was tried last.
        return base.action_for(decision)

    def _cost(self, sim: Any, policy: Any, decision: Any, known: np.ndarray) -> float:
        """Total believed completion time (s after now) of the ``known`` jobs."""
        now = sim.now_s
        draw = (0 if self._seed is None else int(self._seed), self._decision)
        fork, fork_policy = fork_believed(sim, policy)
        sampled = add_sampled_arrivals(fork, self.num_samples, draw)
        fork.apply(decision)
        if fork.queue:
            settle(fork, fork_policy)
        until = math.inf if self.horizon_s is None else now + self.horizon_s
        play_ahead(fork, fork_policy, until)
        ids = np.concatenate([known, sampled])
        submit = [fork.jobs[int(j)].submit_time_s for j in sampled]
        start = np.concatenate([np.full(len(known), now), np.asarray(submit, dtype=float)])
        finish = fork.finish_s[ids]
        if np.isnan(finish).any():
            if self.horizon_s is None:
                return math.inf  # the candidate left jobs waiting forever
            left = np.isnan(finish)
            finish = np.where(left, until + self._left_s(fork, ids[left]).sum(), finish)
        return float(np.sum(finish - start))

    def _quality_cost(self, base: Any, policy: Any, decision: Any, known: np.ndarray) -> float:
        """Minus the believed quality area (job-seconds) of the ``known`` jobs ahead."""
        from cluster_envs.sim.quality import curve_integral

        sim = base.sim
        window = float(base.quality_settings.window_s)
        now = sim.now_s
        until = now + (window if self.horizon_s is None else self.horizon_s)
        fork, fork_policy = fork_believed(sim, policy)
        fork.apply(decision)
        if fork.queue:
            settle(fork, fork_policy)
        ids = known.tolist()
        curves = [curve_integral(fork.jobs[j].model) for j in ids]
        ends = [fork.jobs[j].submit_time_s + window for j in ids]
        step = (until - now) / QUALITY_SAMPLES
        area, t = 0.0, now
        for _ in range(QUALITY_SAMPLES):
            t_next = t + step
            play_ahead(fork, fork_policy, t_next)
            for j, curve, end in zip(ids, curves, ends, strict=True):
                if end > t:
                    frac = min(fork.iterations_done(j) / fork.jobs[j].total_iterations, 1.0)
                    area += curve.quality(frac) * (min(t_next, end) - t)
            t = t_next
        return -area

    @staticmethod
    def _left_s(fork: Any, ids: np.ndarray) -> np.ndarray:
        """Believed remaining seconds of unfinished ``ids`` at their current rate (or
        ``inf`` when they are not running)."""
        left = fork.estimator.remaining_many(ids)
        rate = fork.rate[ids]
        return np.divide(left, rate, out=np.full_like(left, np.inf), where=rate > 0)


class FollowOption:
    """Plays MetisAllocation's ``action="hints"`` option ``name`` on every slot where it
    is available (else pause): the heuristic ``name`` exactly (tests/test_metis_hints.py)."""

    def __init__(self, name: str, options: tuple[str, ...] | None = None) -> None:
        from cluster_envs.envs.metis_hints import OPTIONS

        options = OPTIONS if options is None else tuple(options)
        if name not in options:
            raise ConfigError(
                f"{name!r} is no option of MetisAllocation's action='hints' ({options}); "
                f"a teacher there is one of {options[:-2]}, switch or lookahead"
            )
        self.name, self.index, self.num = name, options.index(name), len(options)
        self.pause = len(options) - 1

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the env asks the heuristics."""

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        mask = np.asarray(env.unwrapped.action_masks()).reshape(-1, self.num)  # type: ignore[attr-defined]
        return np.where(mask[:, self.index], self.index, self.pause)


def prefer_option(base: Any, action: np.ndarray, prefer: str) -> np.ndarray:
    """``action`` (per-slot options of MetisAllocation's ``action="hints"`` env ``base``)
    with option ``prefer`` on every slot where it is allowed and asks the same GPU count
    as the option taken there: the same counts reach the env."""
    options = base.hints.options
    if prefer not in options:
        raise ConfigError(f"prefer={prefer!r} is no option of the env ({options})")
    k = options.index(prefer)
    table = base.hints.table(base.sim, base.slots)
    mask = np.asarray(base.action_masks()).reshape(-1, len(options))
    slots = np.arange(len(action))
    same = mask[:, k] & mask[slots, action] & (table[k] == table[action, slots])
    return np.where(same, k, action)


class StarvationSwitch:
    """Plays MetisAllocation's ``action="hints"`` option ``base`` (SLAQ by default) on every
    slot, except in slices where ``base`` would leave a job of the slots without GPUs:
    there it plays option ``other`` (Tiresias by default) on every slot.

    Why (validation splits, benchmarks/results/generalist_metis.md): SLAQ's one-slice
    quality greedy starves waiting jobs where many jobs wait for a slot (pollux: 7.8 jobs
    of the slots at 0 GPUs per slice on average, quality AUC 0.61 against Tiresias's
    0.89), while Tiresias, which never resizes, loses where the cluster is large and lightly
    loaded (synthetic-256: 0.55 against 0.72). The switch reads only the options' counts
    the agent sees (``option=<o>`` fields), so a set policy can learn it.

    With ``min_rescale_share`` (``switch-short``, baselines/switch.py's
    :class:`~baselines.switch.ShortSliceSwitch`) it switches only on envs whose rescale
    cost is at least that share of a slice (the slice length is in the observation with
    ``observe_slice``) and plays ``base`` alone elsewhere.
    """

    def __init__(
        self,
        base: str = "slaq",
        other: str = "tiresias",
        options: tuple[str, ...] | None = None,
        min_rescale_share: float | None = None,
    ) -> None:
        from cluster_envs.envs.metis_hints import OPTIONS

        options = OPTIONS if options is None else tuple(options)
        for name in (base, other):
            if name not in options[:-2]:
                raise ConfigError(f"switch: {name!r} is not one of the options {options[:-2]}")
        kind = "switch" if min_rescale_share is None else "switch-short"
        self.name = f"{kind}:{base},{other}"
        self.min_rescale_share = min_rescale_share
        self.base, self.other = options.index(base), options.index(other)
        self.num, self.pause = len(options), len(options) - 1
        self.choices: dict[str, int] = {}

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the env asks the heuristics."""

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        from cluster_envs.policies.context import switching

        base: Any = env.unwrapped
        slots = base.slots
        table = base.hints.table(base.sim, slots)
        present = np.array([j is not None for j in slots], dtype=bool)
        starved = bool((present & (table[self.base] == 0)).any()) and switching(
            base.policy_context(), self.min_rescale_share
        )
        pick = self.other if starved else self.base
        key = "other" if starved else "base"
        self.choices[key] = self.choices.get(key, 0) + 1
        mask = np.asarray(base.action_masks()).reshape(-1, self.num)
        return np.where(mask[:, pick], pick, self.pause)


def option_action(base: Any) -> bool:
    """Whether ``base`` (an unwrapped env) plays MetisAllocation's ``action="hints"``."""
    return getattr(getattr(base, "config", None), "action", None) == "hints"


def make_teacher(name: str, env_id: str, base: Any = None) -> Any:
    """The teacher agent ``name`` names (``lookahead``; ``lookahead:a,b,c``; the same with
    ``lookahead-arrivals``: sampled future arrivals in the forks; ``lookahead-multi[:a,b]``:
    the rollout over several continuations, and ``lookahead-multi-arrivals`` with sampled
    arrivals (MoldableScheduling); ``switch[:base,other]``:
    :class:`StarvationSwitch` on MetisAllocation's options; ``switch-short[:base,other]``:
    the same on short slices only), or ``None`` when
    ``name`` is a plain heuristic. On an env ``base`` whose action picks options
    (:func:`option_action`), a heuristic teacher follows its option (:class:`FollowOption`)
    and a lookahead returns the chosen candidate's option. A lookahead's name may end in
    ``@key=value,...`` settings: ``commit``, ``margin``, ``prefer`` (LookaheadTeacher's)."""
    name, _, settings = name.partition("@")
    base_name, _, listed = name.partition(":")
    if settings and base_name not in TEACHERS:
        raise ConfigError(f"teacher settings ({settings!r}) apply to a lookahead only: {name}")
    if base_name in ("switch", "switch-short"):  # StarvationSwitch, e.g. switch:slaq,tiresias
        if not option_action(base):
            raise ConfigError(
                f"the {base_name} teacher plays MetisAllocation's action='hints' only"
            )
        names = [n for n in listed.split(",") if n]
        if len(names) > 2:
            raise ConfigError(
                f"{base_name} takes at most two heuristics (base,other), got {listed!r}"
            )
        kwargs: dict[str, Any] = dict(zip(("base", "other"), names, strict=False))
        if base_name == "switch-short":  # switch-window's rule on short slices only
            from cluster_envs.policies.context import SHORT_SLICE_RESCALE_SHARE

            kwargs["min_rescale_share"] = SHORT_SLICE_RESCALE_SHARE
        return StarvationSwitch(**kwargs, options=base.hints.options)
    if base_name not in TEACHERS:
        return FollowOption(name, base.hints.options) if option_action(base) else None
    extra: dict[str, Any] = {}
    for item in filter(None, settings.split(",")):
        key, _, value = item.partition("=")
        try:
            extra[key] = {"commit": int, "margin": float, "prefer": str}[key](value)
        except (KeyError, ValueError):
            raise ConfigError(
                f"teacher setting {item!r} in {name}@{settings}: expected commit=<int>, "
                "margin=<float> or prefer=<option>"
            ) from None
    if "prefer" in extra:
        if not option_action(base):
            raise ConfigError("prefer= relabels MetisAllocation's action='hints' options only")
        if extra["prefer"] not in base.hints.options:
            raise ConfigError(f"prefer={extra['prefer']!r} is no option of the env "
                              f"({', '.join(base.hints.options)})")  # fmt: skip
    teacher = _make_lookahead(base_name, listed, env_id, extra)
    teacher.options = option_action(base)
    return teacher


def _make_lookahead(
    base: str, listed: str, env_id: str, extra: dict[str, Any] | None = None
) -> LookaheadTeacher:
    sampled = base in ("lookahead-arrivals", "lookahead-multi-arrivals")
    kwargs: dict[str, Any] = {"arrivals": "sampled"} if sampled else {}
    kwargs.update(extra or {})  # the name's @settings (commit, margin, prefer)
    if "Metis" in env_id:  # MetisAllocation is scored on quality, not completion times
        kwargs["objective"] = "quality"
    if base.startswith("lookahead-multi"):  # candidates' first decisions x every candidate after
        if "Moldable" not in env_id:  # it tells decisions apart by their one-step action
            raise ConfigError(f"{base} plays MoldableScheduling only, not {env_id}")
        names = tuple(c for c in listed.split(",") if c) or MOLDABLE_CANDIDATES
        return LookaheadTeacher(names, continuations=names, **kwargs)
    if listed:
        return LookaheadTeacher(tuple(c for c in listed.split(",") if c), **kwargs)
    if "Moldable" in env_id:
        return LookaheadTeacher(MOLDABLE_CANDIDATES, **kwargs)
    if "Placement" in env_id:
        return LookaheadTeacher(PLACEMENT_CANDIDATES, **kwargs)
    if "Metis" in env_id:
        return LookaheadTeacher(METIS_CANDIDATES, **kwargs)
    raise ConfigError(f"no default lookahead candidates for {env_id}; name them: lookahead:a,b")


#: Teacher names besides registered heuristics.
TEACHERS = ("lookahead", "lookahead-arrivals", "lookahead-multi", "lookahead-multi-arrivals")
