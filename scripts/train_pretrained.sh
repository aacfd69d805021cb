#!/usr/bin/env bash
# Retrain a shipped agent agents/pretrained/<EnvName-vN>.{zip,json}: train ALGO on ENV
# (agents/hyperparams/<algo>.yml, the env's default preset), seed SEED, then publish
# best_model.zip with its card (test metrics on held-out seeds 100-119 next to random
# masked actions). Overrides: ENV, ALGO, RUN, TIMESTEPS, SEED, HYPERPARAMS, FORCE=1.
#   scripts/train_pretrained.sh          # MoldableScheduling-v0, the shipped settings below
#   ENV=cluster_envs/JobPlacement-v0 scripts/train_pretrained.sh
#   ENV=cluster_envs/MetisAllocation-v0 scripts/train_pretrained.sh   # warm start + PPO
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
if [ "$ENV" = "cluster_envs/MetisAllocation-v0" ]; then
    # The shipped Metis agent: PPO with SlotPolicy (agents/hyperparams/ppo.yml), warm-started
    # from SLAQ by cloning + 4 DAgger rounds, then 100k steps of PPO on the quality_auc reward
    # (the fitted/ppo run of scripts/train_metis_agents.sh).
    ALGO=ppo
    PRETRAIN=${PRETRAIN:-"--pretrain slaq --pretrain-episodes 100 --pretrain-epochs 30 --pretrain-dagger-rounds 4"}
    TIMESTEPS=${TIMESTEPS:-100000}
    EVAL=(--eval-freq 10000 --eval-episodes 10)
fi
if [ "$ENV" = "cluster_envs/JobPlacement-v0" ]; then
    # The shipped placement agent: MaskablePPO cloned from consolidated first-fit (`fifo`)
    # + 3 DAgger rounds; the 100k PPO steps after it made it worse on held-out seeds, so
    # the warm start (pretrained_model.zip) is what ships.
    PRETRAIN=${PRETRAIN:-"--pretrain fifo --pretrain-episodes 50 --pretrain-epochs 20 --pretrain-dagger-rounds 3"}
    TIMESTEPS=${TIMESTEPS:-100000}
    MODEL=${MODEL:-pretrained_model.zip}
fi
TIMESTEPS=${TIMESTEPS:-80000}
SEED=${SEED:-0}
if [ -z "${EVAL+x}" ]; then EVAL=(--eval-freq 20000 --eval-episodes 5); fi
SECONDS=0
.venv/bin/cluster-envs train --algo "$ALGO" --env "$ENV" \
    ${HYPERPARAMS:+--hyperparams "$HYPERPARAMS"} ${PRETRAIN:-} \
    --timesteps "$TIMESTEPS" --seed "$SEED" "${EVAL[@]}" \
    --out "$RUN" --no-progress ${FORCE:+--force}
wall=$SECONDS
.venv/bin/python -m agents.publish "$RUN" --seeds 100-119 --wall-s "$wall" \
    --model "${MODEL:-best_model.zip}"
