"""Write benchmarks/results/generalist_placement.{md,json} (issue 13) from the runs.

Reads runs/pretrained-JobPlacement-v0 (scripts/train_pretrained.sh with
ENV=cluster_envs/JobPlacement-v0), the recipe/ablation runs under runs/gp/ (their
flags are in the table) and benchmarks/results/generalist_placement_teachers.json.

    python benchmarks/report_generalist_placement.py

It wrote the first-fit clone's version of the file (the recipe shipped until 2026-12-05); the
file has been extended by hand since (the BO and fifo-rollout teachers, the fifo-rollout clone
now shipped), so rerunning it would drop those sections: read it as the record of how the
first-fit clone's tables were made.
"""

import json
from pathlib import Path

import numpy as np

from agents.generalist import summarize

W = Path(__file__).resolve().parents[1]
run = W / "runs/pretrained-JobPlacement-v0"
test = summarize(str(run / "test.json"))
tdata = json.loads((run / "test.json").read_text())
card = json.loads((W / "agents/pretrained/JobPlacement-v0.json").read_text())
RUNS = [
    (
        "shipped: BC + 2 DAgger from fifo, no PPO",
        run,
        "ENV=cluster_envs/JobPlacement-v0 scripts/train_pretrained.sh",
    ),
    (
        "+ 30k PPO steps (lr 3e-5, 2 groups x 2 envs sharing workload seeds)",
        W / "runs/gp/ppo",
        "--timesteps 30000 --lr 3e-5 --eval-freq 4096",
    ),
    (
        "one family: cloned on synthetic-16 (4 x 4 T4) only",
        W / "runs/gp/one_family",
        "--family synthetic-16",
    ),
    ("no hints: observation scale_free (ablation)", W / "runs/gp/no_hints", "--no-hints"),
    (
        "lookahead teacher: BC + 1 DAgger, 10 episodes each",
        W / "runs/gp/lookahead",
        "--teacher lookahead --pretrain-episodes 10 --dagger-rounds 1",
    ),
    (
        "no warm start: 30k PPO steps from random weights",
        W / "runs/gp/no_warm_start",
        "--pretrain-episodes 0 --timesteps 30000 --eval-freq 6144",
    ),
]
out = {"test": test, "test_seeds": tdata["seeds"], "test_cpu_s": tdata.get("cpu_s"), "recipes": {}}
L = []
L += [
    "# Generalist JobPlacement agent (issue 13)",
    "",
    "`pretrained:JobPlacement-v0` is now one `SetPolicy` MaskablePPO agent for every cluster shape of the",
    "generalization suite. Target: average JCT at most 1.0x consolidated first-fit (`fifo`) on every",
    "placement family's test split (>= 10 seeds). **Met, by tying first-fit exactly on every family; not beaten.**",
    "",
    "## Commands",
    "",
    "    ENV=cluster_envs/JobPlacement-v0 scripts/train_pretrained.sh   # train + test + card, one command",
    "    # = python -m agents.generalist train --env placement --out runs/pretrained-JobPlacement-v0 \\",
    "    #     --family mixed --val-families all --pretrain-episodes 30 --pretrain-epochs 20 \\",
    "    #     --dagger-rounds 2 --timesteps 0 --seed 0",
    "    #   python -m agents.generalist evaluate --env placement --model runs/pretrained-JobPlacement-v0/best_model.zip \\",
    "    #     --out runs/pretrained-JobPlacement-v0/test.json --seeds 100 109",
    "    #   python -m agents.generalist_card runs/pretrained-JobPlacement-v0 --test .../test.json ...",
    "    python benchmarks/bench_placement_teachers.py --seeds 500-503 --out benchmarks/results/generalist_placement_teachers.json",
    "",
    f"Budget of the shipped agent: {card['budget']['demo_steps']:,} demonstrated steps (30 episodes of first-fit on `mixed`/train, then 2 DAgger rounds of 30 episodes played by the agent and labelled by first-fit, 20 epochs per fit), 0 PPO steps; "
    f"training wall time {card['train_wall_s']:.0f} s, test evaluation {tdata.get('cpu_s')} CPU s, on the shared 2-core machine (nice 10, other jobs running). "
    "Checkpoint chosen on every family's validation split (seeds 500-507) by the worst family's ratio to first-fit, then the geometric mean; test splits only evaluated.",
    "",
    "## Test: every placement family's test split, full episodes, seeds 100-109",
    "",
    "Ratio = agent mean JCT / first-fit mean JCT; paired = geometric mean over seeds of agent/first-fit with a 95% bootstrap interval over seeds.",
    "",
    "| family | agent avg JCT (s) | first-fit avg JCT (s) | agent / first-fit | paired [95% CI] | best heuristic | agent / best |",
    "|---|---|---|---|---|---|---|",
]
for fam, f in test["families"].items():
    rows = tdata["rows"][fam]
    lo, hi = f["paired_ci95"]
    L.append(
        f"| {fam}/test | {np.mean(rows['agent']):,.1f} | {np.mean(rows['fifo']):,.1f} | {f['agent_to_single']:.4f} | {f['paired_geo_to_single']:.4f} [{lo:.4f}, {hi:.4f}] | {f['best_heuristic']} | {f['agent_to_best']:.4f} |"
    )
same = all(tdata["rows"][f]["agent"] == tdata["rows"][f]["fifo"] for f in tdata["rows"])
L += [
    "",
    f"Every seed's JCT equal to first-fit's on every family: {same}. Geometric mean agent / best-per-family {test['geomean_agent_to_best']:.4f} (first-fit's own: {test['geomean_single_to_best']:.4f}); worst family {test['worst_agent_to_best']:.4f} (philly-time, where spread wins).",
    f"Default preset (seeds 100-119): agent {card['test']['avg_jct_s']['mean']:,.1f} ± {card['test']['avg_jct_s']['ci95']:,.1f} s, first-fit {card['test_reference']['avg_jct_s']['mean']:,.1f}, random masked {card['random_masked']['avg_jct_s']['mean']:,.1f}; the specialist it replaces: 3,558 ± 552 s, and incompatible with every family's cluster.",
    "",
    "## Recipes and ablations (validation splits only, seeds 500-507, every family)",
    "",
    "Each row: the shipped recipe with one change (`python -m agents.generalist train --env placement --family mixed --val-families all --pretrain-episodes 30 --pretrain-epochs 20 --dagger-rounds 2 --timesteps 0` plus the flags shown). Ratio to first-fit per family: geometric mean over seeds; then geometric mean and worst over the 8 families.",
    "",
    "| recipe | flags | teacher agreement (last fit) | PPO steps | train wall (s) | val geomean | val worst (family) |",
    "|---|---|---|---|---|---|---|",
]
for name, d, flags in RUNS:
    p = d / "train.json"
    if not p.exists():
        L.append(f"| {name} | `{flags}` | not run | | | | |")
        continue
    r = json.loads(p.read_text())
    ws = r.get("warm_start")
    agree = ws["rounds"][-1].get("teacher_agreement") if ws else None
    curve = r["curve"]
    best = min(curve, key=lambda c: (c["val_worst_family"], c["val_ratio_to_best_single"]))
    worst_f = max(best["val_families"], key=best["val_families"].get)
    out["recipes"][name] = {
        "flags": flags,
        "teacher_agreement": agree,
        "timesteps": r["timesteps"],
        "train_wall_s": r["train_wall_s"],
        "best": best,
        "curve": [
            (c["timesteps"], c["val_ratio_to_best_single"], c["val_worst_family"]) for c in curve
        ],
    }
    wf = f" ({worst_f})" if best["val_worst_family"] > 1 else ""
    L.append(
        f"| {name} | `{flags}` | {f'{agree:.4f}' if agree is not None else '-'} | {r['timesteps']:,} | {r['train_wall_s']:.0f} | {best['val_ratio_to_best_single']:.4f} | {best['val_worst_family']:.4f}{wf} |"
    )
T = json.loads((W / "benchmarks/results/generalist_placement_teachers.json").read_text())
L += [
    "",
    "## Teachers on the validation splits (seeds 500-503)",
    "",
    "Mean JCT over first-fit's per family (`benchmarks/bench_placement_teachers.py`). `lookahead` tries first-fit, best-fit and spread at each job on a believed fork (estimated lengths only, arrivals still to come dropped) and keeps the lowest total completion time of the jobs known now.",
    "",
    "| family | fifo-best-fit | lookahead (3 rules) | lookahead (first-fit, best-fit) | lookahead CPU s / episode |",
    "|---|---|---|---|---|",
]
for fam, r in T["rows"].items():
    ref = np.mean(r["fifo"]["avg_jct_s"])

    def g(n: str, r: dict = r, ref: float = ref) -> float:
        return float(np.mean(r[n]["avg_jct_s"]) / ref)

    L.append(
        f"| {fam} | {g('fifo-best-fit'):.4f} | {g('lookahead'):.4f} | {g('lookahead:fifo,fifo-best-fit'):.4f} | {r['lookahead']['cpu_s'] / len(T['seeds']):.1f} |"
    )
out["teachers_validation"] = T
L += [
    "",
    "## What this shows",
    "",
    "- The heuristic hints (`observation=\"scale_free_hints\"`, `cluster_envs/envs/placement_hints.py`) are what make an exact clone possible: first-fit picks nodes by id, which a permutation-invariant set policy cannot see; with a per-node flag of first-fit's next node the clone agrees with the teacher on every demonstrated step and plays first-fit's exact trajectories on every family and cluster shape, including 8-GPU nodes and mixed GPU types it never trained on (it trained on `mixed`, 16 x 4 T4). Without the hints (same budget) the clone agrees on ~93% of steps and loses up to 1.4x on a validation family.",
    "- Nothing tried beats first-fit: PPO from the clone does not move it (the cloned policy is near-deterministic; 30k steps left every validation family at exactly 1.000), PPO from random weights with the hints finds its way to first-fit (geometric mean 1.15 at the start, about 1.001 after 30k steps, worst family 1.004; single families dip to 0.99 on the way, by noise-sized amounts that other families pay back), and the lookahead teacher as first measured was 1.5-3.1x worse than first-fit on 7 of 8 validation families, but that was a bug (it placed multi-GPU jobs by the plan of the last candidate it asked, fifo-spread; fixed, see the section on sampled arrivals below): fixed, it is 0.997x first-fit in geometric mean and 0.984x with sampled future arrivals, still above 1.0 on synthetic-16 and synthetic-64. Restricted to first-fit and best-fit it ranges from 0.7% better (pollux) to 3.4% worse (philly-vc). Best-fit alone is 0.1-0.7% better on 6 families but 0.3% worse on philly-time and 2.1% worse on alibaba (validation); no single rule or teacher is better on every family, so the shipped agent stays on first-fit.",
    "- Wall times are on a loaded machine: the shipped recipe took 435 s of training the first time, next to the 30k-step PPO run, and 187 s in the rerun that wrote the shipped files (`ENV=cluster_envs/JobPlacement-v0 FORCE=1 scripts/train_pretrained.sh`, about 6 min with the test evaluation and the card; the card's numbers came back identical, only its timings changed); the same recipe on synthetic-16 alone took 62 s.",
    "- The room is small: first-fit is within 1.01x of the best heuristic per family on the test splits (geometric mean; worst 1.09x on philly-time, where spread wins).",
]
(W / "benchmarks/results/generalist_placement.md").write_text("\n".join(L) + "\n")
(W / "benchmarks/results/generalist_placement.json").write_text(
    json.dumps(out, indent=1, default=float) + "\n"
)
print("\n".join(L))
