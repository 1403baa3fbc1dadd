"""A writer records the smallest minor that defines every name its tree uses, and refuses a tree labelled older.

The expected minor of each name is read from the frozen schemas under
schema/history/ as text (the first release whose schema declares the field),
not from the generated tables the writer uses.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pt2f_samples
from pt2format import FORMAT_VERSION, _api
from pt2format._content_minor import content_minor
from pt2format._generated import container
from pt2format._generated import model as m
from pt2format.errors import VersionError

ROOT = Path(__file__).resolve().parents[2]


def _first_minor_with(table: str, field: str) -> int:
    """The minor of the first release whose schema has `table.field`, or the working minor."""
    for d in sorted((ROOT / "schema" / "history").iterdir(), key=lambda p: tuple(map(int, p.name.split(".")))):
        text = (d / "pt2format.fbs").read_text()
        body = re.search(rf"^table {table}\b[^{{]*\{{(.*?)^\}}", text, re.M | re.S)
        if body and re.search(rf"^\s+{field}\s*:", body.group(1), re.M):
            return int(d.name.split(".")[1])
    return FORMAT_VERSION[1]


def _with_tensor_meta():
    pkg = pt2f_samples.tiny_package()
    pkg.format_version = None
    pkg.programs[0].graph.nodes[0].metadata = m.NodeMetadata(tensor_meta=True)
    return pkg


def test_a_tree_of_first_minor_names_is_labelled_with_it(tmp_path):
    pkg = pt2f_samples.tiny_package()
    pkg.format_version = None
    _api.write_package(tmp_path / "a.pt2f", pkg, pt2f_samples.float_payloads(), fsync=False)
    with _api.read(tmp_path / "a.pt2f") as f:
        assert f.header.format_version == (FORMAT_VERSION[0], 0)


def test_a_later_name_raises_the_label_to_its_minor(tmp_path):
    want = _first_minor_with("NodeMetadata", "tensor_meta")
    _api.write_package(tmp_path / "a.pt2f", _with_tensor_meta(), pt2f_samples.float_payloads(), fsync=False)
    with _api.read(tmp_path / "a.pt2f") as f:
        assert f.header.format_version == (FORMAT_VERSION[0], want)
        assert f.package.format_version.minor == want


def test_a_tree_labelled_older_than_its_names_is_refused(tmp_path):
    want = _first_minor_with("NodeMetadata", "tensor_meta")
    assert want > 0, "the schema has no name newer than its first minor"
    pkg = _with_tensor_meta()
    pkg.format_version = m.FormatVersion(FORMAT_VERSION[0], want - 1)
    with pytest.raises(VersionError, match="older than the names it uses") as e:
        _api.write_package(tmp_path / "a.pt2f", pkg, pt2f_samples.float_payloads(), fsync=False)
    assert e.value.path == "format_version" and e.value.got == f"{FORMAT_VERSION[0]}.{want - 1}"
    assert not (tmp_path / "a.pt2f").exists()


def test_a_newer_label_is_kept(tmp_path):
    """A converter keeps the label of the file it read; only an older one is refused."""
    pkg = pt2f_samples.tiny_package()
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    _api.write_package(tmp_path / "a.pt2f", pkg, pt2f_samples.float_payloads(), fsync=False)
    with _api.read(tmp_path / "a.pt2f") as f:
        assert f.header.format_version == tuple(FORMAT_VERSION)


def test_a_feature_bit_counts_with_the_minor_that_allocated_it():
    for bit, (name, since) in container.FEATURES.items():
        pkg = pt2f_samples.tiny_package()
        pkg.required_features = bit
        assert content_minor(pkg) == since[1], name


def test_an_enum_value_this_schema_does_not_define_is_refused():
    """A tree read from a newer file keeps an unknown enum value as its integer; writing it would label a
    file with a minor that does not define it."""
    pkg = pt2f_samples.tiny_package()
    pkg.tensors[0].dtype = max(int(v) for v in m.ScalarType) + 1
    with pytest.raises(VersionError, match="does not define"):
        content_minor(pkg)
