"""StringEntry vectors (Package.metadata, Program.metadata, NodeMetadata.extra) must be sorted by key, keys unique.

The schema documents the rule on `StringEntry` ("Vectors of entries are sorted
by key, keys unique") and marks `key` as the FlatBuffers `(key)` field, whose
order is flatc's: byte-wise on UTF-8, which is code-point order. The expected
order in these tests is computed from the UTF-8 bytes, independently of the
validator's string comparison.
"""

import sys
from pathlib import Path

import pytest


from pt2f_samples import ENCODINGS, float_payloads, tiny_package, write_raw  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format._validate import validate_package  # noqa: E402
from pt2format.errors import ValidationError  # noqa: E402

SIZES = (4, 4)


def filled():
    """tiny_package with storages placed as write_package would."""
    pkg = tiny_package(SIZES)
    for i, st in enumerate(pkg.storages):
        st.segment, st.offset, st.size = 0, 64 * i, 4 * SIZES[i]
    pkg.segments = [m.Segment(0, 1)]
    return pkg


def entries(*keys):
    return [m.StringEntry(k, f"v{i}") for i, k in enumerate(keys)]


def fails(pkg, path):
    with pytest.raises(ValidationError) as e:
        validate_package(pkg, data_section_lengths={1: 1 << 20})
    assert type(e.value) is ValidationError
    assert e.value.path == path, str(e.value)
    return e.value


def with_subgraph(pkg):
    """Give node 0 a GraphArgument input whose subgraph has one node; returns (graph argument, subgraph)."""
    sub = m.Graph(nodes=[m.Node(name="inner", target="torch.ops.aten.sin.default")])
    garg = m.GraphArgument("body", sub)
    pkg.programs[0].graph.nodes[0].inputs.append(m.NamedArgument("body", garg))
    return garg, sub


def _set_package(pkg, es):
    pkg.metadata = es


def _set_program(pkg, es):
    pkg.programs[0].metadata = es


def _set_node(pkg, es):
    pkg.programs[0].graph.nodes[1].metadata = m.NodeMetadata(extra=es)


def _set_unpack(pkg, es):
    pkg.programs[0].graph.nodes[0].unpack_metadata = [m.UnpackMetadata(0, m.NodeMetadata(extra=es))]


def _set_input(pkg, es):
    pkg.programs[0].graph.input_metadata = [m.NodeMetadata(), m.NodeMetadata(extra=es)]


def _set_output(pkg, es):
    pkg.programs[0].graph.output_metadata = m.NodeMetadata(extra=es)


def _set_get_attr(pkg, es):
    garg, _ = with_subgraph(pkg)
    garg.metadata = m.NodeMetadata(extra=es)


def _set_subgraph_node(pkg, es):
    _, sub = with_subgraph(pkg)
    sub.nodes[0].metadata = m.NodeMetadata(extra=es)


G = "programs[0].graph"
# Every place a StringEntry vector can sit, and the field path of the vector there.
PLACES = {
    "package": (_set_package, "metadata"),
    "program": (_set_program, "programs[0].metadata"),
    "node": (_set_node, f"{G}.nodes[1].metadata.extra"),
    "getitem": (_set_unpack, f"{G}.nodes[0].unpack_metadata[0].metadata.extra"),
    "placeholder": (_set_input, f"{G}.input_metadata[1].extra"),
    "output": (_set_output, f"{G}.output_metadata.extra"),
    "get_attr": (_set_get_attr, f"{G}.nodes[0].inputs[2].value.metadata.extra"),
    "subgraph_node": (_set_subgraph_node, f"{G}.nodes[0].inputs[2].value.graph.nodes[0].metadata.extra"),
}


@pytest.mark.parametrize("place", PLACES)
def test_sorted_entries_pass(place):
    setter, _ = PLACES[place]
    pkg = filled()
    setter(pkg, entries("a", "b", "c"))
    validate_package(pkg, data_section_lengths={1: 1 << 20})


@pytest.mark.parametrize("place", PLACES)
def test_unsorted_entries_rejected(place):
    setter, path = PLACES[place]
    pkg = filled()
    setter(pkg, entries("a", "c", "b"))
    err = fails(pkg, f"{path}[2].key")
    assert "sorted by key" in str(err) and err.got == "'b'"


@pytest.mark.parametrize("place", PLACES)
def test_duplicate_keys_rejected(place):
    setter, path = PLACES[place]
    pkg = filled()
    setter(pkg, entries("a", "b", "b"))
    fails(pkg, f"{path}[2].key")


@pytest.mark.parametrize("place", PLACES)
def test_missing_key_rejected(place):
    setter, path = PLACES[place]
    pkg = filled()
    setter(pkg, [m.StringEntry("a", "1"), m.StringEntry(None, "2")])
    fails(pkg, f"{path}[1].key")


# Keys whose UTF-16 order differs from their code-point order (U+FFFF vs an astral
# character, stored as surrogates D83D DE00) and whose case differs ("B" < "a").
KEYS = ["a", "B", "\uffff", "\U0001f600", "_", "é", "", "a\x00", "ab"]


def test_order_is_utf8_byte_order():
    """Sorting by UTF-8 bytes passes; every adjacent swap of that order fails at the swapped entry."""
    order = sorted(KEYS, key=lambda k: k.encode("utf-8"))
    assert order.index("\uffff") < order.index("\U0001f600")  # not UTF-16 order
    pkg = filled()
    pkg.metadata = entries(*order)
    validate_package(pkg, data_section_lengths={1: 1 << 20})
    for i in range(1, len(order)):
        swapped = list(order)
        swapped[i - 1], swapped[i] = swapped[i], swapped[i - 1]
        pkg.metadata = entries(*swapped)
        fails(pkg, f"metadata[{i}].key")


def test_metadata_checks_reach_every_node_metadata():
    """Not only `extra`: unbacked-binding indices and custom values are checked on get_attr/placeholder metadata."""
    pkg = filled()
    pkg.programs[0].graph.input_metadata = [m.NodeMetadata(unbacked_bindings=[m.UnbackedBinding(symbol=0)])]
    fails(pkg, f"{G}.input_metadata[0].unbacked_bindings[0].symbol")
    pkg = filled()
    garg, _ = with_subgraph(pkg)
    garg.metadata = m.NodeMetadata(custom=m.MapValue([m.MapEntry(m.Value(m.StringValue("t")),
                                                                 m.Value(m.TensorRefValue(9)))]))
    fails(pkg, f"{G}.nodes[0].inputs[2].value.metadata.custom.entries[0].value.value.tensor")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_read_rejects_unsorted_file(tmp_path, encoding):
    """A file planted with unsorted node metadata (bypassing the writer) fails on read, naming file and path."""
    pkg = filled()
    _set_node(pkg, entries("z", "a"))
    path = tmp_path / "m.pt2f"
    write_raw(path, pkg, float_payloads(SIZES), encoding=encoding)
    with pytest.raises(ValidationError) as e:
        _api.read(path)
    assert e.value.path == f"{G}.nodes[1].metadata.extra[1].key"
    assert str(path) in str(e.value)


def test_write_package_refuses_unsorted(tmp_path):
    pkg = tiny_package(SIZES)
    pkg.metadata = entries("b", "a")
    with pytest.raises(ValidationError) as e:
        _api.write_package(tmp_path / "m.pt2f", pkg, float_payloads(SIZES), fsync=False)
    assert e.value.path == "metadata[1].key"
    assert not list(tmp_path.iterdir())  # nothing left behind
