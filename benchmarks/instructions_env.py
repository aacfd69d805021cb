"""Play masked-random episodes of one env, for counting instructions per step.

Clocks on a shared machine swing by tens of percent; instruction counts do not. Run it
twice under callgrind, with E episodes and with none, and divide the difference by the
steps it prints (issue 11's sixth wave, ``benchmarks/results/envs_profile.md``)::

    PYTHONHASHSEED=0 PYTHONPATH=. valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/instructions_env.py cluster_envs/JobPlacement-v0 6

Usage: ``instructions_env.py ENV_ID EPISODES [key=value ...]`` (string env kwargs, e.g.
``observation=scale_free``). Prints ``steps N`` on stderr.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)


def main() -> None:
    env_id, episodes = sys.argv[1], int(sys.argv[2])
    kwargs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    env = gym.make(env_id, **kwargs)
    rng, steps = np.random.default_rng(0), 0
    _, info = env.reset(seed=999)  # warm-up: imports and first-use caches in both runs
    for episode in range(episodes):
        _, info = env.reset(seed=episode)
        done = False
        while not done:
            if isinstance(env.action_space, gym.spaces.Discrete):
                action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            else:
                action = env.action_space.sample()
            _, _, terminated, truncated, info = env.step(action)
            steps, done = steps + 1, terminated or truncated
    print("steps", steps, file=sys.stderr)


if __name__ == "__main__":
    main()
