"""The example notebook runs end to end (tiny budget) in a real Jupyter kernel, through the
public API only, and compares the agents with the strongest heuristics of every env."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "benchmark_rl_algorithms.ipynb"
#: Heuristics the notebook must compare with: SJF, Tetris and the best threshold
#: (moldable), SLAQ (Metis), consolidated first-fit, registered as ``fifo`` (placement).
STRONGEST = ("sjf", "tetris", "best-threshold", "slaq", "fifo")
TIMESTEPS = 256


def code_cells() -> list[str]:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def test_notebook_uses_the_public_api_only() -> None:
    source = "\n".join(code_cells())
    internals = re.findall(r"(?:from|import) (?:cluster_envs\.\w+|agents|baselines)\b", source)
    assert not internals, internals
    assert ".unwrapped.sim" not in source and "rollout" not in source


def test_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {"CLUSTER_ENVS_NB_TIMESTEPS": str(TIMESTEPS), "CLUSTER_ENVS_NB_SEEDS": "100-101"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    for algo in ("MaskablePPO", "PPO", "A2C", "DQN"):
        assert f"{algo}: trained {TIMESTEPS} steps" in text
        assert f"{algo}: {TIMESTEPS}/{TIMESTEPS} steps" in text  # progress while training
    tables = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    for policy in (*STRONGEST, "pretrained:MetisAllocation-v0", "PPO (here)"):
        assert f">{policy}<" in tables, policy
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the moldable and Metis bar charts
    assert (tmp_path / "runs" / "notebook" / "moldable" / "results.json").is_file()
    # the generalist placement agent next to the heuristics on a family's test split
    family = tmp_path / "runs" / "notebook" / "placement-family" / "results.json"
    rows = json.loads(family.read_text())["rows"]
    assert {r["workload"] for r in rows} == {"philly-time/test"}
    assert "pretrained:JobPlacement-v0" in {r["policy"] for r in rows}
    assert all(r["status"] == "ok" for r in rows)
