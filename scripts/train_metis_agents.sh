#!/usr/bin/env bash
# Train the MetisAllocation agents of the issue-4 result and its ablations into $OUT/<run>/.
# Recipe (the Metis entries of agents/hyperparams/*.yml): warm start from SLAQ by behaviour
# cloning + DAgger (agents/imitation.py), then RL on the quality_auc reward (its return is
# n x the quality AUC).
#   fitted/ppo, oracle/ppo, no_curve/ppo   PPO, job_features fitted (default) / oracle / no_curve
#   fitted/a2c                             A2C, same recipe
#   fitted/dqn                             DQN on the DL2-style Discrete variant
#   scratch/ppo                            PPO without the warm start (ablation; lr 3e-4)
# benchmarks/bench_metis_agents.py evaluates them. Each run takes ~10-25 min on one core.
# Usage: [RUNS="fitted/ppo oracle/ppo"] [TIMESTEPS=100000] scripts/train_metis_agents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TIMESTEPS=${TIMESTEPS:-100000}
SEED=${SEED:-0}
OUT=${OUT:-runs/metis}
RUNS=${RUNS:-fitted/ppo oracle/ppo no_curve/ppo fitted/a2c fitted/dqn scratch/ppo}
WARM=(--pretrain slaq --pretrain-episodes 100 --pretrain-epochs 30 --pretrain-dagger-rounds 4)
mkdir -p "$OUT"
for run in $RUNS; do
    features=${run%%/*}; algo=${run#*/}
    env=cluster_envs/MetisAllocation-v0; extra=("${WARM[@]}")
    case $run in
        */dqn)
            env=cluster_envs/MetisAllocationDiscrete-v0
            extra=(--pretrain slaq --pretrain-episodes 30 --pretrain-epochs 10
                   --pretrain-dagger-rounds 2) ;;
        scratch/*)
            features=fitted
            extra=(--hyperparams '{learning_rate: 3.0e-4, ent_coef: 0.01}') ;;
    esac
    SECONDS=0
    .venv/bin/cluster-envs train --algo "$algo" --env "$env" \
        --env-kwargs "{\"job_features\": \"$features\"}" "${extra[@]}" \
        --timesteps "$TIMESTEPS" --seed "$SEED" --eval-freq 10000 --eval-episodes 10 \
        --out "$OUT/$run" --no-progress ${FORCE:+--force}
    echo "$run: ${SECONDS}s wall" | tee -a "$OUT/train_wall.txt"
done
