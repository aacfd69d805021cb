#!/usr/bin/env bash
# Retrain a shipped agent agents/pretrained/<EnvName-vN>.{zip,json}: train ALGO on ENV
# (agents/hyperparams/<algo>.yml, the env's default preset), seed SEED, then publish
# best_model.zip with its card (test metrics on held-out seeds 100-119 next to random
# masked actions). Overrides: ENV, ALGO, RUN, TIMESTEPS, SEED, HYPERPARAMS, FORCE=1.
#   scripts/train_pretrained.sh          # MoldableScheduling-v0, the shipped settings below
#   ENV=cluster_envs/JobPlacement-v0 scripts/train_pretrained.sh
#   ENV=cluster_envs/MetisAllocation-v0 ALGO=ppo scripts/train_pretrained.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=${ENV:-cluster_envs/MoldableScheduling-v0}
ALGO=${ALGO:-maskable_ppo}
NAME=${ENV#*/}
RUN=${RUN:-runs/pretrained-$NAME}
if [ "$ENV" = "cluster_envs/MoldableScheduling-v0" ]; then
    # The shipped moldable agent: a lower learning rate and more entropy than the YAML
    # defaults (those collapse to a constant policy after ~60k steps).
    HYPERPARAMS=${HYPERPARAMS:-"{learning_rate: 1.0e-4, ent_coef: 0.02, n_steps: 512}"}
    TIMESTEPS=${TIMESTEPS:-200000}
fi
TIMESTEPS=${TIMESTEPS:-80000}
SEED=${SEED:-0}
SECONDS=0
.venv/bin/cluster-envs train --algo "$ALGO" --env "$ENV" \
    ${HYPERPARAMS:+--hyperparams "$HYPERPARAMS"} \
    --timesteps "$TIMESTEPS" --seed "$SEED" --eval-freq 20000 --eval-episodes 5 \
    --out "$RUN" --no-progress ${FORCE:+--force}
wall=$SECONDS
.venv/bin/python -m agents.publish "$RUN" --seeds 100-119 --wall-s "$wall"
