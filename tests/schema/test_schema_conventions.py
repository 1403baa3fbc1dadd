"""The schema keeps one presence convention (SPEC.md §4.1), checked on every table so 1.1 additions follow it."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "schema"))  # regen.py is a script beside the schema, not a package

import regen  # noqa: E402

# The three structs whose `expr` chooses between a concrete value and a pool expression: structs
# cannot hold a union, so -1 is their discriminator. No other field may give a number a meaning of "absent".
SYM_STRUCTS = {"SymInt", "SymFloat", "SymBool"}
# Values that are torch's own domain, not a format sentinel: c10's DeviceIndex is -1 for "no index".
TORCH_DOMAIN = {"Device.index"}
# reflection.fbs BaseType values (a stable part of flatc's binary schema format).
BOOL, STRING = 2, 13


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    from toolpaths import require_tool

    require_tool("flatc", "flatc")
    return regen.build_bfbs(tmp_path_factory.mktemp("bfbs"))


def _objects(schema):
    return [o for o in schema.objects if o.name.startswith("pt2format.")]


def test_has_flags_guard_a_sibling(schema):
    """A `has_X` flag is the presence bit of field X (or float_X) of the same table, never a value of its own."""
    checked = 0
    for o in _objects(schema):
        names = {f.name for f in o.fields}
        for f in o.fields:
            if f.name.startswith("has_"):
                base = f.name[4:]
                assert f.type.base == BOOL, f"{o.short}.{f.name} is not a bool"
                assert base in names or f"float_{base}" in names, f"{o.short}.{f.name} guards no field"
                checked += 1
    assert checked >= 4  # ValueRange.has_lower/has_upper, Symbol.has_hint, InputToTensorConstantSpec.has_persistent


def test_no_optional_scalars(schema):
    """Scalars are never `= null`: MessagePack and JSON have no absent scalar, so presence is a has_ flag."""
    bad = [f"{o.short}.{f.name}" for o in _objects(schema) for f in o.fields if f.optional and f.type.base < STRING]
    assert not bad


def test_minus_one_is_only_the_sym_discriminator(schema):
    bad = []
    for o in _objects(schema):
        if o.short in SYM_STRUCTS:
            continue
        for f in o.fields:
            doc = " ".join(f.doc)
            if f"{o.short}.{f.name}" in TORCH_DOMAIN:
                continue
            if re.search(r"(?<![\w.])(-|−)1\b", doc):
                bad.append(f"{o.short}.{f.name}: {doc.strip()}")
    assert not bad, "sentinel -1 outside the Sym structs:\n" + "\n".join(bad)
