#!/usr/bin/env bash
# Train the MetisAllocation agents for the issue-4 result and ablations:
# PPO and A2C on MetisAllocation-v0 (MultiDiscrete), DQN on MetisAllocationDiscrete-v0,
# each with job_features in {fitted, oracle, no_curve}. Rewards use the quality-gap
# component (GAP_WEIGHT, default 1): the gain-only return is nearly the same for every
# policy that lets all jobs converge. benchmarks/bench_metis_agents.py evaluates them.
# Usage: TIMESTEPS=300000 scripts/train_metis_agents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TIMESTEPS=${TIMESTEPS:-300000}
SEED=${SEED:-0}
GAP_WEIGHT=${GAP_WEIGHT:-1.0}
OUT=${OUT:-runs/metis}
for features in ${FEATURES:-fitted oracle no_curve}; do
    kwargs="{\"job_features\": \"$features\", \"gap_weight\": $GAP_WEIGHT}"
    for pair in ${PAIRS:-ppo:MetisAllocation-v0 a2c:MetisAllocation-v0 dqn:MetisAllocationDiscrete-v0}; do
        algo=${pair%%:*}; env=${pair#*:}
        SECONDS=0
        .venv/bin/cluster-envs train --algo "$algo" --env "cluster_envs/$env" --env-kwargs "$kwargs" \
            --timesteps "$TIMESTEPS" --seed "$SEED" --eval-freq 20000 --eval-episodes 5 \
            --out "$OUT/$features/$algo" --no-progress ${FORCE:+--force}
        echo "$features/$algo: ${SECONDS}s wall" | tee -a "$OUT/train_wall.txt"
    done
done
