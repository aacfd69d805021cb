"""Native vector env vs ``SyncVectorEnv``: env steps per second with N sub-envs.

For every env id (default preset) and N sub-envs, steps three variants with the same
masked-random actions, interleaved round by round so machine noise hits all alike:

* ``sync``: ``gym.make_vec(id, N, vectorization_mode="sync")`` (``SyncVectorEnv`` of
  ``gym.make`` envs with their wrappers, SAME_STEP autoreset like the native env),
  masks through ``call("action_masks")``;
* ``native``: ``gym.make_vec(id, N, vectorization_mode="vector_entry_point")``,
  masks through ``action_masks()``;
* ``bare loop``: N bare env instances stepped in a plain Python loop (no batching, no
  infos) -- the floor any vector env pays for the simulator and encoders themselves.

Timed: ``reset``, the ``step`` calls and the mask reads (CPU time of this process),
every variant in turn at each vector step on the same states (checked: equal masks);
not timed: the random choice of actions. The bare loop's share of ``sync`` bounds the native env's
possible speed-up: ``sync / bare`` is the most any wrapper-free vector env can gain.

Usage: ``.venv/bin/python benchmarks/bench_vector_env.py [--num-envs 16] [--steps 60]
[--rounds 3]``. Writes ``benchmarks/results/vector_env.json`` and ``vector_env.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.envs.registration import ENV_SPECS, env_ids, short_env_id

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _choose(rng: np.random.Generator, masks: np.ndarray, space: gym.Space) -> np.ndarray:
    """One masked-random action per sub-env (per-slot masks for MultiDiscrete)."""
    if isinstance(space, gym.spaces.Discrete):
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)
    assert isinstance(space, gym.spaces.MultiDiscrete)
    k = len(space.nvec)
    return np.stack([
        np.array([rng.choice(np.flatnonzero(r)) for r in m.reshape(k, -1)], dtype=np.int64)
        for m in masks
    ])  # fmt: skip


class _Bare:
    """N bare envs in a loop: step, autoreset, mask -- nothing else."""

    def __init__(self, env_id: str, n: int) -> None:
        creator = gym.envs.registration.load_env_creator(ENV_SPECS[env_id][0])
        self.envs: list[Any] = [creator() for _ in range(n)]

    def reset(self, seed: int) -> None:
        for i, env in enumerate(self.envs):
            env.reset(seed=seed + i)

    def step(self, actions: np.ndarray) -> None:
        for env, a in zip(self.envs, actions, strict=True):
            _, _, te, tr, _ = env.step(a)
            if te or tr:
                env.reset()

    def masks(self) -> np.ndarray:
        return np.stack([env.action_masks() for env in self.envs])


def _variants(env_id: str, n: int) -> dict[str, tuple[Any, Callable[[], np.ndarray]]]:
    sync: Any = gym.make_vec(
        env_id, num_envs=n, vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )  # fmt: skip
    native: Any = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    bare = _Bare(env_id, n)
    return {
        "sync": (sync, lambda: np.stack(sync.call("action_masks"))),
        "native": (native, native.action_masks),
        "bare loop": (bare, bare.masks),
    }


def measure(env_id: str, n: int, steps: int, rounds: int) -> dict[str, Any]:
    """CPU seconds per env step of each variant, interleaved step by step.

    All variants start from the same seeds and get the same actions, so they walk the
    same states; each vector step runs every variant in turn (noise hits all alike).
    Garbage collection runs untimed between steps, so no collection of the shared heap
    lands on one variant by chance.
    """
    variants = _variants(env_id, n)
    space = gym.make(env_id).action_space
    cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
    gc.disable()
    try:
        for r in range(rounds):
            _round(variants, space, steps, r, cpu)
    finally:
        gc.enable()
    return _summary(env_id, n, n * steps * rounds, cpu)


def _round(
    variants: dict[str, Any], space: gym.Space, steps: int, r: int, cpu: dict[str, float]
) -> None:
    rng = np.random.default_rng(r)
    masks: dict[str, np.ndarray] = {}
    for name, (venv, get_masks) in variants.items():
        gc.collect()
        t = time.process_time()
        venv.reset(seed=1000 * r)
        masks[name] = get_masks()
        cpu[name] += time.process_time() - t
    for k in range(steps):
        ref = masks["sync"]
        for name in variants:  # same states, same masks
            np.testing.assert_array_equal(masks[name], ref)
        actions = _choose(rng, ref, space)
        for name, (venv, get_masks) in variants.items():
            gc.collect(1 if k % 10 else 2)
            t = time.process_time()
            venv.step(actions)
            masks[name] = get_masks()
            cpu[name] += time.process_time() - t


def _summary(env_id: str, n: int, total: int, cpu: dict[str, float]) -> dict[str, Any]:
    sps = {name: total / s for name, s in cpu.items()}
    return {
        "env_id": env_id,
        "num_envs": n,
        "env_steps_per_variant": total,
        "steps_per_s": {k: round(v, 1) for k, v in sps.items()},
        "native_vs_sync": round(sps["native"] / sps["sync"], 3),
        "bare_vs_sync": round(sps["bare loop"] / sps["sync"], 3),
        "sync_overhead_share": round(1 - sps["sync"] / sps["bare loop"], 3),
    }


def profile(env_id: str, n: int, steps: int) -> dict[str, float]:
    """Share of the native vector env's step time spent in each part (cProfile)."""
    import cProfile
    import pstats

    native: Any = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    native.reset(seed=0)
    space = native.single_action_space
    rng = np.random.default_rng(0)
    prof = cProfile.Profile()
    for _ in range(steps):
        actions = _choose(rng, native.action_masks(), space)
        prof.enable()
        native.step(actions)
        prof.disable()
    stats: Any = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # (file, line, name) -> (cc, nc, tt, ct, callers)
    total = sum(v[2] for v in stats.values())

    def cum(name: str, file_part: str = "") -> float:
        return sum(v[3] for k, v in stats.items() if k[2] == name and file_part in k[0]) / total

    return {
        "sub-env step (ClusterEnvBase.step)": round(cum("step", "envs/base.py"), 3),
        "  of which _get_obs (encoder)": round(cum("_get_obs"), 3),
        "  of which _take_action (simulator)": round(cum("_take_action"), 3),
        "  of which _info (incl. mask)": round(cum("_info", "envs/base.py"), 3),
        "sub-env resets": round(cum("reset", "envs/base.py"), 3),
        "batch_infos (Gymnasium info layout)": round(cum("batch_infos"), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=60, help="vector steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", help="env id (default: all)")
    parser.add_argument("--profile", action="store_true", help="only profile the native env")
    args = parser.parse_args()
    if args.profile:
        shares = {e: profile(e, args.num_envs, args.steps) for e in args.env or env_ids()}
        print(json.dumps(shares, indent=2))
        write_profile(shares, f"{_command(args)} --profile")
        return
    command = _command(args)
    rows = []
    for env_id in args.env or env_ids():
        row = measure(env_id, args.num_envs, args.steps, args.rounds)
        print(json.dumps(row), flush=True)
        rows.append(row)
    write(rows, command)


def _command(args: argparse.Namespace) -> str:
    return (
        f".venv/bin/python benchmarks/bench_vector_env.py --num-envs {args.num_envs} "
        f"--steps {args.steps} --rounds {args.rounds}"
    )


def write_profile(shares: dict[str, dict[str, float]], command: str) -> None:
    """Append the profile to vector_env.md / .json (after a speed run)."""
    path = RESULTS / "vector_env.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data["profile"] = {"command": command, "shares_of_step_time": shares}
    path.write_text(json.dumps(data, indent=2) + "\n")
    ids = list(shares)
    lines = [
        f"## Where the native env's step time goes (`{command}`)",
        "",
        "Share of `step()` time (cProfile, cumulative; the parts overlap as indented).",
        "",
        "| part | " + " | ".join(short_env_id(e) for e in ids) + " |",
        "|---|" + "---:|" * len(ids),
    ]
    for part in shares[ids[0]]:
        lines.append(f"| {part} | " + " | ".join(f"{shares[e][part]:.0%}" for e in ids) + " |")
    md = RESULTS / "vector_env.md"
    text = md.read_text().split("\n## Where the native")[0].rstrip("\n") if md.is_file() else ""
    md.write_text(text + "\n\n" + "\n".join(lines) + "\n")


def write(rows: list[dict[str, Any]], command: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "vector_env.json").write_text(
        json.dumps({"command": command, "results": rows}, indent=2) + "\n"
    )
    lines = [
        f"# Native vector env vs SyncVectorEnv (`{command}`)",
        "",
        "Env steps per CPU second, masked-random actions, default presets, SAME_STEP",
        "autoreset for both; variants interleaved step by step on the same states. `bare loop` = the bare envs stepped in a",
        "Python loop (the simulator + encoder floor; `bare / sync` is the most any vector",
        "env without wrappers can gain).",
        "",
        "| env | N | sync steps/s | native steps/s | bare loop steps/s | native / sync | bare / sync |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r["steps_per_s"]
        lines.append(
            f"| {short_env_id(r['env_id'])} | {r['num_envs']} | {s['sync']:,.0f} | "
            f"{s['native']:,.0f} | {s['bare loop']:,.0f} | {r['native_vs_sync']:.2f} | "
            f"{r['bare_vs_sync']:.2f} |"
        )
    (RESULTS / "vector_env.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
