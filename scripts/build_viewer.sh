#!/usr/bin/env bash
# Build the viewer (loaders/ts/viewer) into loaders/ts/viewer/dist/viewer.html:
# `npm ci` when its package-lock.json changed, then esbuild (build.mjs) when
# any input changed. Needs the reader's build inputs (scripts/build_ts.sh runs
# this at its end, after the reader). Idempotent, quiet, flock-protected.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
ts=$root/loaders/ts
viewer=$ts/viewer

exec 8>"$viewer/.build-lock"
flock 8

hash_of() { sha256sum "$@" | sha256sum | cut -c1-64; }

cd "$viewer"
lock_hash=$(hash_of package.json package-lock.json)
if [ ! -f node_modules/.pt2f-lock-hash ] || [ "$(cat node_modules/.pt2f-lock-hash)" != "$lock_hash" ]; then
  if ! out=$(npm ci --no-audit --no-fund --loglevel=error 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  echo "$lock_hash" > node_modules/.pt2f-lock-hash
fi

inputs=$( { find src "$ts/src" -type f -name '*.ts'; echo index.html; echo build.mjs; } | LC_ALL=C sort)
# shellcheck disable=SC2086
src_hash=$(hash_of $inputs package-lock.json "$ts/package-lock.json")
if [ -f dist/viewer.html ] && [ -f dist/.build-stamp ] && [ "$(cat dist/.build-stamp)" = "$src_hash" ]; then
  exit 0
fi
node build.mjs >/dev/null
echo "$src_hash" > dist/.build-stamp
