#!/usr/bin/env bash
# Fuzz the Python reader (read + validate, load on a share) with atheris.
#
#   scripts/fuzz_python.sh 300            # for 300 seconds
#   scripts/fuzz_python.sh -runs=1000000  # for N executions (any libFuzzer flags pass through)
#
# Seeds are the golden files (tests/fuzz/fuzz_reader.py explains the three
# input modes). New inputs go to build/py-fuzz/corpus; an exception that is not
# a Pt2FormatError is written to build/py-fuzz/findings/ (input + traceback)
# and makes the script exit non-zero: add it to tests/fuzz/regressions/ once
# fixed, so tests/fuzz/test_fuzz_regressions.py replays it forever.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
BUILD="${PT2F_BUILD_ROOT:-$ROOT/build}/py-fuzz"
ARG="${1:-60}"; shift || true
case "$ARG" in
  -*) LIMIT=("$ARG") ;;
  *) LIMIT=(-max_total_time="$ARG") ;;
esac
export PYTHONPATH="$ROOT:$ROOT/tests/support${PYTHONPATH:+:$PYTHONPATH}"
export PT2F_FUZZ_FINDINGS="$BUILD/findings"
mkdir -p "$BUILD/seeds" "$BUILD/corpus" "$BUILD/artifacts" "$PT2F_FUZZ_FINDINGS"
"$PYTHON" "$ROOT/tests/fuzz/fuzz_reader.py" --seeds "$BUILD/seeds" >/dev/null
if [ -d "$ROOT/tests/fuzz/regressions" ]; then cp -n "$ROOT"/tests/fuzz/regressions/* "$BUILD/seeds"/ 2>/dev/null || true; fi
LOG="$BUILD/fuzz.log"
set +e
"$PYTHON" "$ROOT/tests/fuzz/fuzz_reader.py" "${LIMIT[@]}" -timeout=30 -rss_limit_mb=4096 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" "$@" "$BUILD/corpus" "$BUILD/seeds" >"$LOG" 2>&1
rc=$?
set -e
execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)"
cov="$(grep -o 'cov: [0-9]*' "$LOG" | tail -1)"
if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$PT2F_FUZZ_FINDINGS")" ]; then
  grep FINDING "$LOG" >&2 || tail -40 "$LOG" >&2
  echo "fuzz_python.sh: FINDING after ${execs:-?} executions (${cov}); inputs in $PT2F_FUZZ_FINDINGS and $BUILD/artifacts" >&2
  exit 1
fi
echo "fuzz_python.sh: ${execs:-?} executions without a finding (${cov}, corpus: $(ls "$BUILD/corpus" | wc -l) inputs)"
