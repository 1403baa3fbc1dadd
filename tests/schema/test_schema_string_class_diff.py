"""The compatibility diff covers the attributes that decide whether a file reads (issue 22, point 1).

A field's string class (`pt2f_string`) and a dtype's item size (`pt2f_itemsize`)
decide what a reader accepts as much as a field's type does. Making a class
stricter makes new readers refuse valid older files; making it looser lets new
writers produce files that readers of the release refuse. Both fail the diff
(SPEC.md §8.1: a released field's class never changes; the one loosening was a
re-cut of 1.0 before the first release). Each edit is made to the working
schema text, found by class (not by a field name that may change).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

import evolution
import regen
from pt2format._strings import class_admits
from toolpaths import require_tool

FBS = regen.FBS


def _schema(text: str, tmp: Path):
    require_tool("flatc", "flatc")  # fail, never skip, when flatc is missing
    d = Path(tempfile.mkdtemp(dir=tmp))
    p = d / "pt2format.fbs"
    p.write_text(text)
    return regen.build_bfbs(d, p)


def _with_class(text: str, old: str, new: str) -> str:
    """The working schema with the first string field of class `old` declared `new` instead."""
    pat = re.compile(rf'^(  \w+: (?:string|\[string\]) \((?:[^)]*, )?pt2f_string: )"{old}"', re.M)
    edited, n = pat.subn(rf'\1"{new}"', text, count=1)
    assert n == 1, f"no field of class {old}"
    return edited


def _diff(text: str, edited: str, tmp_path) -> list[str]:
    assert edited != text
    return evolution.diff(_schema(text, tmp_path), _schema(edited, tmp_path))


@pytest.mark.parametrize("old,new", [("free_text", "identifier"), ("module_stack_path", "attr_path"),
                                     ("token", "local_name")])
def test_a_stricter_class_fails_the_diff(old, new, tmp_path):
    assert class_admits(old, new) and not class_admits(new, old)
    text = FBS.read_text()
    problems = _diff(text, _with_class(text, old, new), tmp_path)
    assert any("tightened" in p and f"{old!r} -> {new!r}" in p for p in problems), problems


@pytest.mark.parametrize("old,new", [("identifier", "free_text"), ("attr_path", "module_call_path"),
                                     ("local_name", "identifier")])
def test_a_looser_class_fails_the_diff(old, new, tmp_path):
    """After the first release a class never loosens: a reader of the release would refuse the new strings."""
    assert class_admits(new, old) and not class_admits(old, new)
    text = FBS.read_text()
    problems = _diff(text, _with_class(text, old, new), tmp_path)
    assert any("loosened" in p and f"{old!r} -> {new!r}" in p for p in problems), problems


def test_an_unrelated_class_fails_the_diff(tmp_path):
    text = FBS.read_text()
    problems = _diff(text, _with_class(text, "file_name", "local_name"), tmp_path)
    assert any("string class changed 'file_name' -> 'local_name'" in p for p in problems), problems


def test_a_changed_item_size_fails_the_diff(tmp_path):
    text = FBS.read_text()
    edited, n = re.subn(r'\(pt2f_itemsize: "4"\)', '(pt2f_itemsize: "8")', text, count=1)
    assert n == 1
    problems = _diff(text, edited, tmp_path)
    assert any("attribute pt2f_itemsize changed '4' -> '8'" in p for p in problems), problems


def test_an_unchanged_schema_has_no_attribute_problem(tmp_path):
    text = FBS.read_text()
    s = _schema(text, tmp_path)
    assert evolution.diff(s, s) == []


def _with_attribute(text: str, values: list) -> str:
    """The working schema with a test-only attribute kind declared and set on its first string fields:
    `values[i]` on the i-th (None leaves that field without it)."""
    text = text.replace('attribute "pt2f_string";', 'attribute "pt2f_string";\nattribute "pt2f_test_limit";', 1)
    fields = iter(values)

    def one(mt):
        v = next(fields, None)
        return mt.group(0) if v is None else f'{mt.group(1)}, pt2f_test_limit: "{v}")'

    return re.sub(r'^(  \w+: string \(pt2f_string: "\w+")\)', one, text, count=len(values), flags=re.M)


@pytest.mark.parametrize("before,after", [(["10", "5"], ["20", "5"]),  # edited
                                          (["10", "5"], [None, "5"]),  # removed from a released field
                                          ([None, "5"], ["10", "5"])])  # added to a released field
def test_an_attribute_kind_without_a_rule_fails_on_any_change(before, after, tmp_path):
    """The contract is a table (evolution.ATTRIBUTE_RULES): a kind the release used that the table does not list
    fails on any change of a released name."""
    assert "pt2f_test_limit" not in evolution.ATTRIBUTE_RULES
    text = FBS.read_text()
    problems = evolution.diff(_schema(_with_attribute(text, before), tmp_path),
                              _schema(_with_attribute(text, after), tmp_path))
    assert any("pt2f_test_limit" in p and "no compatibility rule" in p for p in problems), problems


def test_a_looser_class_names_the_rule_for_loosening(tmp_path):
    text = FBS.read_text()
    problems = _diff(text, _with_class(text, "identifier", "free_text"), tmp_path)
    assert any("admit them with a new field" in p and "§8.1" in p for p in problems), problems


def test_a_changed_bound_or_index_range_fails_the_diff(tmp_path):
    """`pt2f_limits` (a table attribute) and `pt2f_index` decide what a reader accepts: equal after a release."""
    text = FBS.read_text()
    limits = re.search(r'pt2f_limits: "([^"]*)"', text)
    assert limits and "max_depth=128" in limits.group(1).replace(" ", ""), "the root table's bounds"
    lowered = text.replace(limits.group(0), limits.group(0).replace("128", "64", 1), 1)
    problems = _diff(text, lowered, tmp_path)
    assert any("pt2f_limits" in p for p in problems), problems
    index = re.search(r'pt2f_index: "([^"]*)"', text)
    narrowed = text.replace(index.group(0), 'pt2f_index: "Program.nodes"', 1)
    problems = _diff(text, narrowed, tmp_path)
    assert any("pt2f_index" in p for p in problems), problems


def test_changed_keys_fail_the_diff(tmp_path):
    """`pt2f_keys` decides what a reader accepts: "unique" -> "sorted" refuses released files, removing it lets
    new files break what released readers check; once a release has the kind, any change fails."""
    text = FBS.read_text()
    keys = re.search(r' \(pt2f_keys: "(\w+) unique"\)', text)
    assert keys, "a field with unique keys"
    for edited in (text.replace(keys.group(0), f' (pt2f_keys: "{keys.group(1)} sorted")', 1),
                   text.replace(keys.group(0), "", 1)):
        problems = _diff(text, edited, tmp_path)
        assert any("pt2f_keys" in p for p in problems), problems


def test_changed_values_fail_the_diff(tmp_path):
    """`pt2f_value` decides what a reader accepts: "declared" -> "declared nonzero" refuses released files,
    removing it lets new files hold what released readers refuse; once a release has the kind, any change fails."""
    text = FBS.read_text()
    value = re.search(r' \(pt2f_value: "declared"\)', text)
    assert value, "an enum field with declared values"
    for edited in (text.replace(value.group(0), ' (pt2f_value: "declared nonzero")', 1),
                   text.replace(value.group(0), "", 1)):
        problems = _diff(text, edited, tmp_path)
        assert any("pt2f_value" in p for p in problems), problems


def test_a_new_bound_passes_and_a_removed_one_fails(tmp_path):
    """pt2f_limits is judged per bound: a bound the release lists never changes or goes; a new one may be added."""
    text = FBS.read_text()
    limits = re.search(r'pt2f_limits: "([^"]*)"', text)
    added = text.replace(limits.group(0), limits.group(0)[:-1] + '; max_test_bound=7"', 1)
    assert not [p for p in _diff(text, added, tmp_path) if "pt2f_limits" in p]
    removed = text.replace(limits.group(0), limits.group(0).replace("max_depth=128; ", "", 1), 1)
    problems = _diff(text, removed, tmp_path)
    assert any("pt2f_limits bound max_depth" in p for p in problems), problems


def test_a_bound_respelled_with_the_same_value_passes(tmp_path):
    """Bounds are compared by value: `1<<30` written out as `1073741824` changes nothing a reader does."""
    text = FBS.read_text()
    limits = re.search(r'pt2f_limits: "([^"]*)"', text)
    assert "max_program_bytes=1<<30" in limits.group(1), "the root table's bounds"
    respelled = text.replace(limits.group(0), limits.group(0).replace("1<<30", str(1 << 30), 1), 1)
    assert not [p for p in _diff(text, respelled, tmp_path) if "pt2f_limits" in p]


def test_a_malformed_bound_fails_the_diff_as_it_fails_regen(tmp_path):
    """evolution parses pt2f_limits with regen's parser (codegen/limits.py): one message for a malformed entry."""
    from codegen.limits import read_limits

    text = FBS.read_text()
    limits = re.search(r'pt2f_limits: "([^"]*)"', text)
    want = r"^regen: malformed pt2f_limits entry ' max_depth=12x' \(want name=N or name=N<<K\)$"
    broken = _schema(text.replace(limits.group(0), limits.group(0).replace("max_depth=128", "max_depth=12x", 1), 1),
                     tmp_path)
    with pytest.raises(SystemExit, match=want):
        evolution.diff(_schema(text, tmp_path), broken)
    with pytest.raises(SystemExit, match=want):
        read_limits(broken)
