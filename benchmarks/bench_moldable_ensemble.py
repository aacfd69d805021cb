"""A probability-averaged ensemble of MoldableScheduling clones, on validation splits.

The lookahead-multi clones differ a lot across training seeds (one fails philly-vc at 2.8x
threshold-eta, benchmarks/results/generalist_moldable.md); averaging several seeds'
action probabilities is the usual way to cut that variance. This plays such an ensemble
(each model adapted to every family's cluster shape, masked probabilities summed, the most
probable action taken) on every listed family and writes the rows in the format of
``python -m agents.generalist evaluate``, the heuristics' rows copied from an earlier
evaluate file with the same families, split and seeds:

    python benchmarks/bench_moldable_ensemble.py --models A.zip B.zip \
        --heuristics-from benchmarks/results/generalist_moldable_val_best_shipped.json \
        --out benchmarks/results/generalist_moldable_val_best_ensemble2.json

Prints, per family, the ensemble's mean JCT over the best heuristic's (lower is better).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from agents.generalist import families_of, make_env, play, spec_of, with_observation_of
from agents.set_policy import adapt


class Ensemble:
    """Acts with the action of highest summed masked probability over ``models``."""

    name = "agent"

    def __init__(self, models: list[Any]) -> None:
        self.models = models

    def act(self, env: Any, obs: np.ndarray, info: dict[str, Any]) -> int:
        mask = env.unwrapped.action_masks()
        total = None
        with torch.no_grad():
            for model in self.models:
                tensor, _ = model.policy.obs_to_tensor(obs)
                dist = model.policy.get_distribution(tensor, action_masks=mask)
                probs = dist.distribution.probs[0].numpy()
                total = probs if total is None else total + probs
        return int(np.argmax(total))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", required=True, help="MaskablePPO SetPolicy zips")
    ap.add_argument("--heuristics-from", required=True,
                    help="an evaluate file (same families, split, seeds) for the heuristics")  # fmt: skip
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    earlier = json.loads(Path(args.heuristics_from).read_text())
    if earlier.get("env") != spec_of("moldable").env_id:
        raise SystemExit(f"{args.heuristics_from}: not a MoldableScheduling evaluate file")
    models = [MaskablePPO.load(p, device="cpu") for p in args.models]
    spec = with_observation_of(models[0], spec_of("moldable"))
    seeds, split = earlier["seeds"], earlier["split"]
    rows: dict[str, Any] = {}
    start = time.process_time()
    for fam in families_of(",".join(earlier["rows"]), spec):
        env = make_env(fam, split, 12 if earlier.get("quick") else None, spec)
        agent = Ensemble([adapt(m, env) for m in models])
        heuristics = {p: v for p, v in earlier["rows"][fam].items() if p != "agent"}
        rows[fam] = {**heuristics, "agent": play(env, agent, seeds, spec.metric)}
        best = min(float(np.mean(v)) for p, v in heuristics.items() if p != "random")
        print(fam, round(float(np.mean(rows[fam]["agent"])) / best, 4), flush=True)
    Path(args.out).write_text(json.dumps({
        "model": "ensemble:" + ",".join(args.models), "env": spec.env_id, "split": split,
        "quick": earlier.get("quick", False), "seeds": seeds, "rows": rows,
        "heuristics_from": args.heuristics_from,
        "cpu_s": round(time.process_time() - start, 1)}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
