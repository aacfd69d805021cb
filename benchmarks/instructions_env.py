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
from profile_env import play_episode  # benchmarks/ is on sys.path when run as a script

import cluster_envs  # noqa: F401  (registers the ids)


def main() -> None:
    env_id, episodes = sys.argv[1], int(sys.argv[2])
    kwargs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    env = gym.make(env_id, **kwargs)
    rng, steps = np.random.default_rng(0), 0
    env.reset(seed=999)  # warm-up: imports and first-use caches in both runs
    for episode in range(episodes):
        steps += play_episode(env, rng, episode)
    print("steps", steps, file=sys.stderr)


if __name__ == "__main__":
    main()
