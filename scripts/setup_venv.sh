#!/usr/bin/env bash
# Create .venv (if missing) and install pt2format with the given extra, always
# through constraints.txt so torch stays pinned. Usage: setup_venv.sh EXTRA
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-torch}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade "pip>=24" -c constraints.txt 2>/dev/null || true
.venv/bin/python -m pip install -q -c constraints.txt -e ".[${extra}]"
