"""Hostile and malformed input for every decoder and encoder: each attack raises the exact typed error."""

from __future__ import annotations

import json
import struct

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2format import _codecs as C
from pt2format._codecs import _fb_generic
from pt2format._codecs._fb_writer import Builder
from pt2format._generated import model as M
from pt2format.errors import EncodingError, LimitError, Pt2FormatError

import pt2format_codecs_test_strategies as S


def small_package():
    return M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(
        name="p", graph=M.Graph(nodes=[M.Node(name="n", target="t", inputs=[
            M.NamedArgument("a", M.IntArgument(3)), M.NamedArgument("b", M.TensorArgument("x"))])]))])


NODE_INPUT = "programs[0].graph.nodes[0].inputs[0]"


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


# ---------------------------------------------------------------------------
# FlatBuffers decoder
# ---------------------------------------------------------------------------

def fb(pkg=None) -> bytes:
    return C.encode(pkg or small_package(), "flatbuffers")


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_fb_shorter_than_8_bytes_rejected(n):
    with pytest.raises(EncodingError, match="shorter than 8 bytes"):
        C.decode(fb()[:n], "flatbuffers")


def test_fb_wrong_file_identifier_rejected():
    data = bytearray(fb())
    data[4:8] = b"XXXX"
    with pytest.raises(EncodingError, match="file identifier") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.offset == 4


def test_fb_every_truncation_rejected():
    data = fb(S.exhaustive_package())
    step = max(1, len(data) // 300)
    for n in range(8, len(data), step):
        with pytest.raises((EncodingError, LimitError)):
            C.decode(data[:n], "flatbuffers")


def test_fb_root_offset_out_of_range():
    data = bytearray(fb())
    data[0:4] = struct.pack("<I", len(data) + 100)
    with pytest.raises(EncodingError, match="table offset out of range") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.offset == len(data) + 100


def test_fb_vtable_offset_out_of_range():
    data = bytearray(fb())
    root = struct.unpack_from("<I", data, 0)[0]
    data[root:root + 4] = struct.pack("<i", -(1 << 30))
    with pytest.raises(EncodingError, match="vtable offset out of range"):
        C.decode(bytes(data), "flatbuffers")


def _build(fn) -> bytes:
    """A hand-laid-out buffer: fn(builder) returns the root table's distance."""
    b = Builder()
    return b.finish(fn(b))


def _package_with(b, programs_vec=None, version=True):
    fields = []
    if version:
        fields.append((0, 4, 4, None, b.add_table([(0, 4, 4, "I", 1)])))
    if programs_vec is not None:
        fields.append((3, 4, 4, None, programs_vec))
    return b.add_table(fields)


def test_fb_vector_length_exceeding_buffer_rejected():
    def make(b):
        vec = b.add_vector(b"", 0xFFFFFFF0, 4)  # claims 4 billion offsets, has none
        return _package_with(b, vec)

    with pytest.raises(EncodingError, match="vector runs past the buffer end") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs"


def test_fb_string_length_exceeding_buffer_rejected():
    def make(b):
        s = b.add_vector(b"abc\0", 1 << 31, 4)  # a string header claiming 2 GiB
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="string runs past the buffer end") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].name"


def test_fb_invalid_utf8_rejected():
    def make(b):
        s = b.add_vector(b"ab\xff\xfe\0", 4, 4)
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="not valid UTF-8") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].name"


def test_fb_string_without_nul_rejected():
    def make(b):
        s = b.add_vector(b"abcX", 3, 4)
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="NUL-terminated"):
        C.decode(_build(make), "flatbuffers")


def test_fb_missing_required_field_rejected():
    with pytest.raises(EncodingError, match="required field") as e:
        C.decode(_build(lambda b: _package_with(b, version=False)), "flatbuffers")
    assert e.value.path == "format_version"


def test_fb_union_type_beyond_union_rejected():
    def make(b):
        member = b.add_table([])
        arg = b.add_table([(0, 1, 1, "B", 200), (1, 4, 4, None, member)])  # Argument.value_type = 200
        graph = b.add_table([(1, 4, 4, None, b.add_offset_vector([arg]))])  # Graph.outputs
        prog = b.add_table([(1, 4, 4, None, graph)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="union type index unknown") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].graph.outputs[0].value_type"


def test_fb_union_type_without_member_rejected():
    def make(b):
        arg = b.add_table([(0, 1, 1, "B", 2)])
        graph = b.add_table([(1, 4, 4, None, b.add_offset_vector([arg]))])
        prog = b.add_table([(1, 4, 4, None, graph)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="union type without a member"):
        C.decode(_build(make), "flatbuffers")


def test_fb_field_outside_its_table_rejected():
    data = bytearray(fb())
    root = struct.unpack_from("<I", data, 0)[0]
    vt = root - struct.unpack_from("<i", data, root)[0]
    osize = struct.unpack_from("<H", data, vt + 2)[0]
    data[vt + 4:vt + 6] = struct.pack("<H", osize)  # format_version's offset now points past the table
    with pytest.raises(EncodingError, match="field outside its table") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.path == "format_version"


def test_fb_depth_bomb_rejected():
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(example_inputs=S.deep_value(300))])
    data = fb(pkg)
    with pytest.raises(LimitError, match="max_depth"):
        C.decode(data, "flatbuffers")
    v, levels = C.decode(data, "flatbuffers", max_depth=700).programs[0].example_inputs, 0
    while isinstance(v.value, M.ListValue):  # (== on a 600-table chain would exhaust Python's stack)
        v, levels = v.value.items[0], levels + 1
    assert levels == 300 and v.value == M.IntValue(7)


def test_fb_shared_offset_bomb_rejected():
    """Every level's list holds the previous level twice: 2**60 values from a few KiB."""

    def make(b):
        leaf = b.add_table([(0, 1, 1, "B", 3), (1, 4, 4, None, b.add_table([(0, 8, 8, "q", 7)]))])  # Value(IntValue)
        v = leaf
        for _ in range(60):
            lst = b.add_table([(0, 4, 4, None, b.add_offset_vector([v, v]))])  # ListValue(items=[v, v])
            v = b.add_table([(0, 1, 1, "B", 7), (1, 4, 4, None, lst)])  # Value(ListValue)
        prog = b.add_table([(12, 4, 4, None, v)])  # Program.example_inputs
        return _package_with(b, b.add_offset_vector([prog]))

    data = _build(make)
    assert len(data) < 8192
    with pytest.raises(LimitError, match="more objects than its size"):
        C.decode(data, "flatbuffers")
    with pytest.raises(LimitError, match="more objects than its size"):
        _fb_generic.decode(data)


def test_fb_memoryview_not_copied_and_decodes():
    data = fb()
    view = memoryview(bytearray(data))
    assert C.decode(view, "flatbuffers") == small_package()


# ---------------------------------------------------------------------------
# MessagePack decoder
# ---------------------------------------------------------------------------

def mp_tree():
    return msgpack.unpackb(C.encode(small_package(), "msgpack"))


def _mp_node_input(tree):
    return tree[3][0][1][2][0][2][0]  # programs[0].graph.nodes[0].inputs[0]


def test_mp_string_where_int_expected():
    tree = mp_tree()
    _mp_node_input(tree)[2][0] = "3"
    with pytest.raises(EncodingError, match="wrong type") as e:
        C.decode(msgpack.packb(tree), "msgpack")
    assert e.value.path == f"{NODE_INPUT}.value.value"


def test_mp_int_out_of_int32_range():
    tree = mp_tree()
    tree[3][0][1].extend([None] * 5)
    # Graph.tensor_values[0].meta.sizes[0] = SymInt(expr=2**31, 0): the struct field is int32.
    tree[3][0][1][3] = [["v", [None, [[1 << 31, 0]]]]]
    with pytest.raises(EncodingError, match="out of range") as e:
        C.decode(msgpack.packb(tree), "msgpack")
    assert e.value.path == "programs[0].graph.tensor_values[0].meta.sizes[0].expr"


def test_mp_unknown_union_type_index():
    tree = mp_tree()
    _mp_node_input(tree)[1] = 99
    with pytest.raises(EncodingError, match="union type index unknown") as e:
        C.decode(msgpack.packb(tree), "msgpack")
    assert e.value.path == f"{NODE_INPUT}.value_type"


def test_mp_bool_where_int_expected():
    tree = mp_tree()
    _mp_node_input(tree)[2][0] = True
    with pytest.raises(EncodingError, match="wrong type"):
        C.decode(msgpack.packb(tree), "msgpack")


def test_mp_map_instead_of_array():
    tree = mp_tree()
    tree[3][0] = {"name": "p"}
    with pytest.raises(EncodingError, match="wrong type") as e:
        C.decode(msgpack.packb(tree), "msgpack")
    assert e.value.path == "programs[0]"


def test_mp_invalid_utf8_string():
    data = C.encode(M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(name="abc")]), "msgpack")
    bad = data.replace(b"\xa3abc", b"\xa3a\xff\xfe")
    assert bad != data
    with pytest.raises(EncodingError, match="UTF-8"):
        C.decode(bad, "msgpack")


def test_mp_trailing_bytes_rejected():
    with pytest.raises(EncodingError, match="trailing bytes"):
        C.decode(C.encode(small_package(), "msgpack") + b"\xc0", "msgpack")


def test_mp_huge_array_length_claim_rejected():
    with pytest.raises(EncodingError, match="malformed msgpack"):
        C.decode(b"\xdd\xff\xff\xff\xff", "msgpack")


def test_mp_nesting_bomb_rejected():
    with pytest.raises(LimitError):
        C.decode(b"\x91" * 100_000 + b"\xc0", "msgpack")


def test_mp_depth_over_max_depth_rejected():
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(example_inputs=S.deep_value(100))])
    data = C.encode(pkg, "msgpack")
    with pytest.raises(LimitError, match="max_depth"):
        C.decode(data, "msgpack")


def test_mp_extra_positions_ignored():
    """A newer minor version appends fields: readers skip positions they do not know."""
    tree = mp_tree()
    tree[3][0].extend([None] * 20 + ["from the future", [1, 2]])
    assert C.decode(msgpack.packb(tree), "msgpack") == small_package()


def test_mp_ext_type_rejected():
    tree = mp_tree()
    tree[3][0][0] = msgpack.ExtType(5, b"xx")
    with pytest.raises(EncodingError, match="wrong type") as e:
        C.decode(msgpack.packb(tree), "msgpack")
    assert e.value.path == "programs[0].name"


# ---------------------------------------------------------------------------
# JSON decoder
# ---------------------------------------------------------------------------

def js_doc():
    return json.loads(C.encode(small_package(), "json"))


def _js(doc) -> bytes:
    return json.dumps(doc).encode()


@pytest.mark.parametrize("schema", [True, False])
def test_js_string_where_int_expected(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["value"]["value"] = "3"
    with pytest.raises(EncodingError, match="wrong type") as e:
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == f"{NODE_INPUT}.value.value"


@pytest.mark.parametrize("schema", [True, False])
def test_js_int_out_of_int32_range(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["tensor_values"] = [{"name": "v", "meta": {"device": {"type": "cpu", "index": 1 << 31}}}]
    with pytest.raises(EncodingError) as e:
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == "programs[0].graph.tensor_values[0].meta.device.index"


@pytest.mark.parametrize("schema", [True, False])
def test_js_unknown_union_type_name(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["value_type"] = "Bogus"
    with pytest.raises(EncodingError) as e:
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == f"{NODE_INPUT}.value_type"


@pytest.mark.parametrize("schema", [True, False])
def test_js_unknown_field_name(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["colour"] = "red"
    with pytest.raises(EncodingError) as e:
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == "programs[0].graph.nodes[0]"
    assert "colour" in str(e.value)


@pytest.mark.parametrize("schema", [True, False])
def test_js_unknown_enum_name(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] = "SIDEWAYS"
    with pytest.raises(EncodingError) as e:
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == f"{NODE_INPUT}.kind"


def test_js_invalid_utf8_rejected():
    text = C.encode(small_package(), "json").replace(b'"p"', b'"\xff"')
    with pytest.raises(EncodingError, match="not valid UTF-8") as e:
        C.decode(text, "json")
    assert e.value.offset is not None


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_js_bare_non_finite_rejected(literal):
    doc = js_doc()
    doc["programs"][0]["example_inputs"] = {"value_type": "FloatValue", "value": {"value": 0}}
    text = _js(doc).replace(b'"value": 0}', b'"value": ' + literal + b"}")
    with pytest.raises(EncodingError, match="non-finite"):
        C.decode(text, "json")


def test_js_non_finite_strings_accepted():
    doc = js_doc()
    doc["programs"][0]["example_inputs"] = {"value_type": "FloatValue", "value": {"value": "-inf"}}
    assert C.decode(_js(doc), "json").programs[0].example_inputs.value.value == float("-inf")
    doc["programs"][0]["example_inputs"]["value"]["value"] = "Infinity"
    with pytest.raises(EncodingError):
        C.decode(_js(doc), "json")


def test_js_duplicate_key_rejected():
    text = C.encode(small_package(), "json").replace(b'"name": "p"', b'"name": "p", "name": "q"')
    with pytest.raises(EncodingError, match="duplicate key"):
        C.decode(text, "json")


def test_js_malformed_text_rejected():
    with pytest.raises(EncodingError, match="malformed JSON") as e:
        C.decode(b'{"format_version": {"major": 1}', "json")
    assert e.value.offset is not None


def test_js_nesting_bomb_rejected():
    with pytest.raises((LimitError, EncodingError)):
        C.decode(b"[" * 200_000 + b"]" * 200_000, "json")


def test_js_depth_over_max_depth_rejected():
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(example_inputs=S.deep_value(100))])
    with pytest.raises(LimitError, match="max_depth"):
        C.decode(C.encode(pkg, "json"), "json", json_schema=False)


def test_js_missing_required_field():
    with pytest.raises(EncodingError) as e:
        C.decode(b'{"programs": []}', "json")
    assert "format_version" in str(e.value)


def test_js_top_level_not_an_object():
    with pytest.raises(EncodingError):
        C.decode(b"[1, 2]", "json")


# ---------------------------------------------------------------------------
# Fuzz: only Pt2FormatError (or success) may come out of a decoder
# ---------------------------------------------------------------------------

_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SEEDS = {enc: C.encode(small_package(), enc) for enc in C.ENCODINGS}


def _decode_or_typed_error(data, encoding):
    try:
        C.decode(data, encoding, max_depth=32)
    except Pt2FormatError:
        pass


@pytest.mark.parametrize("encoding", C.ENCODINGS)
@given(data=st.binary(max_size=512))
@_FUZZ
def test_fuzz_random_bytes(encoding, data):
    _decode_or_typed_error(data, encoding)


@given(data=st.binary(max_size=512))
@_FUZZ
def test_fuzz_random_bytes_with_identifier(data):
    _decode_or_typed_error(data[:4].ljust(4, b"\0") + b"P2FP" + data[4:], "flatbuffers")


@pytest.mark.parametrize("encoding", C.ENCODINGS)
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.integers(0, 10_000))
@_FUZZ
def test_fuzz_mutated_encodings(encoding, edits, cut):
    data = bytearray(_SEEDS[encoding])
    for pos, byte in edits:
        data[pos % len(data)] = byte
    if cut % 3 == 0:
        data = data[:cut % (len(data) + 1)]
    _decode_or_typed_error(bytes(data), encoding)


@given(edits=st.lists(st.tuples(st.integers(0, 200_000), st.integers(0, 255)), min_size=1, max_size=4))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_mutated_exhaustive_flatbuffers(edits):
    data = bytearray(_EXHAUSTIVE_FB)
    for pos, byte in edits:
        data[pos % len(data)] = byte
    _decode_or_typed_error(bytes(data), "flatbuffers")
    # The reflection reader must agree on acceptance (it is the path-naming fallback).
    try:
        fast = C.decode(bytes(data), "flatbuffers", max_depth=32)
    except Pt2FormatError:
        fast = None
    try:
        slow = _fb_generic.decode(bytes(data), max_depth=32)
    except Pt2FormatError:
        slow = None
    assert (fast is None) == (slow is None)
    assert fast == slow


_EXHAUSTIVE_FB = C.encode(S.exhaustive_package(), "flatbuffers")
