"""The documentation site builds with Sphinx, warnings as errors, and its API page documents the public API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_docs_build_without_warnings(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
                           str(REPO / "docs"), str(out)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    api = (out / "api.html").read_text(encoding="utf-8")
    import pt2format

    for name in ("save", "load", "read", "open", "validate", "from_torch", "to_torch", "LazyFile",
                 "FallbackWarning"):
        assert f'id="pt2format.{name}"' in api, name
    for page in ("guide", "migration", "versions", "spec", "readers", "security"):
        assert (out / f"{page}.html").is_file(), page
    assert "no safer" in (out / "security.html").read_text(encoding="utf-8")
    assert pt2format.__version__ in (out / "index.html").read_text(encoding="utf-8")


def test_screenshot_of_the_api_page_is_committed():
    png = REPO / "docs" / "screenshots" / "api-reference.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
