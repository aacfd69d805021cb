"""MaskablePPO training speed on MoldableScheduling-v0: the shipped recipe, before and after.

Each variant trains ``--timesteps`` steps with ``agents.train.train`` (seed 0, no
periodic evaluation, checkpoints as usual) in a fresh child process limited to
``--cores`` CPUs; rounds are interleaved so machine noise hits every variant alike.
Reported: env steps per wall second of ``learn()`` (SB3's fps, ``TrainResult.fps``) and
per CPU second of the child (robust on a shared machine), the median over rounds.

Variants (the shipped recipe is ``scripts/train_pretrained.sh``: MaskablePPO, YAML
defaults + ``learning_rate 1e-4, ent_coef 0.02, n_steps 512``, 4 envs, batch 256,
10 epochs, reward normalisation):

* ``before``: the shipped recipe on ``DummyVecEnv`` (what training used until now);
* ``native``: the same recipe on the native vector env adapter (same episodes, same
  parameters: ``tests/test_vector_env.py``);
* ``native16``: 16 envs x 128 steps (the same 2,048 samples per update);
* ``native16-b512``: 16 envs x 128 steps, minibatch 512 (4 instead of 8 per epoch);
* ``native16-threads2``: as ``native16`` with ``torch.set_num_threads(2)``;
* ``subproc16-b512``: as ``native16-b512``, the envs in 2 worker processes of 8
  (``vec_env="native-subproc"``); its CPU figure counts the workers too.

Usage: ``.venv/bin/python benchmarks/bench_training_speed.py [--timesteps 8192]
[--rounds 2] [--cores 2]``. Writes ``benchmarks/results/training_speed.json`` / ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "cluster_envs/MoldableScheduling-v0"
SHIPPED = {"learning_rate": 1.0e-4, "ent_coef": 0.02, "n_steps": 512}

#: label -> (vec_env, n_envs, hyper-parameter overrides over SHIPPED, torch threads).
VARIANTS: dict[str, tuple[str, int, dict[str, Any], int]] = {
    "before": ("dummy", 4, {}, 1),
    "native": ("native", 4, {}, 1),
    "native16": ("native", 16, {"n_steps": 128}, 1),
    "native16-b512": ("native", 16, {"n_steps": 128, "batch_size": 512}, 1),
    "native16-threads2": ("native", 16, {"n_steps": 128}, 2),
    "subproc16-b512": ("native-subproc", 16, {"n_steps": 128, "batch_size": 512}, 1),
}


def child(label: str, timesteps: int, cores: int) -> dict[str, Any]:
    """Train one variant in this process; its speed."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
    import torch

    import agents.train as train_mod

    vec_env, n_envs, overrides, threads = VARIANTS[label]
    deterministic = train_mod.set_deterministic

    def set_threads() -> None:
        deterministic()
        torch.set_num_threads(threads)

    train_mod.set_deterministic = set_threads  # the variant's thread count
    workers_cpu = _count_worker_cpu()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    with tempfile.TemporaryDirectory() as tmp:
        result = train_mod.train(
            "maskable_ppo", ENV_ID, Path(tmp) / "run", timesteps=timesteps, seed=0,
            hyperparams={**SHIPPED, **overrides}, n_envs=n_envs, eval_freq=0,
            progress_bar=False, vec_env=vec_env,
        )  # fmt: skip
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    cpu_s += sum(workers_cpu)
    return {
        "label": label,
        "wall_steps_per_s": result.fps,
        "cpu_steps_per_s": result.num_timesteps / cpu_s,
        "num_timesteps": result.num_timesteps,
    }


def breakdown(label: str, timesteps: int) -> dict[str, Any]:
    """CPU seconds of one variant's ``learn()`` split: env steps, policy + buffer, updates."""
    import time

    import torch
    from sb3_contrib import MaskablePPO

    from agents.config import resolve_hyperparams
    from agents.envs import make_train_env
    from agents.train import set_deterministic

    vec_env, n_envs, overrides, threads = VARIANTS[label]
    set_deterministic()
    torch.set_num_threads(threads)
    params = resolve_hyperparams("maskable_ppo", ENV_ID, {**SHIPPED, **overrides}, {}, n_envs)
    env = make_train_env(params, 0, vec_env)
    model = MaskablePPO(env=env, seed=0, device="cpu", verbose=0, **params.model_kwargs())
    spent = {"rollout": 0.0, "update": 0.0, "env": 0.0}

    def timed(obj: Any, name: str, key: str) -> None:
        inner = getattr(obj, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            out = inner(*args, **kwargs)
            spent[key] += time.process_time() - t
            return out

        setattr(obj, name, run)

    timed(model, "collect_rollouts", "rollout")
    timed(model, "train", "update")
    timed(model.env, "step_wait", "env")
    start = time.process_time()
    model.learn(timesteps)
    total = time.process_time() - start
    env.close()
    per_step = 1e3 / timesteps
    return {
        "label": label,
        "cpu_steps_per_s": round(timesteps / total, 1),
        "ms_per_step": {
            "env (step_wait)": round(spent["env"] * per_step, 3),
            "policy + rollout buffer": round((spent["rollout"] - spent["env"]) * per_step, 3),
            "PPO updates": round(spent["update"] * per_step, 3),
            "total": round(total * per_step, 3),
        },
    }


def _count_worker_cpu() -> list[float]:
    """CPU seconds of native-subproc workers, read from /proc as each env closes."""
    from agents.native_vec_proc import ProcNativeVecEnv

    spent: list[float] = []
    close = ProcNativeVecEnv.close
    tick = os.sysconf("SC_CLK_TCK")

    def counting_close(self: ProcNativeVecEnv) -> None:
        for proc in self.processes:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            spent.append((int(fields[11]) + int(fields[12])) / tick)  # utime + stime
        close(self)

    ProcNativeVecEnv.close = counting_close  # type: ignore[method-assign]
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--breakdown", action="store_true",
        help="only split one process's CPU time per variant (not subproc) into env / policy / updates",
    )  # fmt: skip
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.timesteps, args.cores)))
        return
    if args.breakdown:
        rows = [breakdown(label, args.timesteps) for label in args.variant or ["before", "native", "native16", "native16-b512"]]  # fmt: skip
        for row in rows:
            print(json.dumps(row), flush=True)
        write_breakdown(rows, f".venv/bin/python benchmarks/bench_training_speed.py --breakdown --timesteps {args.timesteps}")  # fmt: skip
        return
    labels = args.variant or list(VARIANTS)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for _ in range(args.rounds):
        for label in labels:
            cmd = [sys.executable, __file__, "--child", label,
                   "--timesteps", str(args.timesteps), "--cores", str(args.cores)]  # fmt: skip
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(row), flush=True)
            runs[label].append(row)
    command = (
        f".venv/bin/python benchmarks/bench_training_speed.py --timesteps {args.timesteps} "
        f"--rounds {args.rounds} --cores {args.cores}"
    )
    write(runs, command)


def write(runs: dict[str, list[dict[str, Any]]], command: str) -> None:
    base = {k: statistics.median(r[k] for r in runs["before"]) for k in ("wall_steps_per_s", "cpu_steps_per_s")} if "before" in runs else None  # fmt: skip
    rows = []
    for label, rs in runs.items():
        vec_env, n_envs, overrides, threads = VARIANTS[label]
        row: dict[str, Any] = {
            "label": label, "vec_env": vec_env, "n_envs": n_envs, "torch_threads": threads,
            "hyperparams": {**SHIPPED, **overrides},
            "wall_steps_per_s": round(statistics.median(r["wall_steps_per_s"] for r in rs), 1),
            "cpu_steps_per_s": round(statistics.median(r["cpu_steps_per_s"] for r in rs), 1),
            "runs": rs,
        }  # fmt: skip
        if base is not None:
            row["wall_vs_before"] = round(row["wall_steps_per_s"] / base["wall_steps_per_s"], 3)
            row["cpu_vs_before"] = round(row["cpu_steps_per_s"] / base["cpu_steps_per_s"], 3)
        rows.append(row)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "training_speed.json").write_text(
        json.dumps({"command": command, "env_id": ENV_ID, "results": rows}, indent=2) + "\n"
    )
    lines = [
        f"# MaskablePPO training speed, MoldableScheduling-v0 (`{command}`)",
        "",
        "Env steps per second of `learn()` (wall) and per CPU second of the training",
        "process; median over interleaved rounds; seed 0, no periodic evaluation.",
        "`before` = the shipped recipe (scripts/train_pretrained.sh) on DummyVecEnv.",
        "",
        "| variant | vec env | envs | hyper-parameters | wall steps/s | CPU steps/s | wall x | CPU x |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        hp = ", ".join(f"{k}={v}" for k, v in r["hyperparams"].items())
        if r["torch_threads"] != 1:
            hp += f", torch threads={r['torch_threads']}"
        lines.append(
            f"| {r['label']} | {r['vec_env']} | {r['n_envs']} | {hp} | "
            f"{r['wall_steps_per_s']:,.0f} | {r['cpu_steps_per_s']:,.0f} | "
            f"{r.get('wall_vs_before', 1.0):.2f} | {r.get('cpu_vs_before', 1.0):.2f} |"
        )
    (RESULTS / "training_speed.md").write_text("\n".join(lines) + "\n")


def write_breakdown(rows: list[dict[str, Any]], command: str) -> None:
    """Add the CPU split to training_speed.json / .md (after a speed run)."""
    path = RESULTS / "training_speed.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data["breakdown"] = {"command": command, "results": rows}
    path.write_text(json.dumps(data, indent=2) + "\n")
    parts = list(rows[0]["ms_per_step"])
    lines = [
        "",
        f"## Where the CPU time goes (`{command}`)",
        "",
        "CPU ms per env step of `learn()` in one process (1 torch thread).",
        "",
        "| variant | " + " | ".join(parts) + " | CPU steps/s |",
        "|---|" + "---:|" * (len(parts) + 1),
    ]
    for r in rows:
        cells = " | ".join(f"{r['ms_per_step'][p]:.3f}" for p in parts)
        lines.append(f"| {r['label']} | {cells} | {r['cpu_steps_per_s']:,.0f} |")
    md = RESULTS / "training_speed.md"
    text = (
        md.read_text().split("\n## Where the CPU time goes")[0].rstrip("\n") if md.is_file() else ""
    )
    md.write_text(text + "\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
