"""Issue 13 (item 4): per-decision safeguards on the shipped moldable generalist, scored
on every moldable family's *validation* split only (seeds 500-507; no test split is read).

Each safeguard wraps the agent's deterministic action with a fallback read from the
hinted observation's heuristics (``env.unwrapped.encoder.hints``, the actions
``observation="scale_free_hints"`` encodes):

* ``none``: the agent as shipped;
* ``conf@T``: when the policy's largest masked action probability is below ``T``, play
  threshold-eta's hinted action (the best single heuristic) instead;
* ``vote@T``: the same, but the action most hinted heuristics pick;
* ``nowait``: when the agent waits while threshold-eta would start a job, start it;
* ``anyhint``: when the agent's action is no heuristic's hint, play threshold-eta's.

Prints, per safeguard, the geometric mean over families of agent / best heuristic of the
family (by mean JCT), the worst family, the geometric mean to threshold-eta and the share
of decisions changed; writes every seed's JCT to ``--out``.

Usage: ``python benchmarks/diag_moldable_safeguards.py --out F.json [--quick] [--modes ...]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401  (registers the envs)
from agents.generalist import MOLDABLE, VAL_SEEDS, families_of, heuristic, make_env, play
from agents.policy import PRETRAINED_DIR
from agents.set_policy import adapt

SPEC = dataclasses.replace(MOLDABLE, observation="scale_free_hints")
MODES = ("none", "conf@0.5", "conf@0.7", "conf@0.9", "vote@0.5", "vote@0.7", "vote@0.9",
         "nowait", "anyhint")  # fmt: skip


class Guarded:
    """The model's deterministic action, replaced by a heuristic's per ``mode``."""

    def __init__(self, model: Any, mode: str) -> None:
        self.model, self.name = model, "agent"
        self.kind, _, tau = mode.partition("@")
        self.tau = float(tau) if tau else 0.0
        self.changed = self.steps = 0

    def act(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> int:
        u: Any = env.unwrapped
        mask = u.action_masks()
        with torch.no_grad():
            o, _ = self.model.policy.obs_to_tensor(obs)
            dist = self.model.policy.get_distribution(o, action_masks=mask[None])
            probs = dist.distribution.probs[0].numpy()
        a = int(np.argmax(probs))
        self.steps += 1
        if self.kind == "none":
            return a
        hints = u.encoder.hints.actions(u.sim)
        eta = hints[0]  # HINT_POLICIES[0] is threshold-eta
        if self.kind == "nowait":
            fallback = eta if a == u.wait_action and eta not in (None, u.wait_action) else None
        elif self.kind == "anyhint":
            fallback = eta if a not in hints else None
        elif probs[a] >= self.tau:
            fallback = None
        elif self.kind == "conf":
            fallback = eta
        else:  # vote
            votes = [h for h in hints if h is not None]
            fallback = max(set(votes), key=votes.count) if votes else None
        if fallback is None or not mask[fallback] or fallback == a:
            return a
        self.changed += 1
        return int(fallback)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(PRETRAINED_DIR / "MoldableScheduling-v0.zip"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="12 jobs per episode")
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = MaskablePPO.load(args.model, device="cpu")
    modes = [m for m in args.modes.split(",") if m]
    fams = families_of("all", SPEC)
    rows: dict[str, Any] = {}
    heur: dict[str, Any] = {}
    for fam in fams:
        env = make_env(fam, "validation", 12 if args.quick else None, SPEC)
        heur[fam] = {p: play(env, heuristic(env, p), VAL_SEEDS) for p in SPEC.baselines}
        for mode in modes:
            agent = Guarded(adapt(model, env), mode)
            jct = play(env, agent, VAL_SEEDS)
            rows.setdefault(mode, {})[fam] = {
                "agent": jct,
                "changed": agent.changed / max(agent.steps, 1),
            }
    summary = {}
    for mode, per in rows.items():
        best = {f: np.mean(per[f]["agent"]) / min(np.mean(v) for v in heur[f].values())
                for f in fams}  # fmt: skip
        eta = {f: np.mean(per[f]["agent"]) / np.mean(heur[f]["threshold-eta"]) for f in fams}
        worst = max(best, key=lambda f: best[f])
        summary[mode] = {
            "geomean_to_best": float(np.exp(np.mean(np.log(list(best.values()))))),
            "worst_family": worst, "worst_to_best": float(best[worst]),
            "geomean_to_threshold_eta": float(np.exp(np.mean(np.log(list(eta.values()))))),
            "changed_share": float(np.mean([per[f]["changed"] for f in fams])),
        }  # fmt: skip
        s = summary[mode]
        print(f"{mode:10s} geo {s['geomean_to_best']:.4f} worst {worst} "
              f"{s['worst_to_best']:.4f} eta {s['geomean_to_threshold_eta']:.4f} "
              f"changed {s['changed_share']:.3f}", flush=True)  # fmt: skip
    with open(args.out, "w") as fh:
        json.dump({"quick": args.quick, "seeds": list(VAL_SEEDS), "split": "validation",
                   "summary": summary, "rows": rows, "heuristics": heur}, fh, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
