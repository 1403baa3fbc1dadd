"""Committed artifacts (golden files, reports) carry no path of the machine that wrote them."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Where files of a build machine live: checkouts, home directories, interpreters' package folders.
MARKERS = (b"/work/", b"/root/", b"/home/", b"/Users/", b"site-packages", b"C:\\\\Users", b"/tmp/pytest-")


def _artifacts():
    listed = subprocess.run(["git", "ls-files", "conformance/golden", "conformance/REPORT.md", "docs"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / p for p in listed if (ROOT / p).is_file()]


def test_artifacts_exist():
    assert any("golden" in str(p) for p in _artifacts())


@pytest.mark.parametrize("marker", MARKERS, ids=lambda m: m.decode())
def test_no_machine_path_in_artifacts(marker):
    hits = [str(p.relative_to(ROOT)) for p in _artifacts() if marker in p.read_bytes()]
    assert not hits, f"{marker!r} found in {hits[:10]}"
