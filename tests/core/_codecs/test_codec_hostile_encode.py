"""Malformed trees and bad arguments: the codec interface and every encoder raise typed errors naming the path."""

from __future__ import annotations


import pytest

from pt2format import _codecs as C
from pt2format._generated import model as M
from pt2format.errors import EncodingError, LimitError

import codec_strategies as S


small_package = S.small_package
NODE_INPUT = S.NODE_INPUT


# ---------------------------------------------------------------------------
# Interface
# ---------------------------------------------------------------------------

def test_unknown_encoding_rejected():
    with pytest.raises(EncodingError, match="unknown program encoding"):
        C.encode(small_package(), "yaml")
    with pytest.raises(EncodingError, match="unknown program encoding"):
        C.decode(b"{}", "yaml")


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_section_larger_than_max_bytes_rejected(encoding):
    data = C.encode(small_package(), encoding)
    with pytest.raises(LimitError, match="max_bytes"):
        C.decode(data, encoding, max_bytes=len(data) - 1)
    assert C.decode(data, encoding, max_bytes=len(data)) == small_package()


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_non_bytes_input_rejected(encoding):
    with pytest.raises(EncodingError, match="bytes-like"):
        C.decode("text", encoding)


# ---------------------------------------------------------------------------
# Encoders: malformed trees
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_wrong_scalar_type_names_path(encoding):
    pkg = small_package()
    pkg.programs[0].graph.nodes[0].inputs[0].value.value = "3"
    with pytest.raises(EncodingError) as e:
        C.encode(pkg, encoding)
    assert e.value.path == f"{NODE_INPUT}.value.value"


@pytest.mark.parametrize("encoding", C.ENCODINGS)
@pytest.mark.parametrize("bad", [1 << 63, -(1 << 63) - 1])
def test_encode_int64_out_of_range(encoding, bad):
    pkg = small_package()
    pkg.programs[0].graph.nodes[0].inputs[0].value.value = bad
    with pytest.raises(EncodingError, match="out of range") as e:
        C.encode(pkg, encoding)
    assert e.value.path == f"{NODE_INPUT}.value.value"


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_wrong_union_member(encoding):
    pkg = small_package()
    pkg.programs[0].graph.nodes[0].inputs[0].value = M.IntValue(3)  # a ValueKind member, not an ArgumentValue
    with pytest.raises(EncodingError, match="not a member of the union") as e:
        C.encode(pkg, encoding)
    assert e.value.path == f"{NODE_INPUT}.value"


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_wrong_table_type(encoding):
    pkg = small_package()
    pkg.programs[0].graph = M.Node()
    with pytest.raises(EncodingError, match="wrong table type") as e:
        C.encode(pkg, encoding)
    assert e.value.path == "programs[0].graph"


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_missing_required_field(encoding):
    with pytest.raises(EncodingError, match="required") as e:
        C.encode(M.Package(), encoding)
    assert e.value.path == "format_version"


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_lone_surrogate_rejected(encoding):
    pkg = small_package()
    pkg.programs[0].name = "bad\ud800"
    with pytest.raises(EncodingError, match="UTF-8"):
        C.encode(pkg, encoding)


@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_bool_field_rejects_non_bool(encoding):
    pkg = small_package()
    pkg.programs[0].graph.is_single_tensor_return = "yes"
    with pytest.raises(EncodingError) as e:
        C.encode(pkg, encoding)
    assert e.value.path == "programs[0].graph.is_single_tensor_return"




@pytest.mark.parametrize("encoding", C.ENCODINGS)
def test_encode_tree_deeper_than_python_stack_rejected(encoding):
    with pytest.raises(EncodingError, match="too deep"):
        C.encode(S.deep_value_package(2000), encoding)
