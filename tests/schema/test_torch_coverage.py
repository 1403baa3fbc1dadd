"""Every field of torch's serialization schema is mapped to ours or dropped for a reason."""

import dataclasses
import enum
import re
from pathlib import Path

import pytest

from pt2format._generated import model

torch_schema = pytest.importorskip("torch._export.serde.schema")

TABLE = Path(__file__).resolve().parents[2] / "schema" / "torch_coverage.md"
ROW = re.compile(r"^\| `([^`]+)` \| (`[^`]+`|\(dropped\)) \| (.*) \|$")


def _rows():
    rows = {}
    for line in TABLE.read_text().splitlines():
        m = ROW.match(line)
        if m:
            torch_name, ours, note = m.groups()
            assert torch_name not in rows, f"duplicate row for {torch_name}"
            rows[torch_name] = (ours.strip("`"), note.strip())
    return rows


def _torch_entries():
    entries = []
    for name in dir(torch_schema):
        obj = getattr(torch_schema, name)
        if not isinstance(obj, type) or obj.__module__ != torch_schema.__name__:
            continue
        if dataclasses.is_dataclass(obj):
            entries += [f"{name}.{f.name}" for f in dataclasses.fields(obj)]
        elif issubclass(obj, enum.Enum):
            entries += [f"{name}.{m.name}" for m in obj]
    return entries


def _resolves(ref: str) -> bool:
    if ":" in ref:
        union, member = ref.split(":")
        return member in model.UNIONS.get(union, ())
    owner, _, attr = ref.partition(".")
    if owner in model.ENUMS:
        return attr in model.ENUMS[owner].__members__
    cls = model.TABLES.get(owner)
    return cls is not None and attr in cls.__slots__


def test_torch_schema_is_walked():
    entries = _torch_entries()
    # torch 2.13's schema has well over a hundred fields; an empty walk would make the test vacuous.
    assert len(entries) > 150
    assert "TensorMeta.sizes" in entries and "ScalarType.UINT64" in entries


def test_every_torch_field_is_mapped_or_dropped_with_reason():
    rows = _rows()
    missing = [e for e in _torch_entries() if e not in rows]
    assert not missing, f"torch schema entries not in schema/torch_coverage.md: {missing}"
    for torch_name, (ours, note) in rows.items():
        if ours == "(dropped)":
            assert note, f"{torch_name} is dropped without a reason"


def test_every_mapping_points_at_our_schema():
    bad = [(t, ours) for t, (ours, _) in _rows().items() if ours != "(dropped)" and not _resolves(ours)]
    assert not bad, f"mappings to names that are not in pt2format.fbs: {bad}"


def test_no_stale_rows():
    stale = sorted(set(_rows()) - set(_torch_entries()))
    assert not stale, f"rows for torch entries that no longer exist: {stale}"
