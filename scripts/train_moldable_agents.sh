#!/usr/bin/env bash
# Train MaskablePPO, PPO, A2C and DQN on MoldableScheduling-v0 for the issue-3 result
# (benchmarks/bench_moldable_agents.sh evaluates them). Training seeds come from SEED;
# evaluation uses seeds >= 100, never seen in training.
# Usage: PRESET=default TIMESTEPS=150000 scripts/train_moldable_agents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-default}
TIMESTEPS=${TIMESTEPS:-150000}
SEED=${SEED:-0}
OUT=${OUT:-runs/moldable-$PRESET}
for algo in ${ALGOS:-maskable_ppo ppo a2c dqn}; do
    SECONDS=0
    .venv/bin/cluster-envs train --algo "$algo" --env cluster_envs/MoldableScheduling-v0 \
        --env-kwargs "{\"preset\": \"$PRESET\"}" --timesteps "$TIMESTEPS" --seed "$SEED" \
        --eval-freq 20000 --eval-episodes 5 --out "$OUT/$algo" --no-progress ${FORCE:+--force}
    echo "$algo: ${SECONDS}s wall" | tee -a "$OUT/train_wall.txt"
done
