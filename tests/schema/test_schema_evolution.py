"""The schema evolves compatibly and its generated artifacts are up to date."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FBS = ROOT / "schema" / "pt2format.fbs"
HISTORY = ROOT / "schema" / "history"

from toolpaths import require_tool


def _flatc() -> str:
    return require_tool("flatc", "flatc")


def _versions():
    return sorted((tuple(int(x) for x in p.name.split(".")), p) for p in HISTORY.iterdir() if p.is_dir())


def test_generated_artifacts_are_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "schema" / "regen.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, f"generated files are stale; run `python schema/regen.py`:\n{proc.stdout}{proc.stderr}"


def test_schema_conforms_to_last_release():
    (_, newest), *_ = reversed(_versions())
    proc = subprocess.run([_flatc(), "--conform", str(newest / "pt2format.fbs"), str(FBS)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_conform_check_catches_a_breaking_change(tmp_path):
    # Removing a field shifts the next one: flatc must reject it, or the check above proves nothing.
    text = FBS.read_text()
    broken = text.replace('  /// Node name, unique in its graph.\n  name: string (pt2f_required, pt2f_string: "local_name");\n',
                          "", 1)
    assert broken != text
    p = tmp_path / "pt2format.fbs"
    p.write_text(broken)
    proc = subprocess.run([_flatc(), "--conform", str(HISTORY / "1.0" / "pt2format.fbs"), str(p)], capture_output=True, text=True)
    assert proc.returncode != 0


def test_version_is_recorded_everywhere():
    import pt2format

    newest = _versions()[-1][0]
    assert pt2format.FORMAT_VERSION[0] == newest[0]
    assert pt2format.FORMAT_VERSION >= newest
    header = FBS.read_text().split("namespace", 1)[0]
    assert re.search(rf"{newest[0]}\.{newest[1]} \(\d{{4}}-\d\d-\d\d\)", header), "no /// history line for the newest version"
    assert f"## {newest[0]}.{newest[1]} " in (ROOT / "schema" / "CHANGELOG.md").read_text()
