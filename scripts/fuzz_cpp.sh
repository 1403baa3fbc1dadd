#!/usr/bin/env bash
# Fuzz the C++ reader with libFuzzer for SECONDS (default 60).
#
#   scripts/fuzz_cpp.sh 300
#
# Builds build/cpp-fuzz (clang, ASan+UBSan; installs clang if needed), writes a
# seed corpus of real files (tests/support/native_util_cpp.py) and runs
# loaders/cpp/fuzz/fuzz_reader.cc on one core. New inputs go to
# build/cpp-fuzz/corpus; a crash is written to build/cpp-fuzz/findings/ and
# makes the script exit non-zero: copy it to loaders/cpp/fuzz/regressions/
# once fixed, so tests replay it forever. Prints the execution count.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-60}"
BUILD="$("$ROOT/scripts/build_cpp.sh" --fuzz | tail -1)"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"

SEEDS="$BUILD/seeds"
CORPUS="$BUILD/corpus"
FINDINGS="$BUILD/findings"
mkdir -p "$SEEDS" "$CORPUS" "$FINDINGS"
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -c "
import sys; sys.path.insert(0, '$ROOT/tests/support')
import native_util_cpp as u
print('seed files:', u.write_seed_corpus('$SEEDS'), file=sys.stderr)
"
# The golden files too: real programs of every encoding.
for g in "$ROOT"/conformance/golden/*/*/program.pt2f; do
  [ -f "$g" ] && cp "$g" "$SEEDS/golden-$(basename "$(dirname "$(dirname "$g")")")-$(basename "$(dirname "$g")").pt2f"
done
# The invalid-file corpus: one broken rule each, every encoding (conformance/invalid/).
for f in "$ROOT"/conformance/invalid/*.pt2f; do
  [ -f "$f" ] && cp "$f" "$SEEDS/invalid-$(basename "$f")"
done
if [ -d "$ROOT/loaders/cpp/fuzz/regressions" ]; then
  cp -n "$ROOT"/loaders/cpp/fuzz/regressions/* "$SEEDS"/ 2>/dev/null || true
fi

LOG="$BUILD/fuzz.log"
STARTED=$(date +%s)
set +e
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
# PT2F_FUZZ_RUNS=N stops after N executions instead (with a time limit of SECONDS).
"$BUILD/pt2f-fuzz-reader" -max_total_time="$SECONDS_TO_RUN" ${PT2F_FUZZ_RUNS:+-runs=$PT2F_FUZZ_RUNS} -timeout=10 -rss_limit_mb=2048 \
  -max_len=262144 -print_final_stats=1 -artifact_prefix="$FINDINGS/" "$CORPUS" "$SEEDS" >"$LOG" 2>&1
rc=$?
set -e
ELAPSED=$(( $(date +%s) - STARTED ))
execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)"
if [ "$rc" -ne 0 ]; then
  tail -40 "$LOG" >&2
  echo "fuzz_cpp.sh: FINDING after ${execs:-?} executions; inputs in $FINDINGS" >&2
  exit 1
fi
cov="$(grep -o 'cov: [0-9]*' "$LOG" | tail -1)"
echo "fuzz_cpp.sh: ${execs:-?} executions in ${ELAPSED}s without a finding (${cov:-cov: ?}) (corpus: $(ls "$CORPUS" | wc -l) inputs)"
