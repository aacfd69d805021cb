#!/usr/bin/env bash
# Retrain the shipped agent agents/pretrained/MoldableScheduling-v0.{zip,json}:
# MaskablePPO (agents/hyperparams/maskable_ppo.yml) on cluster_envs/MoldableScheduling-v0
# (default preset), seed 0, then publish best_model.zip with its card (test metrics on
# seeds 100-119 next to random masked actions). Overrides: RUN, TIMESTEPS, SEED, FORCE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/pretrained-moldable}
TIMESTEPS=${TIMESTEPS:-80000}
SEED=${SEED:-0}
SECONDS=0
.venv/bin/cluster-envs train --algo maskable_ppo --env cluster_envs/MoldableScheduling-v0 \
    --timesteps "$TIMESTEPS" --seed "$SEED" --eval-freq 10000 --eval-episodes 10 \
    --out "$RUN" ${FORCE:+--force}
wall=$SECONDS
.venv/bin/python -m agents.publish "$RUN" --seeds 100-119 --wall-s "$wall"
