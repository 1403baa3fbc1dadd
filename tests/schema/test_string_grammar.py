"""A released string class's grammar never changes (SPEC.md §8.1), even by an edit of pt2format/_strings.py alone.

The name-level diff sees a field whose class changes, not a class whose
grammar changes. schema/string_grammar.py records, next to each frozen
schema, a digest of each class's answers on a fixed probe set; here every
class a released schema uses must still give the recorded answers.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "schema"))

import string_grammar as G  # noqa: E402

HISTORY = sorted((ROOT / "schema" / "history").glob("*/pt2format.fbs"))


@pytest.fixture(scope="module")
def current():
    return G.digests()


def _recorded(fbs: Path) -> dict:
    f = fbs.parent / "string_grammar.json"
    assert f.is_file(), f"{f.relative_to(ROOT)} is missing: record it with schema/string_grammar.py --write"
    return json.loads(f.read_text())


@pytest.mark.parametrize("fbs", HISTORY, ids=lambda p: p.parent.name)
def test_released_string_grammars_are_unchanged(fbs, current):
    rec = _recorded(fbs)
    assert rec["probes"] == current["probes"], \
        "the probe set of schema/string_grammar.py changed: the recorded digests no longer apply"
    assert rec["identifier_table"] == current["identifier_table"], \
        "the generated identifier table changed: identifiers of a released version admit other characters"
    used = set(re.findall(r'pt2f_string: "([a-z_]+)"', fbs.read_text()))
    assert used and used <= set(rec["classes"]), sorted(used - set(rec["classes"]))
    changed = [c for c in sorted(used) if rec["classes"][c] != current["classes"].get(c)]
    assert not changed, (f"string classes of released version {fbs.parent.name} admit other strings than when "
                         f"it was released: {changed} (SPEC.md §8.1: give the field a new class instead)")


def test_a_grammar_edit_changes_the_digest(monkeypatch, current):
    """The digest sees an edit of one class's grammar, and only that class moves."""
    from pt2format import _strings

    check, empty, longest = _strings._CLASSES["qualified_name"]
    monkeypatch.setitem(_strings._CLASSES, "qualified_name",
                        (lambda s: None if s == "a-" else check(s), empty, longest))
    after = G.digests(["identifier", "qualified_name", "token"])["classes"]
    assert [c for c in after if after[c] != current["classes"][c]] == ["qualified_name"]
