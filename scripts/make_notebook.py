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

This notebook is what a researcher would write to use **cluster-envs** through its public
API only: make an env with `gym.make`, train Stable-Baselines3 MaskablePPO, PPO, A2C and
DQN briefly on it, save the models, and compare them on held-out seeds with the strongest
heuristics and the shipped pretrained agents through the benchmark (`cluster-envs
benchmark`, which writes `results.json` and `summary.md` with 95% confidence intervals).
MetisAllocation and JobPlacement are compared the same way (SLAQ; first-fit), with their
shipped agents, as training them takes longer than a notebook should.

The budgets are tiny so the notebook runs in about two minutes on two cores. Raise
`TIMESTEPS` (e.g. to 200_000, with `CLUSTER_ENVS_NB_TIMESTEPS`) and `SEEDS` for real
results: with this budget the freshly trained agents are far from the heuristics.""",
    ),
    (
        "code",
        """import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from scipy import stats
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.callbacks import BaseCallback

import cluster_envs  # registers the cluster_envs/* ids

ENV_ID = "cluster_envs/MoldableScheduling-v0"
TIMESTEPS = int(os.environ.get("CLUSTER_ENVS_NB_TIMESTEPS", "1024"))
SEEDS = os.environ.get("CLUSTER_ENVS_NB_SEEDS", "100-102")  # held out: training uses seed 0+
TRAIN_SEED = 0
RUNS = Path("runs/notebook")
RUNS.mkdir(parents=True, exist_ok=True)
CLI = str(Path(sys.executable).with_name("cluster-envs"))  # the installed command""",
    ),
    ("md", "## The environment\n\nOne decision: which queued job to start and at how many GPUs."),
    (
        "code",
        """env = gym.make(ENV_ID)
obs, info = env.reset(seed=TRAIN_SEED)
fields = env.unwrapped.encoder.describe()
print(env.observation_space, env.action_space)
print(len(fields), "observation fields, e.g.", fields[:6])
print("feasible actions now:", int(info["action_mask"].sum()), "of", env.action_space.n)""",
    ),
    ("md", "## Train MaskablePPO (uses the action masks), PPO, A2C and DQN"),
    (
        "code",
        """class Progress(BaseCallback):
    \"\"\"Prints the step count and elapsed time a few times per run.\"\"\"

    def __init__(self, name, total, every=256):
        super().__init__()
        self.name, self.total, self.every, self.start = name, total, every, time.perf_counter()

    def _on_step(self):
        if self.num_timesteps % self.every == 0 or self.num_timesteps == self.total:
            elapsed = time.perf_counter() - self.start
            print(f"{self.name}: {self.num_timesteps:,}/{self.total:,} steps, {elapsed:.0f} s", flush=True)
        return True


# PPO collects n_steps per update: keep it within the budget for short runs.
ppo_kwargs = {"n_steps": min(512, TIMESTEPS), "batch_size": 64}
algos = {
    "MaskablePPO": (MaskablePPO, ppo_kwargs),
    "PPO": (PPO, ppo_kwargs),
    "A2C": (A2C, {}),
    "DQN": (DQN, {"learning_starts": min(500, TIMESTEPS // 2)}),
}
model_paths = {}
for name, (algo, kwargs) in algos.items():
    model = algo("MlpPolicy", gym.make(ENV_ID), seed=TRAIN_SEED, verbose=0, **kwargs)
    model.learn(total_timesteps=TIMESTEPS, callback=Progress(name, TIMESTEPS))
    model_paths[name] = RUNS / f"{name}.zip"
    model.save(model_paths[name])
    print(f"{name}: trained {TIMESTEPS} steps -> {model_paths[name]}")""",
    ),
    (
        "md",
        """## Benchmark on held-out seeds

The benchmark plays every policy on the same held-out seeds (a trained model through the
env as `sb3:PATH`, a heuristic through the simulator, with identical metrics) and writes
`results.json` (one row per policy and seed) and `summary.md` (mean ± 95% CI).""",
    ),
    (
        "code",
        """def benchmark(env, policies, out):
    \"\"\"Run `cluster-envs benchmark` and return its rows as a DataFrame.\"\"\"
    cmd = [CLI, "benchmark", "--env", env, "--policies", ",".join(policies),
           "--seeds", SEEDS, "--out", str(out), "--force", "--no-plots", "--no-progress"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    print(f"{env}: {len(policies)} policies in {time.perf_counter() - start:.0f} s")
    rows = json.loads((out / "results.json").read_text())["rows"]
    return pd.DataFrame([{"policy": r["policy"], "seed": r["seed"], **r["metrics"]} for r in rows])


def ci_table(frame, metrics):
    \"\"\"Mean ± 95% Student-t half-width per policy, best first.\"\"\"
    out = {}
    for policy, group in frame.groupby("policy", sort=False):
        cells = {}
        for m in metrics:
            values = group[m].to_numpy()
            half = stats.sem(values) * stats.t.ppf(0.975, len(values) - 1) if len(values) > 1 else float("nan")
            cells[m] = f"{values.mean():,.3g} ± {half:,.2g}"
        out[policy] = cells
    return pd.DataFrame(out).T


def bar_chart(frame, metric, title, label):
    g = frame.groupby("policy", sort=False)[metric]
    mean, sem = g.mean(), g.sem().fillna(0)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(mean.index, mean, yerr=1.96 * sem, capsize=4, color="tab:blue")
    ax.set_ylabel(label)
    ax.set_title(title)
    plt.xticks(rotation=30, ha="right")
    plt.tight_layout()
    plt.show()


moldable_policies = ["fifo", "sjf", "tetris", "best-threshold", "pretrained:MoldableScheduling-v0"]
moldable_policies += [f"sb3:{path}" for path in model_paths.values()]
moldable = benchmark("MoldableScheduling-v0", moldable_policies, RUNS / "moldable")
moldable["policy"] = moldable["policy"].str.replace(f"sb3:{RUNS}/", "").str.replace(".zip", " (here)")
ci_table(moldable, ["avg_jct_s", "p95_jct_s", "jct_ratio_to_lower_bound"])""",
    ),
    (
        "code",
        """bar_chart(moldable, "avg_jct_s", f"MoldableScheduling-v0, seeds {SEEDS}", "average JCT (s), 95% CI")
display(Markdown((RUNS / "moldable" / "summary.md").read_text()))""",
    ),
    (
        "md",
        """## MetisAllocation (model quality) and JobPlacement (total JCT)

SLAQ is the strongest MetisAllocation baseline (quality AUC: higher is better); consolidated
first-fit (`fifo`) the strongest JobPlacement baseline. Both are compared with the shipped
agents (`pretrained:`), on the same held-out seeds.""",
    ),
    (
        "code",
        """metis = benchmark("MetisAllocation-v0", ["slaq", "optimus", "fair", "pretrained:MetisAllocation-v0"], RUNS / "metis")
placement = benchmark("JobPlacement-v0", ["fifo", "fifo-best-fit", "fifo-spread", "pretrained:JobPlacement-v0"], RUNS / "placement")
bar_chart(metis, "quality_auc", "MetisAllocation-v0", "quality AUC, 95% CI")
display(ci_table(metis, ["quality_auc", "time_to_quality_s", "avg_jct_s"]))
display(ci_table(placement, ["avg_jct_s", "p95_jct_s"]))
assert len(moldable) == len(moldable_policies) * len(moldable.seed.unique())""",
    ),
    (
        "md",
        """For the full comparison (all baselines, several workloads, plots), use the command
line, e.g. the main job:

```
cluster-envs benchmark --suite default
cluster-envs benchmark --env MoldableScheduling-v0 --policies fifo,sjf,tetris,best-threshold,pretrained:MoldableScheduling-v0,sb3:runs/notebook/PPO.zip --workload default,pollux-test --seeds 100-109 --out results/moldable
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
