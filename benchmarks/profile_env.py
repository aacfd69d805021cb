"""cProfile one env's step path: masked random actions, resets included (issue 11).

Usage: ``.venv/bin/python benchmarks/profile_env.py cluster_envs/MetisAllocation-v0
[--steps 3000] [--observation scale_free] [--top 30]``. Plays masked-random episodes
(the bench's actions) once unprofiled for steps/s, then again under cProfile, and
prints the top functions by own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)


def play(env: gym.Env, steps: int) -> int:
    """Masked-random steps until at least ``steps`` (whole episodes); returns the count."""
    rng = np.random.default_rng(0)
    env.action_space.seed(0)
    done_steps = episode = 0
    while done_steps < steps:
        done_steps += play_episode(env, rng, episode)
        episode += 1
    return done_steps


def play_episode(env: gym.Env, rng: np.random.Generator, seed: int) -> int:
    """One masked-random episode from ``reset(seed=seed)``; returns its steps."""
    _, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        if isinstance(env.action_space, gym.spaces.Discrete):
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        else:
            action = env.action_space.sample()
        _, _, terminated, truncated, info = env.step(action)
        steps, done = steps + 1, terminated or truncated
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--observation", default="default")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    kwargs = {} if args.observation == "default" else {"observation": args.observation}
    env = gym.make(args.env_id, **kwargs)
    start = time.process_time()
    n = play(env, args.steps)
    print(f"{args.env_id} ({args.observation}): {n / (time.process_time() - start):,.0f} steps/s")
    profile = cProfile.Profile()
    profile.enable()
    play(env, args.steps)
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumtime").print_stats(args.top)


if __name__ == "__main__":
    main()
