#!/usr/bin/env bash
# Build the documentation site with warnings as errors (what CI checks through
# tests/docs/test_docs_build.py); with --screenshot, also refresh the committed
# picture of the API reference page, taken with headless Chromium.
# Usage: scripts/docs.sh [--screenshot]   (output: build/docs/html)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || py=python3
out=build/docs/html
rm -rf "$out"
"$py" -m sphinx -W --keep-going -b html -q docs "$out"
echo "docs: $out/index.html"
if [ "${1:-}" = "--screenshot" ]; then
  bash scripts/install_chromium.sh
  exe=$(command -v chromium || command -v chromium-browser)
  "$exe" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2000 \
    --screenshot="$PWD/docs/screenshots/api-reference.png" "file://$PWD/$out/api.html" 2>/dev/null
  echo "screenshot: docs/screenshots/api-reference.png"
fi
