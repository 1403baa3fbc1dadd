"""One format version, from one source: the schema's newest `X.Y (date)` line (issue 25).

The SPEC title, the supported-versions page, `pt2format.FORMAT_VERSION`, the
command line's --version and every reader's notion of its own version all say
the same version as that line.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "schema")]

import evolution  # noqa: E402


def _source() -> str:
    v = evolution.schema_version((ROOT / "schema" / "pt2format.fbs").read_text())
    return f"{v[0]}.{v[1]}"


def test_every_page_and_the_package_say_the_schema_version():
    import pt2format

    want = _source()
    assert (ROOT / "schema" / "SPEC.md").read_text().splitlines()[0] == f"# The `.pt2f` file format, version {want}"
    assert re.search(rf"^\| file format \| {re.escape(want)} ", (ROOT / "docs" / "versions.md").read_text(), re.M)
    assert ".".join(map(str, pt2format.FORMAT_VERSION)) == want
    out = subprocess.run([sys.executable, "-m", "pt2format", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert f"(format {want})" in out.stdout, out.stdout + out.stderr


def test_every_reader_takes_its_version_from_the_generated_tables():
    want = _source().split(".")
    cpp = (ROOT / "loaders/cpp/generated/pt2format_minors.h").read_text()
    ts = (ROOT / "loaders/ts/src/generated/minors.ts").read_text()
    assert f"kSchemaMajor = {want[0]};" in cpp and f"kSchemaMinor = {want[1]};" in cpp
    assert f"SCHEMA_VERSION: readonly [number, number] = [{want[0]}, {want[1]}]" in ts
    assert "kReaderFormatMinor = minors::kSchemaMinor" in (ROOT / "loaders/cpp/include/pt2f/container.h").read_text()
    assert "READER_FORMAT_MAJOR: number = SCHEMA_VERSION[0]" in (ROOT / "loaders/ts/src/container.ts").read_text()
