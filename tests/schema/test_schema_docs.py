"""Every table, struct, field, enum, enum value and union member of the schema has a /// doc comment."""

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]



def _schema():
    import regen

    with tempfile.TemporaryDirectory() as d:
        return regen.build_bfbs(Path(d)), regen.UTYPE


def test_every_declaration_is_documented():
    schema, utype = _schema()
    missing = []
    for obj in schema.objects:
        if not obj.doc:
            missing.append(obj.name)
        # A union's hidden `<name>_type` field is documented through the union field itself.
        missing += [f"{obj.name}.{f.name}" for f in obj.fields if not f.doc and f.type.base != utype]
    for enum in schema.enums:
        if not enum.doc:
            missing.append(enum.name)
        missing += [f"{enum.name}.{v.name}" for v in enum.values if not v.doc and not (enum.is_union and v.value == 0)]
    assert len(schema.objects) > 50 and len(schema.enums) > 10
    assert not missing, f"undocumented: {missing}"
