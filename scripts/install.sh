#!/usr/bin/env bash
# Install cluster-envs into .venv at the repository root.
#
#   bash scripts/install.sh         what the main job needs (`cluster-envs benchmark
#                                   --suite default`): the envs + agents, placement, plots
#   bash scripts/install.sh --dev   everything the tests need: also dev and ray
#
# torch==2.13.0 goes first (a CPU build): a plain `torch` requirement on a machine
# without it would pull a multi-GB CUDA build. The main-job install leaves gymnasium
# unpinned (the newest 1.x the index has); the ray extra (Ray Tune, RLlib) pins
# gymnasium 1.2.2, so the test install gets that version.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="agents,placement,plots"
case "${1:-}" in
    "") ;;
    --dev) EXTRAS="agents,placement,plots,dev,ray" ;;
    *) echo "usage: bash scripts/install.sh [--dev]" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
"${PIP[@]}" --upgrade pip
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -e ".[$EXTRAS]"
