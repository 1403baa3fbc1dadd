"""pt2format/_validate/label.py: a file labelled older than the names it uses is refused by the reader (SPEC.md §8.1).

The writer refuses such a label (`_content_minor.label`); these files are
made the way an attacker (or a hand-edit) would, from a golden 1.0 file with
one 1.1 name added and the label left at 1.0. Without the check, `validate`
passed them and `dump` dropped the newer field without a word. (`read` does
not check it: see the module's docstring.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import pt2format
from pt2format._generated import model as m
from pt2format.errors import ValidationError

from conformance._invalid_bytes import ENCODINGS, tree_file


def _custom_meta(p):
    p.programs[0].graph.custom_meta = m.MapValue(entries=[])


def _mixed_list(p):
    inp = p.programs[0].graph.nodes[0].inputs[0]
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value)])


def _quantized_dtype(p):
    p.tensors[0].dtype = m.ScalarType.QINT8  # a 1.1 enum value


def _meta_bit(p):
    p.required_features |= 4  # META_STORAGES, allocated by 1.1


#: name -> (mutation of a 1.0 golden tree, the path the error names, what it says)
CASES = {
    "field": (_custom_meta, "programs[0].graph.custom_meta", "field Graph.custom_meta"),
    "union member": (_mixed_list, "programs[0].graph.nodes[0].inputs[0].value_type",
                     "union member MixedListArgument"),
    "feature bit": (_meta_bit, "required_features", "feature bit META_STORAGES"),
}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("case", list(CASES))
def test_label_older_than_content_is_a_validation_error(tmp_path, case, encoding):
    mutate, path, what = CASES[case]
    f = tmp_path / "old_label.pt2f"
    f.write_bytes(tree_file("mlp", encoding, mutate))
    with pytest.raises(ValidationError) as info:
        pt2format.validate(f)
    err = info.value
    assert type(err) is ValidationError and err.path == path, err
    assert what in str(err) and err.expected == "format_version 1.1 or newer" and err.got == "1.0", err
    assert err.file == str(f)


def test_enum_value_newer_than_the_label_is_named():
    """An enum value is checked too (a quantized dtype alone also breaks another rule, so on the tree)."""
    from conformance._invalid_bytes import decode
    from pt2format._validate.label import check_label

    package = decode("mlp")[0]
    check_label(package)  # the golden tree as it is: nothing newer than 1.0
    _quantized_dtype(package)
    with pytest.raises(ValidationError) as info:
        check_label(package)
    assert info.value.path == "tensors[0].dtype" and "enum value 43 of Tensor.dtype" in str(info.value)
    assert info.value.expected == "format_version 1.1 or newer"


@pytest.mark.parametrize("case", ["field", "union member"])
def test_the_same_tree_labelled_with_its_minor_reads(tmp_path, case):
    """The control: the one change with the label it needs is a valid file, so the label alone is refused."""
    mutate = CASES[case][0]

    def relabelled(p):
        mutate(p)
        p.format_version.minor = 1

    f = tmp_path / "labelled.pt2f"
    f.write_bytes(tree_file("mlp", "flatbuffers", relabelled))
    pt2format.validate(f)


def test_read_still_reads_it_with_the_newer_name(tmp_path):
    """`read` (and so `load`) does not walk for the label: this reader knows the 1.1 name and keeps it."""
    f = tmp_path / "old_label.pt2f"
    f.write_bytes(tree_file("mlp", "msgpack", _custom_meta))
    with pt2format.read(f) as pf:
        assert pf.package.programs[0].graph.custom_meta == m.MapValue(entries=[])


def test_dump_refuses_rather_than_drops_a_newer_field(tmp_path):
    """`pt2format dump` rendered a 1.0 file without its 1.1 custom_meta; now it fails as validate does."""
    f = tmp_path / "old_label.pt2f"
    f.write_bytes(tree_file("mlp", "json", _custom_meta))
    proc = subprocess.run([sys.executable, "-m", "pt2format", "dump", str(f)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and not proc.stdout
    assert "ValidationError" in proc.stderr and "custom_meta" in proc.stderr, proc.stderr
