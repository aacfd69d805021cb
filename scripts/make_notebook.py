"""Write notebooks/benchmark_rl_algorithms.ipynb (the source of truth for its cells).

Usage: .venv/bin/python scripts/make_notebook.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

OUT = Path(__file__).resolve().parents[1] / "notebooks" / "benchmark_rl_algorithms.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        """# Benchmarking RL algorithms against scheduling heuristics

This notebook is what a researcher would write to use **cluster-envs**: make an env with
`gym.make`, train Stable-Baselines3 PPO, A2C and DQN briefly, and compare them with the
heuristic baselines on held-out seeds, with 95% confidence intervals and plots.

The budgets below are tiny so the notebook runs in a minute on a laptop (and in the test
suite). Raise `TIMESTEPS` (e.g. to 200_000) and `EVAL_SEEDS` for real results.""",
    ),
    (
        "code",
        """import os

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, DQN, PPO

import cluster_envs  # registers the cluster_envs/* ids
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.harness.stats import mean_ci

ENV_ID = "cluster_envs/MoldableScheduling-v0"
ENV_KWARGS = {"preset": os.environ.get("CLUSTER_ENVS_NB_PRESET", "toy")}
TIMESTEPS = int(os.environ.get("CLUSTER_ENVS_NB_TIMESTEPS", "5000"))
EVAL_SEEDS = list(range(100, 100 + int(os.environ.get("CLUSTER_ENVS_NB_SEEDS", "5"))))
TRAIN_SEED = 0  # training episodes are drawn from seed 0's stream; evaluation uses 100+""",
    ),
    ("md", "## The environment\n\nOne decision: which queued job to start and at how many GPUs."),
    (
        "code",
        """env = gym.make(ENV_ID, **ENV_KWARGS)
obs, info = env.reset(seed=TRAIN_SEED)
fields = env.unwrapped.encoder.describe()
print(env.observation_space, env.action_space)
print(len(fields), "observation fields, e.g.", fields[:6])
print(env.unwrapped.render_mode, "| feasible actions now:", int(info["action_mask"].sum()))""",
    ),
    ("md", "## Train PPO, A2C and DQN (and MaskablePPO, which uses the action masks)"),
    (
        "code",
        """# PPO collects n_steps per update: keep it within the budget for short runs.
ppo_kwargs = {"n_steps": min(2048, TIMESTEPS), "batch_size": 64}
algos = {
    "MaskablePPO": (MaskablePPO, ppo_kwargs),
    "PPO": (PPO, ppo_kwargs),
    "A2C": (A2C, {}),
    "DQN": (DQN, {"learning_starts": min(1000, TIMESTEPS // 2)}),
}
models = {}
for name, (algo, kwargs) in algos.items():
    train_env = gym.make(ENV_ID, **ENV_KWARGS)
    model = algo("MlpPolicy", train_env, seed=TRAIN_SEED, verbose=0, **kwargs)
    models[name] = model.learn(total_timesteps=TIMESTEPS)
    print(f"{name}: trained {TIMESTEPS} steps")""",
    ),
    ("md", "## Evaluate on held-out seeds, next to the baselines"),
    (
        "code",
        """class SB3Agent:
    \"\"\"Plays an SB3 model through the env (with masks when the model supports them).\"\"\"

    def __init__(self, model, name):
        self.model, self.name = model, name

    def act(self, env, obs, info):
        if isinstance(self.model, MaskablePPO):
            return int(self.model.predict(obs, action_masks=info["action_mask"], deterministic=True)[0])
        return int(self.model.predict(obs, deterministic=True)[0])


agents = {name: SB3Agent(model, name) for name, model in models.items()}
for policy in ["fifo", "fifo-skip"]:
    agents[policy] = HeuristicAgent(policy)

def eval_env_for(agent):
    # Trained models need the observation layout they were trained on; heuristics may look
    # past the agent's 8-job window, so give them a window as large as any queue here.
    extra = {"window": 64} if isinstance(agent, HeuristicAgent) else {}
    return gym.make(ENV_ID, **ENV_KWARGS, **extra)


rows = []
for name, agent in agents.items():
    eval_env = eval_env_for(agent)
    for seed in EVAL_SEEDS:
        result = rollout(eval_env, agent, seed)
        rows.append({"policy": name, "seed": seed, **result.metrics})
df = pd.DataFrame(rows)
df.head()""",
    ),
    (
        "code",
        """def ci_table(frame, metrics=("avg_jct_s", "p95_jct_s", "jct_ratio_to_lower_bound")):
    out = {}
    for policy, group in frame.groupby("policy", sort=False):
        out[policy] = {m: mean_ci(group[m]).format() for m in metrics}
    return pd.DataFrame(out).T


table = ci_table(df)
table""",
    ),
    (
        "code",
        """summary = df.groupby("policy", sort=False)["avg_jct_s"].agg(["mean", "std", "count"])
half = [mean_ci(df[df.policy == p]["avg_jct_s"]).half_width for p in summary.index]
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.bar(summary.index, summary["mean"], yerr=half, capsize=4, color="tab:blue")
ax.set_ylabel("average JCT (s), 95% CI")
ax.set_title(f"{ENV_ID.split('/')[-1]} ({ENV_KWARGS['preset']}), {len(EVAL_SEEDS)} held-out seeds")
plt.xticks(rotation=30)
plt.tight_layout()
plt.show()""",
    ),
    ("md", "## Completion-time distribution of the first held-out episode"),
    (
        "code",
        """fig, ax = plt.subplots(figsize=(6, 3.5))
for name, agent in agents.items():
    eval_env = eval_env_for(agent)
    rollout(eval_env, agent, EVAL_SEEDS[0])
    sim = eval_env.unwrapped.sim
    jct = np.sort([sim.finish_s[j] - job.submit_time_s for j, job in enumerate(sim.jobs)])
    ax.step(jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=name)
ax.set_xscale("log")
ax.set_xlabel("JCT (s)")
ax.set_ylabel("fraction of jobs")
ax.legend(fontsize=7)
plt.tight_layout()
plt.show()
assert len(df) == len(agents) * len(EVAL_SEEDS)""",
    ),
    (
        "md",
        """For the full comparison (all baselines, trained agents, several workloads, plots and
a results file), use the command line:

```
cluster-envs benchmark --env MoldableScheduling-v0 --policies fifo,sjf,best-threshold,pretrained:MoldableScheduling-v0 --workload default --seeds 100-109 --out results/
```""",
    ),
]


def main() -> None:
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for kind, text in CELLS:
        nb.cells.append(
            nbf.v4.new_markdown_cell(text) if kind == "md" else nbf.v4.new_code_cell(text)
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    nbf.write(nb, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
