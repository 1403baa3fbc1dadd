#!/usr/bin/env bash
# The main job on the built-in example: install, export a model, save, load in a
# fresh process, check outputs against torch, print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh torch
# The viewer page, so that `pt2format view` works right after the demo (a wheel carries it; a checkout builds it).
PATH=$PWD/.venv/bin:$PATH bash scripts/build_ts.sh --no-browser \
  || echo "demo: the viewer page was not built (pt2format view needs it: scripts/build_ts.sh)" >&2
exec .venv/bin/python scripts/demo.py "$@"
