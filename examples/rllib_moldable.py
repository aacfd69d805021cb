"""Train RLlib PPO on MoldableScheduling-v0 (the envs under Ray RLlib).

RLlib pins its own gymnasium (``ray[rllib]`` requires gymnasium==1.2.2, inside our
``>=1.2.2,<2`` range): install with ``pip install -e '.[ray]'``. The env is registered
with ``ray.tune.registry.register_env`` under a plain name, since RLlib builds envs in its
env runners from that name and a config dict (our JSON-serialisable kwargs).

Usage::

    .venv/bin/python examples/rllib_moldable.py --iterations 5 --preset toy
"""

from __future__ import annotations

import argparse
from typing import Any

RLLIB_ENV_NAME = "cluster_envs_moldable"


def make_env(config: dict[str, Any]) -> Any:
    """The env factory RLlib calls in each env runner."""
    import gymnasium as gym

    import cluster_envs  # noqa: F401  (registers the ids)

    return gym.make("cluster_envs/MoldableScheduling-v0", **dict(config))


def build(preset: str = "toy", seed: int = 0, batch: int = 256) -> Any:
    """A PPO algorithm on the moldable env (new API stack, one local env runner)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    register_env(RLLIB_ENV_NAME, make_env)
    config = (
        PPOConfig()
        .environment(RLLIB_ENV_NAME, env_config={"preset": preset})
        .env_runners(num_env_runners=0, rollout_fragment_length=batch)
        .training(train_batch_size_per_learner=batch, minibatch_size=min(128, batch), num_epochs=2)
        .debugging(seed=seed)
    )
    return config.build_algo()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--preset", default="toy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = build(args.preset, args.seed)
        for i in range(args.iterations):
            result = algo.train()
            runners = result.get("env_runners", {})
            print(
                f"iteration {i + 1}: episodes {runners.get('num_episodes_lifetime', 0)}, "
                f"mean return {runners.get('episode_return_mean', float('nan')):.2f}"
            )
        algo.stop()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
