#!/usr/bin/env bash
# The main job on the built-in example: install, export a model, save, load in a
# fresh process, check outputs against torch, print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh torch
exec .venv/bin/python scripts/demo.py "$@"
