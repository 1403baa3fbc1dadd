#!/usr/bin/env bash
# Fuzz the TypeScript reader (loaders/ts/fuzz/fuzz_reader.mjs, a mutation loop) for SECONDS or N runs.
#
#   scripts/fuzz_ts.sh 300              # for 300 seconds
#   scripts/fuzz_ts.sh -runs=1000000    # for N executions
#
# Builds loaders/ts (scripts/build_ts.sh --no-browser), seeds from the golden
# files (tests/fuzz/fuzz_reader.py --seeds: raw, resealed and program-only
# inputs). An exception that is not a Pt2fError is written to
# build/ts-fuzz/findings/ and makes the script exit non-zero: add the input to
# loaders/ts/fuzz/regressions/ once fixed, so tests replay it forever.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
BUILD="${PT2F_BUILD_ROOT:-$ROOT/build}/ts-fuzz"
ARG="${1:-60}"
case "$ARG" in
  -runs=*) LIMIT=(--runs "${ARG#-runs=}") ; WALL=86400 ;;
  *) LIMIT=(--seconds "$ARG") ; WALL=$((ARG + 120)) ;;
esac
bash "$ROOT/scripts/build_ts.sh" --no-browser >&2
mkdir -p "$BUILD/seeds" "$BUILD/findings"
PYTHONPATH="$ROOT:$ROOT/tests/support${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" "$ROOT/tests/fuzz/fuzz_reader.py" --seeds "$BUILD/seeds" >/dev/null
if [ -d "$ROOT/loaders/ts/fuzz/regressions" ]; then cp -n "$ROOT"/loaders/ts/fuzz/regressions/* "$BUILD/seeds"/ 2>/dev/null || true; fi
set +e
timeout "$WALL" node "$ROOT/loaders/ts/fuzz/fuzz_reader.mjs" "${LIMIT[@]}" --seed "${PT2F_FUZZ_SEED:-1}" \
  "$BUILD/seeds" "$BUILD/findings" >"$BUILD/fuzz.log" 2>&1
rc=$?
set -e
summary="$(grep '^fuzz_ts:' "$BUILD/fuzz.log" | tail -1)"
if [ "$rc" -ne 0 ]; then
  grep FINDING "$BUILD/fuzz.log" >&2 || tail -20 "$BUILD/fuzz.log" >&2
  [ "$rc" -eq 124 ] && echo "fuzz_ts.sh: HANG: the input being run is $BUILD/current.input" >&2
  echo "fuzz_ts.sh: FINDING (${summary:-no summary}); inputs in $BUILD/findings" >&2
  exit 1
fi
echo "fuzz_ts.sh: ${summary#fuzz_ts: }"
