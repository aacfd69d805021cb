"""The example notebook runs end to end (tiny budget) in a real Jupyter kernel."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "benchmark_rl_algorithms.ipynb"


def test_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {"CLUSTER_ENVS_NB_TIMESTEPS": "256", "CLUSTER_ENVS_NB_SEEDS": "2"}
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
    assert "MaskablePPO: trained 256 steps" in text and "DQN: trained 256 steps" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the bar chart and the CDF
