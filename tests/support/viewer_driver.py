"""Run the viewer in headless Chromium (system Chromium through playwright-core; nothing downloaded).

`drive(page, steps)` writes a step script for `loaders/ts/viewer/tools/drive.mjs`
and returns its report: one result per step (rendered state from the page's
`window.pt2fViewer` hook, panel text, search results, timings, screenshots).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import native_util_ts as U

VIEWER = U.TS_DIR / "viewer"
DRIVER = VIEWER / "tools" / "drive.mjs"
PAGE = VIEWER / "dist" / "viewer.html"


def chromium_or_skip():
    """The system Chromium; in CI install it (Debian package) rather than skip."""
    import pytest

    exe = U.chromium()
    if exe is None and os.environ.get("CI") == "true":
        subprocess.run(["bash", str(U.ROOT / "scripts" / "install_chromium.sh")], check=True, timeout=900)
        exe = U.chromium()
    if exe is None:
        pytest.skip("chromium not installed: run scripts/build_ts.sh (installs it) or scripts/install_chromium.sh")
    return exe


def drive(chromium: str, page, steps, *, timeout: float = 300, width: int = 1400, height: int = 900,
          text_probe: bool = False) -> dict:
    """`text_probe`: record the canvas's fillText calls, for the "text" step (on-screen label sizes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"chromium": chromium, "page": str(page), "steps": steps, "width": width, "height": height,
                   "timeout": int(timeout * 1000), "textProbe": text_probe}, f)
        script = f.name
    try:
        r = subprocess.run(["node", str(DRIVER), script], cwd=VIEWER, capture_output=True, text=True,
                           timeout=timeout + 60)
    finally:
        os.unlink(script)
    if r.returncode != 0:
        raise RuntimeError(f"drive.mjs failed ({r.returncode}):\n{r.stderr[-4000:]}")
    out = json.loads(r.stdout)
    errors = [c for c in out["console"] if c.startswith(("pageerror", "error"))]
    if errors:
        raise RuntimeError("page errors: " + "\n".join(errors))
    return out


def view(path, out: Path, *extra: str) -> Path:
    """`pt2format view PATH -o OUT [extra...]` in a subprocess; returns OUT."""
    import sys

    r = subprocess.run([sys.executable, "-m", "pt2format", "view", str(path), "-o", str(out), *extra],
                       capture_output=True, text=True, cwd=U.ROOT, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"pt2format view failed ({r.returncode}): {r.stderr}")
    return Path(out)
