"""The earlier MetisAllocation specialist on every family's split (issue 13's comparison).

Plays ``pretrained:MetisAllocation-v0`` as the registry builds it (the env with the
card's observation and action, weights fitted to the env) on each family's ``SPLIT``
over ``SEEDS`` and prints each family's mean quality AUC and the per-seed values (or why
it cannot play there).

    python benchmarks/bench_metis_specialist.py SPLIT SEEDS [FAMILIES]
    python benchmarks/bench_metis_specialist.py test 100,101,...,109
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the envs)
from cluster_envs.envs.rollout import rollout
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_agent
from cluster_envs.policies.trained import agent_env_kwargs
from cluster_envs.workload.families import family_names


def main() -> None:
    agent = make_agent("pretrained:MetisAllocation-v0")
    split, seeds = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    fams = sys.argv[3].split(",") if len(sys.argv) > 3 else family_names("metis")
    for fam in fams:
        try:
            kwargs = agent_env_kwargs(agent, {"family": fam, "split": split})
            env = gym.make("cluster_envs/MetisAllocation-v0", **kwargs)
            agent.fit_env(env)
            v = [rollout(env, agent, s).metrics["quality_auc"] for s in seeds]
            print(fam, round(float(np.mean(v)), 4), v, flush=True)
        except ConfigError as e:
            print(fam, "CANNOT", str(e)[:150], flush=True)


if __name__ == "__main__":
    main()
