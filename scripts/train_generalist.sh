#!/usr/bin/env bash
# Issue 13: the generalist MoldableScheduling candidate (agents/generalist.py).
# MaskablePPO + SetPolicy on scale-free observations of the `mixed` family's train split,
# BC + 1 DAgger round from threshold-eta (20 episodes each), then 12,288 PPO steps
# (4 envs = 2 groups x 2 sharing workload seeds, input-dependent baselines; ABLATION=no_vr
# turns them off), checkpoint chosen on the validation split only; then the test-split
# table (--quick: 12 jobs per episode, seeds 100-109, as the generalization suite's --quick).
# Budget: 12k env steps + 40 demo episodes; wall ~12 min on a loaded 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/generalist/full}
EXTRA=()
if [ "${ABLATION:-}" = "no_vr" ]; then EXTRA=(--no-shared-seeds); fi
nice -n 10 .venv/bin/python -m agents.generalist train --out "$RUN" --timesteps 12000 \
    --pretrain-episodes 20 --dagger-rounds 1 --eval-freq 2048 "${EXTRA[@]}"
nice -n 10 .venv/bin/python -m agents.generalist evaluate --model "$RUN/best_model.zip" \
    --out "$RUN/test_quick.json" --quick
