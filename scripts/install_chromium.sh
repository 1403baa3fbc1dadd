#!/usr/bin/env bash
# Install headless Chromium (Debian package) for the TypeScript reader's browser
# test, unless a Chromium is already on PATH. Idempotent and quiet.
set -euo pipefail
for exe in chromium chromium-browser; do
  if command -v "$exe" >/dev/null 2>&1; then exit 0; fi
done
if [ "$(id -u)" != 0 ]; then
  echo "install_chromium.sh: chromium missing and not root; install the 'chromium' package" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
command -v chromium >/dev/null
