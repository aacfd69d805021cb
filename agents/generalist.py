"""Train and evaluate a generalist MoldableScheduling agent (issue 13).

``python -m agents.generalist train --out DIR [...]``: MaskablePPO with
:class:`agents.set_policy.SetPolicy` on scale-free observations of a family's *train*
split, optionally warm-started by behaviour cloning (+ DAgger) from a teacher
(``--teacher``: a heuristic or ``lookahead``), optionally with input-dependent baselines
(``--groups``: envs in groups sharing workload seeds). Every ``--eval-freq`` steps the
deterministic policy plays the *validation* split and its geometric-mean JCT ratio to
the best single heuristic there (``threshold-eta``) is logged to ``curve.json``; the
best checkpoint by that ratio is ``best_model.zip`` (test splits are never looked at).

``python -m agents.generalist evaluate --model M.zip [...]``: the model (adapted to each
family's shapes) next to every moldable heuristic on every family's *test* split,
seeds as the generalization suite's (``--quick``: 12 jobs per episode).

``python -m agents.generalist report F.json [...] --titles T [...] [--json S.json]``: each
evaluate file's table (:func:`summarize`) as a section of generalist_moldable.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
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
    collect_demonstrations,
    pretrain,
    warm_start,
)
from agents.set_policy import FlatPolicy, SetPolicy, adapt
from cluster_envs.envs.rollout import HeuristicAgent, rollout

ENV_ID = "cluster_envs/MoldableScheduling-v0"
#: The best single moldable heuristic across families (generalization_heuristics.md).
BEST_SINGLE = "threshold-eta"
#: Validation seeds of the learning curve.
VAL_SEEDS = tuple(range(500, 508))


def make_env(family: str, split: str, num_jobs: int | None = None) -> gym.Env:
    extra: dict[str, Any] = {} if num_jobs is None else {"num_jobs": num_jobs}
    return gym.make(ENV_ID, family=family, split=split, observation="scale_free", **extra)


class _ModelAgent:
    def __init__(self, model: Any) -> None:
        self.model, self.name = model, "agent"

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> Any:
        mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
        action, _ = self.model.predict(obs, deterministic=True, action_masks=mask)
        return int(action)


def play(env: gym.Env, agent: Any, seeds: Any) -> list[float]:
    return [rollout(env, agent, seed=s).metrics["avg_jct_s"] for s in seeds]


def heuristic(env: gym.Env, name: str) -> HeuristicAgent:
    return HeuristicAgent(env.unwrapped.policy(name))  # type: ignore[attr-defined]


class ValCurve(BaseCallback):
    """Validation-ratio learning curve and best checkpoint (see the module docstring)."""

    def __init__(self, family: str, every: int, out: Path, num_jobs: int | None) -> None:
        super().__init__()
        self.env = make_env(family, "validation", num_jobs)
        self.ref = np.array(play(self.env, heuristic(self.env, BEST_SINGLE), VAL_SEEDS))
        self.every, self.out, self.next = every, out, 0
        self.curve: list[dict[str, float]] = []
        self.best = np.inf

    def evaluate(self, model: Any, steps: int) -> float:
        vals = np.array(play(self.env, _ModelAgent(model), VAL_SEEDS))
        ratio = float(np.exp(np.mean(np.log(vals / self.ref))))
        self.curve.append({"timesteps": steps, "val_ratio_to_best_single": ratio,
                           "wall_s": time.time()})  # fmt: skip
        (self.out / "curve.json").write_text(json.dumps(self.curve, indent=1))
        if ratio < self.best:
            self.best = ratio
            model.save(self.out / "best_model.zip")
        print(f"[val] steps={steps} ratio={ratio:.4f} best={self.best:.4f}", flush=True)
        return ratio

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next:
            self.next += self.every
            self.evaluate(self.model, self.num_timesteps)
        return True


def warm_start_families(
    model: Any,
    families: list[str],
    settings: PretrainSettings,
    seed: int,
    num_jobs: int | None = None,
) -> dict[str, Any]:
    """BC (+ DAgger) from ``settings.teacher`` on each of ``families``' *train* splits into
    ``model``'s one set of weights, in place (``--demo-families``).

    The clusters differ in shape, so each family keeps its own demonstrations and its own
    view of the model (:func:`adapt`: same weights, that family's spaces); every epoch
    fits one pass over each family's data in turn, the weights carried from view to view.
    The value head is not fitted (``value_coef`` 0: the model's returns are normalised,
    the demonstrations' are not). DAgger rounds let each family's view play its episodes.
    """
    one_pass = dataclasses.replace(settings, epochs=1, value_coef=0.0)
    envs = {f: make_env(f, "train", num_jobs) for f in families}
    kwargs = {f: {"family": f, "split": "train", "observation": "scale_free",
                  **({"num_jobs": num_jobs} if num_jobs else {})} for f in families}  # fmt: skip
    views = {f: adapt(model, envs[f]) for f in families}
    gamma, n = float(model.gamma), settings.episodes

    def sync(src: Any, dst: Any) -> None:
        if src is not dst:
            dst.policy.load_state_dict(src.policy.state_dict())

    def fit(demos: dict[str, Demonstrations], salt: int) -> dict[str, Any]:
        losses: dict[str, Any] = {}
        for epoch in range(settings.epochs):
            for f in families:
                sync(model, views[f])
                losses[f] = pretrain(views[f], demos[f], one_pass, seed + salt * 1000 + epoch)
                sync(views[f], model)
        return losses

    demos = {f: collect_demonstrations(ENV_ID, kwargs[f], settings.teacher, n, seed, gamma)
             for f in families}  # fmt: skip
    rounds = [{"round": 0, "player": settings.teacher, "losses": fit(demos, 0)}]
    for r in range(1, settings.dagger_rounds + 1):
        played = {}
        for f in families:
            sync(model, views[f])
            more = collect_demonstrations(ENV_ID, kwargs[f], settings.teacher, n,
                                          seed + r * n, gamma, student=views[f])  # fmt: skip
            demos[f] = demos[f] + more
            played[f] = float(np.mean([m["avg_jct_s"] for m in more.episode_metrics]))
        rounds.append({"round": r, "player": "agent", "avg_jct_s": played,
                       "losses": fit(demos, r)})  # fmt: skip
    return {"teacher": settings.teacher, "families": families, "episodes_per_round": n,
            "dagger_rounds": settings.dagger_rounds,
            "steps": {f: len(d) for f, d in demos.items()}, "rounds": rounds}  # fmt: skip


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    n_envs = args.groups * args.group_size

    def thunk(i: int) -> Any:
        def make() -> gym.Env:
            env = make_env(args.family, "train", args.num_jobs)
            group = i // args.group_size if args.groups_share else i
            return SharedSeedWrapper(env, args.seed * 1_000_000, group)

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
    curve = ValCurve(args.family, args.eval_freq, out, args.num_jobs)
    record: dict[str, Any] = {"args": vars(args)}
    # --pretrain-episodes 0 (or --teacher ''): no warm start, PPO from random weights.
    if args.teacher and args.pretrain_episodes > 0:
        settings = PretrainSettings(teacher=args.teacher, episodes=args.pretrain_episodes,
                                    epochs=args.pretrain_epochs,
                                    dagger_rounds=args.dagger_rounds)  # fmt: skip
        kwargs = {"family": args.family, "split": "train", "observation": "scale_free"}
        if args.num_jobs:
            kwargs["num_jobs"] = args.num_jobs
        if args.demo_families:
            from cluster_envs.workload.families import family_names

            families = args.demo_families.split(",")
            if families == ["moldable"]:
                families = family_names("moldable")
            record["warm_start"] = warm_start_families(model, families, settings, args.seed,
                                                       args.num_jobs)  # fmt: skip
        else:
            record["warm_start"] = warm_start(model, ENV_ID, kwargs, settings, args.seed)
        model.save(out / "pretrained_model.zip")
        print("[warm start]", record["warm_start"]["rounds"], flush=True)
    callbacks: list[BaseCallback] = [curve]
    baseline = None
    if args.groups_share and args.group_size > 1:
        baseline = InputDependentBaseline(args.group_size)
        callbacks.append(baseline)
    model.learn(args.timesteps, callback=CallbackList(callbacks))
    curve.evaluate(model, model.num_timesteps)
    model.save(out / "final_model.zip")
    record.update(train_wall_s=round(time.time() - start, 1), timesteps=model.num_timesteps,
                  best_val_ratio=curve.best, curve=curve.curve)  # fmt: skip
    if baseline is not None and baseline.replaced_share:  # empty: no PPO step
        record["input_baseline_share"] = float(np.mean(baseline.replaced_share))
    (out / "train.json").write_text(json.dumps(record, indent=1, default=str))


def evaluate(args: argparse.Namespace) -> None:
    from cluster_envs.harness.suites import MOLDABLE_BASELINES
    from cluster_envs.workload.families import family_names

    torch.set_num_threads(1)
    model = MaskablePPO.load(args.model, device="cpu")
    seeds = range(args.seeds[0], args.seeds[1] + 1)
    rows: dict[str, Any] = {}
    for fam in family_names("moldable"):
        env = make_env(fam, "test", 12 if args.quick else None)
        res = {p: play(env, heuristic(env, p), seeds) for p in MOLDABLE_BASELINES}
        res["agent"] = play(env, _ModelAgent(adapt(model, env)), seeds)
        rows[fam] = res
        best = min(MOLDABLE_BASELINES, key=lambda p: np.mean(res[p]))
        print(fam, "best", best, {p: round(np.mean(v) / np.mean(res[best]), 3)
                                  for p, v in res.items()}, flush=True)  # fmt: skip
    Path(args.out).write_text(json.dumps({"model": args.model, "quick": args.quick,
                                          "seeds": list(seeds), "rows": rows}, indent=1))  # fmt: skip


def summarize(path: str, single: str = BEST_SINGLE, draws: int = 2000) -> dict[str, Any]:
    """Per-family ratios of an ``evaluate`` file: agent / best heuristic of the family (by
    mean) and agent / ``single``, with a paired bootstrap interval over seeds of the
    per-family geometric-mean ratio to ``single``."""
    data = json.loads(Path(path).read_text())
    rng = np.random.default_rng(0)
    fams: dict[str, Any] = {}
    for fam, res in data["rows"].items():
        heur = {p: np.asarray(v) for p, v in res.items() if p != "agent"}
        agent = np.asarray(res["agent"])
        best = min(heur, key=lambda p: heur[p].mean())
        paired = np.log(agent / heur[single])
        boot = [np.exp(paired[rng.integers(0, len(paired), len(paired))].mean())
                for _ in range(draws)]  # fmt: skip
        fams[fam] = {
            "best_heuristic": best,
            "agent_to_best": float(agent.mean() / heur[best].mean()),
            "single_to_best": float(heur[single].mean() / heur[best].mean()),
            "agent_to_single": float(agent.mean() / heur[single].mean()),
            "paired_geo_to_single": float(np.exp(paired.mean())),
            "paired_ci95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
        }

    def geo(key: str) -> float:
        return float(np.exp(np.mean([np.log(f[key]) for f in fams.values()])))

    return {"families": fams, "geomean_agent_to_best": geo("agent_to_best"),
            "geomean_single_to_best": geo("single_to_best"),
            "geomean_agent_to_single": geo("agent_to_single"),
            "worst_agent_to_best": max(f["agent_to_best"] for f in fams.values())}  # fmt: skip


def markdown(summary: dict[str, Any], title: str, single: str = BEST_SINGLE) -> str:
    """A :func:`summarize` result as the ``## title`` section of generalist_moldable.md."""
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
    t.add_argument("--family", default="mixed")
    t.add_argument("--num-jobs", type=int, default=None)
    t.add_argument("--timesteps", type=int, default=20_000)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--groups", type=int, default=2)
    t.add_argument("--group-size", type=int, default=2)
    t.add_argument("--no-shared-seeds", dest="groups_share", action="store_false")
    t.add_argument("--flat", action="store_true", help="flat MLP (FlatPolicy) instead of SetPolicy")
    t.add_argument("--hidden", type=int, default=64)
    t.add_argument("--n-steps", type=int, default=256)
    t.add_argument("--batch-size", type=int, default=256)
    t.add_argument("--n-epochs", type=int, default=4)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--ent-coef", type=float, default=0.005)
    t.add_argument("--gamma", type=float, default=0.999)
    t.add_argument("--teacher", default="threshold-eta")
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
        "(each its own cluster; 'moldable': every moldable family); default: --family",
    )
    t.add_argument("--dagger-rounds", type=int, default=1)
    t.add_argument("--eval-freq", type=int, default=2048)
    e = sub.add_parser("evaluate")
    e.add_argument("--model", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--seeds", type=int, nargs=2, default=(100, 109))
    e.add_argument("--quick", action="store_true")
    r = sub.add_parser("report", help="markdown tables of evaluate files")
    r.add_argument("files", nargs="+", help="evaluate --out files")
    r.add_argument("--titles", nargs="+", required=True, help="section title per file")
    r.add_argument("--json", help="summary JSON to add the sections to (by title)")
    args = ap.parse_args(argv)
    {"train": train, "evaluate": evaluate, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
