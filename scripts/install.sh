#!/usr/bin/env bash
# Install cluster-envs and everything it needs into .venv at the repository root.
# torch==2.13.0 goes first (a CPU build): a plain `torch` requirement on a machine
# without it would pull a multi-GB CUDA build. The ray extra (Ray Tune, RLlib; it pins
# gymnasium 1.2.2) is installed too: the benchmark's Ray backend is tested.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev,ray]"
