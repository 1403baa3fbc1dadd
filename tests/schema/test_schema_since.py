"""`pt2f_since` says where each name is which minor defined it, and regen.py refuses one schema/history/ contradicts.

The expectation is computed from the frozen releases alone (`evolution.minors`,
the first release that has each name), never from the attributes under test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolpaths import require_tool

ROOT = Path(__file__).resolve().parents[2]
FBS = ROOT / "schema" / "pt2format.fbs"
HISTORY = ROOT / "schema" / "history"
sys.path[:0] = [str(ROOT / "schema")]

import evolution  # noqa: E402


def _bfbs(tmp_path: Path, text: str, name: str):
    from codegen.bfbs import build_bfbs

    require_tool("flatc", "flatc")
    d = tmp_path / name
    d.mkdir()
    (d / "pt2format.fbs").write_text(text)
    return build_bfbs(d, d / "pt2format.fbs")


def _history(tmp_path: Path) -> list:
    return [(v, _bfbs(tmp_path, path.read_text(), f"h{v[0]}_{v[1]}")) for v, path in evolution.history_versions(HISTORY)]


def _regen_scratch(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    fbs = tmp_path / "pt2format.fbs"
    fbs.write_text(text)
    return subprocess.run([sys.executable, str(ROOT / "schema" / "regen.py"), "--fbs", str(fbs), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True)


def _next_minor(text: str) -> tuple[str, tuple[int, int]]:
    """The schema with a version line for a minor no release has (the working one if it is unreleased)."""
    v = evolution.schema_version(text)
    if not (HISTORY / f"{v[0]}.{v[1]}").exists():
        return text, v
    v = (v[0], v[1] + 1)
    head, sep, rest = text.partition("namespace")
    last = list(re.finditer(r"^///\s+\d+\.\d+ \(\d{4}-\d\d-\d\d\).*\n", head, re.M))[-1]
    return head[:last.end()] + f"///   {v[0]}.{v[1]} (2026-01-01) test-only.\n" + head[last.end():] + sep + rest, v


def _add_to_node(text: str, line: str) -> str:
    m = re.search(r"^table Node\b[^{\n]*\{\n(.*?)^\}", text, re.M | re.S)
    return text[:m.end(1)] + line + text[m.end(1):]


def test_the_attributes_say_what_history_says(tmp_path):
    working = _bfbs(tmp_path, FBS.read_text(), "w")
    version = evolution.schema_version(FBS.read_text())
    from_history = evolution.minors(_history(tmp_path), working, version)
    declared, _, problems = evolution.declared_minors(working, version)
    assert problems == []
    assert declared == from_history
    assert from_history, "a release after X.0 added names; the table cannot be empty"


def test_fields_md_since_column_is_historys(tmp_path):
    """Each field row of FIELDS.md shows the first release that has the field (X.0 when not listed)."""
    working = _bfbs(tmp_path, FBS.read_text(), "w")
    version = evolution.schema_version(FBS.read_text())
    truth = evolution.minors(_history(tmp_path), working, version)
    md = (ROOT / "schema" / "FIELDS.md").read_text()
    checked = 0
    for section in re.split(r"^## ", md, flags=re.M)[1:]:
        owner = section.split("\n", 1)[0].split(" ")[0]
        for fid, name, since in re.findall(r"^\| (\d+) \| `(\w+)` \| [^|]* \| [^|]* \| (\d+\.\d+) \|", section, re.M):
            assert since == f"{version[0]}.{truth.get(('field', owner, name), 0)}", (owner, name)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("old, new, message", [
    ('  layout: Layout = STRIDED (pt2f_since: "1.1");', "  layout: Layout = STRIDED;",
     'Tensor.layout: pt2f_since says 1.0, but its first release is 1.1 (schema/history/): write (pt2f_since: "1.1")'),
    ("table NullValue {}", 'table NullValue (pt2f_since: "1.1") {}',
     "table NullValue: pt2f_since says 1.1, but its first release is 1.0 (schema/history/): write no pt2f_since"),
    ('enum QScheme : ubyte (pt2f_since: "1.1") {', "enum QScheme : ubyte {",
     "QScheme value 0: pt2f_since says 1.0, but its first release is 1.1"),
    ('  MODULE = 11 (pt2f_since: "1.1"),', '  MODULE = 11 (pt2f_since: "1.0"),',
     "TreeSpecKind.MODULE: pt2f_since '1.0' is not a minor after 1.0"),
    ('  MODULE = 11 (pt2f_since: "1.1"),', '  MODULE = 11 (pt2f_since: "2.1"),',
     "TreeSpecKind.MODULE: pt2f_since '2.1' is not a minor after 1.0"),
], ids=["released-field-without", "x0-table-with", "new-enum-without", "explicit-x0", "other-major"])
def test_regen_refuses_an_attribute_history_contradicts(tmp_path, old, new, message):
    text = FBS.read_text()
    assert old in text
    proc = _regen_scratch(tmp_path, text.replace(old, new, 1))
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_a_new_field_carries_the_unreleased_minor(tmp_path):
    text, v = _next_minor(FBS.read_text())
    bare = _add_to_node(text, "  /// A probe (test-only).\n  since_probe: double;\n")
    (tmp_path / "bare").mkdir()
    proc = _regen_scratch(tmp_path / "bare", bare)
    assert proc.returncode != 0
    assert (f"Node.since_probe: pt2f_since says {v[0]}.0, but no release under schema/history/ has it, so it is "
            f"the working version {v[0]}.{v[1]}'s: write (pt2f_since: \"{v[0]}.{v[1]}\")") in proc.stderr, proc.stderr
    (tmp_path / "ok").mkdir()
    ok = _add_to_node(text, f'  /// A probe (test-only).\n  since_probe: double (pt2f_since: "{v[0]}.{v[1]}");\n'
                      f'  /// A union probe (test-only).\n  since_union: ArgumentValue (pt2f_since: "{v[0]}.{v[1]}");\n')
    proc = _regen_scratch(tmp_path / "ok", ok)
    assert proc.returncode == 0, proc.stderr
    minors = (tmp_path / "ok" / "out" / "pt2format" / "_generated" / "minors.py").read_text()
    assert f"'since_probe': {v[1]}" in minors
    # a union field's hidden member index (`since_union_type`) is as new as the field
    assert f"'since_union': {v[1]}" in minors and f"'since_union_type': {v[1]}" in minors


def test_changing_a_released_since_breaks_adding_one_does_not(tmp_path):
    """ATTRIBUTE_RULES: against a release that uses pt2f_since, adding it to a name is compatible (regen
    checks its value), changing or removing it is not."""
    text = FBS.read_text()
    line = '  layout: Layout = STRIDED (pt2f_since: "1.1");'
    assert line in text
    released = _bfbs(tmp_path, text, "released")
    without = _bfbs(tmp_path, text.replace(line, "  layout: Layout = STRIDED;", 1), "without")
    changed = _bfbs(tmp_path, text.replace(line, '  layout: Layout = STRIDED (pt2f_since: "1.2");', 1), "changed")
    assert evolution.diff(without, released) == []
    assert evolution.diff(released, changed) == [
        "table Tensor.layout: attribute pt2f_since changed '1.1' -> '1.2' (the minor that first defined a released "
        "name never changes: it is the first release under schema/history/ that has it, SPEC.md §8.5)"]
    assert [p for p in evolution.diff(released, without) if "pt2f_since changed '1.1' -> None" in p]
