#!/usr/bin/env bash
# Build the TypeScript reader (loaders/ts) into loaders/ts/dist: `npm ci` when
# package-lock.json changed, then the build-input step and `tsc`. Idempotent
# and quiet: it does nothing when node_modules and dist are up to date.
# Then builds the viewer (scripts/build_viewer.sh -> loaders/ts/viewer/dist/viewer.html).
# Also installs headless Chromium for the browser test (skip: --no-browser).
# Safe to run from several processes at once (flock).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
ts=$root/loaders/ts
browser=1
for arg in "$@"; do
  case "$arg" in
    --no-browser) browser=0 ;;
    *) echo "usage: build_ts.sh [--no-browser]" >&2; exit 2 ;;
  esac
done

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  else
    echo "build_ts.sh: node/npm not found; install Node.js >= 18" >&2
    exit 1
  fi
fi
if [ "$browser" = 1 ]; then
  bash "$root/scripts/install_chromium.sh"
fi

exec 9>"$ts/.build-lock"
flock 9

hash_of() { sha256sum "$@" | sha256sum | cut -c1-64; }

cd "$ts"
lock_hash=$(hash_of package.json package-lock.json)
if [ ! -f node_modules/.pt2f-lock-hash ] || [ "$(cat node_modules/.pt2f-lock-hash)" != "$lock_hash" ]; then
  if ! out=$(npm ci --no-audit --no-fund --loglevel=error 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  echo "$lock_hash" > node_modules/.pt2f-lock-hash
fi

inputs=$(find src tools -type f \( -name '*.ts' -o -name '*.mjs' \) -not -path 'src/_build/*' | LC_ALL=C sort)
# shellcheck disable=SC2086
src_hash=$(hash_of $inputs tsconfig*.json package-lock.json "$root/schema/pt2format.schema.json")
if [ ! -f dist/.build-stamp ] || [ "$(cat dist/.build-stamp)" != "$src_hash" ]; then
  rm -rf dist
  node tools/gen-build-inputs.mjs
  node node_modules/typescript/bin/tsc -p tsconfig.json
  node node_modules/typescript/bin/tsc -p tsconfig.core.json
  echo "$src_hash" > dist/.build-stamp
fi

# The viewer (loaders/ts/viewer): one self-contained HTML file, built on the reader.
flock -u 9
bash "$root/scripts/build_viewer.sh"
