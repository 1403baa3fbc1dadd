"""`python schema/evolution.py` prints the compatibility diff and fails on an incompatible schema."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from toolpaths import require_tool

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "schema" / "evolution.py"


def _run(*args):
    require_tool("flatc", "flatc")
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, cwd=ROOT)


def test_the_working_schema_is_compatible_with_every_release():
    r = _run()
    assert r.returncode == 0, r.stdout + r.stderr
    releases = sorted(p.name for p in (ROOT / "schema" / "history").iterdir() if p.is_dir())
    for v in releases:
        assert f"against {v}: compatible" in r.stdout, r.stdout


def test_a_renamed_field_is_printed_and_fails(tmp_path):
    text = (ROOT / "schema" / "pt2format.fbs").read_text()
    broken = text.replace("  /// Node name, unique in its graph.\n  name: string", "  /// Node name, unique in its graph.\n  node_name: string", 1)
    assert broken != text
    (tmp_path / "pt2format.fbs").write_text(broken)
    shutil.copy(ROOT / "schema" / "container.toml", tmp_path / "container.toml")
    r = _run("--fbs", str(tmp_path / "pt2format.fbs"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PROBLEM" in r.stdout and "table Node.name: renamed to 'node_name'" in r.stdout, r.stdout
