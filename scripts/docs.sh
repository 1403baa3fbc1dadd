#!/usr/bin/env bash
# Build the documentation site with warnings as errors (what CI checks through
# tests/docs/test_docs_build.py); with --screenshot, also refresh the committed
# picture of the API reference page, taken with headless Chromium.
# Installs the [docs] extra into .venv first when Sphinx is missing (a fresh clone, or the demo's venv);
# torch is not needed: docs/conf.py mocks it for the one page that imports it (pt2format.dcp).
# Usage: scripts/docs.sh [--screenshot]   (output: build/docs/html)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
# The demo's venv has the [torch] extra only: install the [docs] extra (pyproject.toml, through
# constraints.txt, like every install of this project) when Sphinx or MyST is missing.
if [ ! -x "$py" ] || ! "$py" -c "import sphinx, myst_parser" 2>/dev/null; then
  echo "docs: installing the [docs] extra into .venv (scripts/setup_venv.sh docs)"
  bash scripts/setup_venv.sh docs
fi
out=build/docs/html
rm -rf "$out"
"$py" -m sphinx -W --keep-going -b html -q docs "$out"
echo "docs: $out/index.html"
if [ "${1:-}" = "--screenshot" ]; then
  bash scripts/install_chromium.sh
  exe=$(command -v chromium || command -v chromium-browser)
  "$exe" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1400 \
    --screenshot="$PWD/docs/screenshots/api-reference.png" "file://$PWD/$out/api.html" 2>/dev/null
  echo "screenshot: docs/screenshots/api-reference.png"
fi
