#!/usr/bin/env bash
# Issue 13: the generalist MoldableScheduling candidate (agents/generalist.py).
# MaskablePPO + SetPolicy on scale-free observations of the `mixed` family's train split,
# BC + 1 DAgger round from threshold-eta (20 episodes each), then 12,288 PPO steps
# (4 envs = 2 groups x 2 sharing workload seeds, input-dependent baselines; ABLATION=no_vr
# turns them off), checkpoint chosen on the validation split only; then the test-split
# table (--quick: 12 jobs per episode, seeds 100-109, as the generalization suite's --quick).
# Budget: 12k env steps + 40 demo episodes; wall ~12 min on a loaded 2-core machine.
# Ablations (one ingredient off, the rest and the seed as the candidate's), e.g.
# `ABLATION=flat RUN=runs/generalist/flat scripts/train_generalist.sh`:
#   no_vr          independent workload seeds per env (no input-dependent baseline)
#   no_warm_start  no BC/DAgger from threshold-eta: PPO from random weights, same PPO steps
#   flat           flat MLP over the same scale-free features instead of the SetPolicy set encoder
#   one_family     trained (and checkpoint chosen) on synthetic-64 only (its train/validation
#                  splits): the `mixed` cluster (16 x 4 T4), one workload generator
# PYTHON overrides the interpreter (default .venv/bin/python, e.g. from a git worktree);
# SEED the training seed (default 0, the candidate's; validation and test seeds are fixed).
# RECIPE (default: the candidate's, above) names a larger budget; ablations apply on top:
#   long           BC + 3 DAgger rounds from threshold-eta, 40 episodes each, then 120k PPO
#                  steps at lr 3e-5 (10x the steps, 1/3 the rate), validation every 8192 steps
#   families       pure imitation, no PPO: BC + 3 DAgger rounds from threshold-eta, 20 episodes
#                  per round on *each* moldable family's train split (its own cluster), one set
#                  of weights (--demo-families moldable)
#   lookahead      the candidate's budget with the lookahead teacher (agents/teacher.py) instead
#                  of threshold-eta for BC and DAgger
#   imitate        lookahead without PPO (--timesteps 0): the policy after its BC + 1 DAgger round
#   hints          imitate on observation scale_free_hints (--hints: each candidate heuristic's
#                  action now, cluster_envs/envs/moldable_hints.py); `imitate` is its no-hints
#                  ablation. PPO on top (12k steps from its weights):
#                  `python -m agents.generalist train --hints --init-model RUN/best_model.zip
#                  --teacher lookahead --timesteps 12000 --eval-freq 2048 --out RUN_PPO`
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/generalist/full}
PYTHON=${PYTHON:-.venv/bin/python}
SEED=${SEED:-0}
BUDGET=(--timesteps 12000 --pretrain-episodes 20 --dagger-rounds 1 --eval-freq 2048)
case "${RECIPE:-}" in
    "") ;;
    long) BUDGET=(--timesteps 120000 --pretrain-episodes 40 --dagger-rounds 3 --lr 3e-5
                  --eval-freq 8192) ;;
    families) BUDGET=(--timesteps 0 --pretrain-episodes 20 --dagger-rounds 3
                      --demo-families moldable) ;;
    lookahead) BUDGET+=(--teacher lookahead) ;;
    imitate) BUDGET+=(--teacher lookahead --timesteps 0) ;;
    hints) BUDGET+=(--teacher lookahead --timesteps 0 --hints) ;;
    *) echo "unknown RECIPE=${RECIPE} (long|families|lookahead|imitate|hints)" >&2; exit 2 ;;
esac
EXTRA=()
case "${ABLATION:-}" in
    "") ;;
    no_vr) EXTRA=(--no-shared-seeds) ;;
    no_warm_start) EXTRA=(--pretrain-episodes 0) ;;
    flat) EXTRA=(--flat) ;;
    one_family) EXTRA=(--family synthetic-64) ;;
    *) echo "unknown ABLATION=${ABLATION} (no_vr|no_warm_start|flat|one_family)" >&2; exit 2 ;;
esac
# Later options win: --pretrain-episodes 0 overrides the budget's.
nice -n 10 "$PYTHON" -m agents.generalist train --out "$RUN" "${BUDGET[@]}" \
    --seed "$SEED" "${EXTRA[@]}"
nice -n 10 "$PYTHON" -m agents.generalist evaluate --model "$RUN/best_model.zip" \
    --out "$RUN/test_quick.json" --quick
