#!/usr/bin/env bash
# Install everything the tests need (Python venv, C++ and TypeScript toolchains
# through their own scripts) and run the whole suite: the fast tests and the
# full conformance corpus (--corpus). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh test
export PATH="$PWD/.venv/bin:$PATH"
# Native readers and their toolchains (node packages, Chromium, cmake, clang).
bash scripts/build_ts.sh
bash scripts/build_cpp.sh >/dev/null
# One intra-op thread per process: two pytest workers (and the loader processes
# they start) share two cores, and OpenMP threads that spin-wait for cores
# that are busy slow every test down several times.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
set +e
python -m pytest -n 2 --dist loadgroup --timeout 1200 --corpus "$@"
rc=$?
set -e
# pytest exit 5 means no tests ran: that is a failure here, not a pass.
exit $rc
