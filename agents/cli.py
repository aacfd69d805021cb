"""``cluster-envs train`` and ``cluster-envs evaluate`` (plugged into ``cluster_envs.cli``).

Heavy imports (torch, SB3) happen inside the run functions, so ``cluster-envs --help``
stays fast. Errors the user can fix raise ClusterEnvsError / FileNotFoundError, which the
CLI prints on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from typing import Any

from cluster_envs.cli import Command, format_table, non_negative_int, positive_int
from cluster_envs.cli_util import check_out_folder, heartbeat
from cluster_envs.envs.registration import resolve_env_id
from cluster_envs.names import unknown_name

ALGO_NAMES = ("maskable_ppo", "ppo", "a2c", "dqn")
DEFAULT_ENV = "cluster_envs/MoldableScheduling-v0"
DEFAULT_SEEDS = "100-109"


def _add_train(p: argparse.ArgumentParser) -> None:
    p.add_argument("--algo", required=True, help=f"one of {', '.join(ALGO_NAMES)}")
    p.add_argument("--env", default=DEFAULT_ENV, help="env id")
    p.add_argument("--timesteps", type=positive_int, default=None, help="env steps (None: YAML)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed (eval: seed + 10000)")
    p.add_argument("--out", required=True, help="run folder (refused if it holds a run)")
    p.add_argument("--env-kwargs", default=None, help='JSON, e.g. \'{"preset": "toy"}\'')
    p.add_argument("--hyperparams", default=None, help="YAML file or inline YAML overrides")
    p.add_argument("--n-envs", type=positive_int, default=None, help="training envs (None: YAML)")
    p.add_argument(
        "--eval-freq", type=non_negative_int, default=10_000,
        help="env steps between evaluations (0: never; a shorter run evaluates at its end)",
    )  # fmt: skip
    p.add_argument("--eval-episodes", type=positive_int, default=5, help="episodes per evaluation")
    p.add_argument(
        "--checkpoint-freq", type=positive_int, default=None, help="env steps (None: 5 per run)"
    )
    p.add_argument("--resume", default=None, metavar="CHECKPOINT", help="continue from a zip")
    p.add_argument("--force", action="store_true", help="overwrite a run folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--vec-env", default="native", choices=("native", "native-subproc", "dummy"),
        help="training env vectorisation: one batched native vector env (default), two "
        "worker processes of it, or SB3's DummyVecEnv (the same episodes)",
    )  # fmt: skip
    p.add_argument(
        "--pretrain", default=None, metavar="HEURISTIC",
        help="clone this heuristic's actions before RL (DL2-style warm start), e.g. slaq",
    )  # fmt: skip
    p.add_argument("--pretrain-episodes", type=positive_int, default=50, help="teacher episodes")
    p.add_argument("--pretrain-epochs", type=positive_int, default=20, help="passes over them")
    p.add_argument(
        "--pretrain-dagger-rounds", type=non_negative_int, default=0,
        help="DAgger rounds after cloning: the agent plays, the heuristic labels",
    )  # fmt: skip


def _argv(args: argparse.Namespace) -> list[str]:
    """The command line: the real one from a shell, else an equivalent one rebuilt."""
    if sys.argv[1:2] == [args.command]:
        return sys.argv[1:]
    out = [args.command]
    for key, value in vars(args).items():
        if key == "command" or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _run_train(args: argparse.Namespace) -> int:
    if args.algo not in ALGO_NAMES:  # checked before torch is imported: answers at once
        raise unknown_name("algo", args.algo, ALGO_NAMES, listed="known")
    resolve_env_id(args.env)
    out = check_out_folder(args.out)
    from agents.envs import parse_env_kwargs
    from agents.imitation import PretrainSettings
    from agents.train import RunSpec, run_training

    spec = RunSpec(
        args.algo,
        args.env,
        out,
        timesteps=args.timesteps,
        seed=args.seed,
        env_kwargs=parse_env_kwargs(args.env_kwargs),
        hyperparams=args.hyperparams,
        n_envs=args.n_envs,
        eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes,
        checkpoint_freq=args.checkpoint_freq,
        resume=args.resume,
        force=args.force,
        progress_bar=not args.no_progress,
        vec_env=args.vec_env,
        argv=_argv(args),
        pretrain=PretrainSettings(
            args.pretrain,
            episodes=args.pretrain_episodes,
            epochs=args.pretrain_epochs,
            dagger_rounds=args.pretrain_dagger_rounds,
        )
        if args.pretrain
        else None,
    )
    result = run_training(spec)
    print(
        f"trained {args.algo} on {args.env}: {result.num_timesteps} steps in total, "
        f"{result.wall_s:.1f} s ({result.fps:,.0f} steps/s)"
    )
    print(f"run folder: {result.out_dir}  (last_model.zip", end="")
    print(", best_model.zip)" if result.best_model else ")")
    if result.last_episode_metrics:
        m = result.last_episode_metrics
        print(
            f"last training episode: avg_jct_s={m.get('avg_jct_s', math.nan):,.0f} "
            f"gpu_utilization={m.get('gpu_utilization', math.nan):.3f}"
        )
    print(f"evaluate: cluster-envs evaluate --model {shlex.quote(str(result.last_model))}")
    return 0


def _add_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="PATH, sb3:PATH or pretrained:<EnvName-vN>")
    p.add_argument("--env", default=None, help="env id (default: the model's training env)")
    p.add_argument("--seeds", default=DEFAULT_SEEDS, help="'a-b', 'a,b,c' or a mix")
    p.add_argument("--env-kwargs", default=None, help="JSON, over the training env kwargs")
    p.add_argument(
        "--deterministic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="most likely action, or sampled (--no-deterministic)",
    )
    p.add_argument("--json", action="store_true", help="print results as JSON")


def _run_evaluate(args: argparse.Namespace) -> int:
    from agents.envs import parse_env_kwargs
    from agents.evaluate import COUNTERS, METRICS, evaluate, parse_seeds, resolve_model, summarise

    seeds = parse_seeds(args.seeds)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    with heartbeat(f"evaluate {args.model} on {len(seeds)} seeds"):
        spec = resolve_model(args.model, args.deterministic)
        env_id, kwargs, rows = evaluate(spec, args.env, env_kwargs, seeds)
    summary = summarise(rows)
    if args.json:
        report: dict[str, Any] = {
            "model": args.model,
            "algo": spec.algo,
            "env_id": env_id,
            "env_kwargs": kwargs,
            "deterministic": args.deterministic,
            "per_seed": rows,
            "summary": summary,
        }
        print(json.dumps(report, indent=2))
        return 0
    columns = ["seed", *[m for m in (*METRICS, *COUNTERS) if m in summary]]
    print(f"{args.model} ({spec.algo}) on {env_id} {json.dumps(kwargs)}, {len(seeds)} seeds")
    print(format_table(rows, columns))
    print("\nmean ± 95% CI (Student t):")
    for key, s in summary.items():
        ci = f"± {s['ci95']:,.3f}" if math.isfinite(s["ci95"]) else f"(n={s['n']}, no interval)"
        print(f"  {key:26s} {s['mean']:14,.3f} {ci}")
    return 0


TRAIN: Command = (
    "train an SB3 agent (maskable_ppo, ppo, a2c, dqn) on a cluster-envs env",
    _add_train,
    _run_train,
)

EVALUATE: Command = (
    "evaluate a trained or pretrained agent on seeds: per-seed metrics, mean ± 95% CI",
    _add_evaluate,
    _run_evaluate,
)
