"""The identifier table SPEC.md §9 publishes as normative data (schema/identifiers.json) is the one every
reader uses: Python's generated tuples, the C++ reader's kIdentRanges and the TypeScript reader's IDENT_RANGES,
row for row. (tests/core/test_strings.py checks that table against Python's own identifier rule.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _published() -> dict:
    return json.loads((ROOT / "schema" / "identifiers.json").read_text(encoding="utf-8"))


def test_the_spec_names_the_published_table_as_normative():
    spec = (ROOT / "schema" / "SPEC.md").read_text(encoding="utf-8")
    assert "schema/identifiers.json" in spec and "normative" in spec.split("schema/identifiers.json", 1)[1][:400]


def test_python_reader_uses_the_published_table():
    from pt2format._generated import identifier_chars as t

    doc = _published()
    assert doc["unicode_version"] == t.UNICODE_VERSION
    assert doc["columns"] == ["first", "last", "may_start", "combining_class"]
    assert [tuple(r) for r in doc["rows"]] == list(zip(t.FIRST, t.LAST, t.START, t.CCC))


def test_cpp_reader_uses_the_published_table():
    text = (ROOT / "loaders" / "cpp" / "generated" / "pt2format_strings.h").read_text(encoding="utf-8")
    body = text.split("kIdentRanges[] = {", 1)[1].split("};", 1)[0]
    rows = [[int(a, 16), int(b, 16), int(s), int(c)] for a, b, s, c in
            re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+), (\d+), (\d+)\}", body)]
    assert rows == _published()["rows"]


def test_ts_reader_uses_the_published_table():
    text = (ROOT / "loaders" / "ts" / "src" / "generated" / "strings.ts").read_text(encoding="utf-8")
    flat = json.loads(text.split("IDENT_RANGES: readonly number[] = ", 1)[1].split(";", 1)[0])
    assert [flat[i:i + 4] for i in range(0, len(flat), 4)] == _published()["rows"]
