"""The FlatBuffers verifier's table bound is written once, in the schema's pt2f_limits (issue 43, item 4).

The C++ reader (flatbuffers::Verifier's max_tables) and the TypeScript
verifier each spelled it (`max(1e6, bytes / 4)`), and the two drifted once.
Now both take it from the generated limits; this test fails if either spells
a number for it again, or if the generated constants leave the schema's values.
"""

from __future__ import annotations

import re
from pathlib import Path

from pt2format._generated import limits

ROOT = Path(__file__).resolve().parents[2]
CPP = ROOT / "loaders" / "cpp" / "src" / "reader.cc"
TS = ROOT / "loaders" / "ts" / "src" / "verify.ts"


def _schema_limits() -> dict:
    text = (ROOT / "schema" / "pt2format.fbs").read_text(encoding="utf-8")
    spec = re.search(r'pt2f_limits: "([^"]*)"', text).group(1)
    return {k.strip(): v.strip() for k, v in (p.split("=") for p in spec.split(";"))}


def test_bound_is_in_the_schema_and_generated():
    spelled = _schema_limits()
    assert int(spelled["verifier_min_tables"]) == limits.VERIFIER_MIN_TABLES
    assert int(spelled["verifier_bytes_per_table"]) == limits.VERIFIER_BYTES_PER_TABLE
    for path, names in ((ROOT / "loaders/cpp/generated/pt2format_limits.h", ("kVerifierMinTables", "kVerifierBytesPerTable")),
                        (ROOT / "loaders/ts/src/generated/limits.ts", ("VERIFIER_MIN_TABLES", "VERIFIER_BYTES_PER_TABLE"))):
        text = path.read_text(encoding="utf-8")
        assert all(n in text for n in names), path


def _bound_expression(source: str, anchor: str) -> str:
    """The statement that computes the default bound: from `anchor` to the end of that statement."""
    start = source.index(anchor)
    return source[start:source.index(";", start)]


def test_readers_take_the_bound_from_the_generated_limits():
    cpp = _bound_expression(CPP.read_text(encoding="utf-8"), "const uint32_t max_tables =")
    ts = _bound_expression(TS.read_text(encoding="utf-8"), "this.maxTables =")
    assert "limits::kVerifierMinTables" in cpp and "limits::kVerifierBytesPerTable" in cpp, cpp
    assert "VERIFIER_MIN_TABLES" in ts and "VERIFIER_BYTES_PER_TABLE" in ts, ts
    for expr in (cpp, ts):  # no number of its own: the bound is the schema's
        assert not re.search(r"\b(1_?000_?000|1e6)\b|/\s*\d", expr), expr
