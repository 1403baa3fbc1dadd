"""The name-level diff (schema/evolution.py) against schema/history/ fails on every incompatible edit.

`flatc --conform` compares binary layouts only: it lets renames of fields,
enum values and union members through, and a new `(required)`. JSON, the
canonical dump and the generated code are keyed by names, so the diff checks
them too. Each edit below is made to the working schema text, found by shape
(not by a field name that may change), and must be reported; the compatible
additions of a minor must not be.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

import evolution
import regen
from toolpaths import require_tool

FBS = regen.FBS
HISTORY = regen.HISTORY


def _schema(text: str, tmp: Path):
    """flatc's reading of a schema text."""
    require_tool("flatc", "flatc")  # fail, never skip, when flatc is missing
    d = Path(tempfile.mkdtemp(dir=tmp))
    p = d / "pt2format.fbs"
    p.write_text(text)
    return regen.build_bfbs(d, p)


def test_working_schema_is_name_compatible_with_every_release(tmp_path):
    working = _schema(FBS.read_text(), tmp_path)
    releases = evolution.history_versions(HISTORY)
    assert releases, "schema/history/ holds no released schema"
    version = evolution.schema_version(FBS.read_text())
    for v, path in releases:
        assert v <= version, f"schema/history/{v[0]}.{v[1]} is newer than the working schema {version}"
        if v[0] != version[0]:
            continue
        problems = evolution.diff(_schema(path.read_text(), tmp_path), working)
        assert not problems, f"incompatible with released {v[0]}.{v[1]}:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------
# Edits, found by shape in the working schema text
# ---------------------------------------------------------------------------

_BLOCK = re.compile(r"^(table|enum|union) (\w+)[^{\n]*\{\n(.*?)^\}", re.M | re.S)


def _blocks(text, kind):
    return [m for m in _BLOCK.finditer(text) if m.group(1) == kind]


def _member_lines(m):
    """(start, end, line) of each declaration line of a block (doc comments skipped)."""
    out = []
    pos = m.start(3)
    for line in m.group(3).splitlines(keepends=True):
        s = line.strip()
        if s and not s.startswith("//"):
            out.append((pos, pos + len(line), line))
        pos += len(line)
    return out


def _replace(text, start, end, new):
    return text[:start] + new + text[end:]


def _string_field(text):
    """The first `name: string (...);` field of a table with more than one field."""
    for m in _blocks(text, "table"):
        lines = _member_lines(m)
        for start, end, line in lines:
            if len(lines) > 1 and re.fullmatch(r"  \w+: string( \([^)]*\))?;\n", line):
                return start, end, line
    raise AssertionError("no plain string field in the schema")


def _enum_value(text, which):
    """A value line of the first enum with at least three values (which: 1 = second, -1 = last)."""
    for m in _blocks(text, "enum"):
        lines = _member_lines(m)
        if len(lines) >= 3:
            return lines[which]
    raise AssertionError("no enum with three values")


def _union_member(text, which):
    for m in _blocks(text, "union"):
        lines = _member_lines(m)
        if len(lines) >= 3:
            return lines[which]
    raise AssertionError("no union with three members")


def rename_field(t):
    s, e, line = _string_field(t)
    return _replace(t, s, e, re.sub(r"^  (\w+):", r"  \1_renamed:", line))


def delete_field(t):
    s, e, _ = _string_field(t)
    return _replace(t, s, e, "")


def change_field_type(t):
    s, e, line = _string_field(t)
    return _replace(t, s, e, line.replace(": string", ": [string]", 1))


def require_field(t):
    s, e, line = _string_field(t)
    return _replace(t, s, e, (line.replace(" (", " (required, ", 1) if "(" in line else line.replace(";", " (required);", 1)))


def new_required_field(t):
    m = _blocks(t, "table")[0]
    return _replace(t, m.end(3), m.end(3), "  added_in_test: string (required);\n")


def rename_enum_value(t):
    s, e, line = _enum_value(t, 1)
    return _replace(t, s, e, re.sub(r"^(\s*)(\w+)", r"\1\2_RENAMED", line))


def delete_enum_value(t):
    s, e, _ = _enum_value(t, -1)
    return _replace(t, s, e, "")


def change_enum_value(t):
    s, e, line = _enum_value(t, -1)
    return _replace(t, s, e, re.sub(r"^(\s*\w+)(\s*=\s*\d+)?", r"\1 = 250", line))


def rename_union_member(t):
    s, e, line = _union_member(t, 1)
    return _replace(t, s, e, re.sub(r"^(\s*)(\w+)", r"\1Renamed: \2", line))


def delete_union_member(t):
    s, e, _ = _union_member(t, -1)
    return _replace(t, s, e, "")


def swap_union_member_table(t):
    (s1, e1, l1), (s2, e2, l2) = _union_member(t, 1), _union_member(t, 2)
    assert e1 <= s2
    return t[:s1] + l2 + t[e1:s2] + l1 + t[e2:]


def rename_table(t):
    s, e, _ = _string_field(t)
    m = next(m for m in _blocks(t, "table") if m.start(3) <= s < m.end(3))
    name = m.group(2)
    return re.sub(rf"\b{name}\b", name + "Renamed", t)


INCOMPATIBLE = {
    "rename a field": (rename_field, "renamed to"),
    "delete a field": (delete_field, "deleted"),
    "change a field's type": (change_field_type, "type changed"),
    "make a field (required)": (require_field, "(required) added"),
    "add a (required) field": (new_required_field, "cannot be (required)"),
    "rename an enum value": (rename_enum_value, "renamed to"),
    "delete an enum value": (delete_enum_value, "deleted"),
    "renumber an enum value": (change_enum_value, "value changed"),
    "rename a union member": (rename_union_member, "renamed to"),
    "delete a union member": (delete_union_member, "deleted"),
    "reorder union members": (swap_union_member_table, "member 2"),
    "rename a table": (rename_table, "removed"),
}


@pytest.mark.parametrize("edit", sorted(INCOMPATIBLE))
def test_diff_catches_incompatible_edit(edit, tmp_path):
    fn, words = INCOMPATIBLE[edit]
    text = FBS.read_text()
    edited = fn(text)
    assert edited != text
    problems = evolution.diff(_schema(text, tmp_path), _schema(edited, tmp_path))
    assert problems, f"the diff let '{edit}' through"
    assert any(words in p for p in problems), problems


def test_diff_accepts_what_a_minor_may_add(tmp_path):
    """A field appended to a table, a value to an enum, a member to a union: no problem reported."""
    text = FBS.read_text()
    t = text
    m = _blocks(t, "table")[0]
    t = _replace(t, m.end(3), m.end(3), "  added_in_test: string;\n")
    m = next(m for m in _blocks(t, "enum") if len(_member_lines(m)) >= 3)
    last = _member_lines(m)[-1][2]
    sep = "" if last.rstrip().endswith(",") else ","
    value = "" if "=" not in m.group(3) else " = 200"
    t = _replace(t, m.end(3), m.end(3), f"{sep}\n  ADDED_IN_TEST{value}\n" if sep else f"  ADDED_IN_TEST{value},\n")
    m = next(m for m in _blocks(t, "union") if len(_member_lines(m)) >= 3)
    first_table = _blocks(t, "table")[0].group(2)
    last = _member_lines(m)[-1][2]
    sep = "" if last.rstrip().endswith(",") else ","
    t = _replace(t, m.end(3), m.end(3), f"{sep}\n  AddedInTest: {first_table}\n" if sep else
                 f"  AddedInTest: {first_table},\n")
    assert t != text
    assert evolution.diff(_schema(text, tmp_path), _schema(t, tmp_path)) == []
