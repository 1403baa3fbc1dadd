#!/usr/bin/env bash
# The injection test's full run (tests/support/pt2f_injection.py): hostile strings
# and extreme integers in every field of corpus files, each mutant run in a worker.
#
#   scripts/injection.sh --full                       # every default case, encoding, field, payload
#   scripts/injection.sh --cases mlp --encodings json --sites all
#
# Prints counts (mutants, fields x payloads, verdicts); exits 1 on any FAIL-* verdict.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
cd "$ROOT"
PYTHONPATH="$ROOT:$ROOT/tests/support${PYTHONPATH:+:$PYTHONPATH}" exec nice -n 10 "$PYTHON" -m pt2f_injection "$@"
