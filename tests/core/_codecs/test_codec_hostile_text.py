"""Hostile MessagePack and JSON input: each attack raises the exact typed error, with the field path."""

from __future__ import annotations

import json

import msgpack
import pytest

from pt2format import _codecs as C
from pt2format._generated import model as M
from pt2format.errors import EncodingError, LimitError, VersionError

import codec_strategies as S


small_package = S.small_package
NODE_INPUT = S.NODE_INPUT


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
    with pytest.raises(VersionError, match="newer minor") as e:  # SPEC.md section 8
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
    with pytest.raises(VersionError, match="newer minor") as e:  # SPEC.md section 8
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == f"{NODE_INPUT}.value_type"


@pytest.mark.parametrize("schema", [True, False])
@pytest.mark.parametrize("extra", ["red", {"a:b": [{"x": "y:z"}]}, [1, {"k": 2}]])
def test_js_unknown_field_name_is_ignored(schema, extra):
    """A newer minor's field: JSON readers ignore unknown keys (SPEC.md section 8)."""
    doc = js_doc()
    want = C.decode(_js(doc), "json", json_schema=schema)
    doc["programs"][0]["graph"]["nodes"][0]["colour"] = extra
    doc["colour:2"] = extra
    got = C.decode(_js(doc), "json", json_schema=schema)
    assert C.encode(got, "json") == C.encode(want, "json")


@pytest.mark.parametrize("schema", [True, False])
def test_js_duplicate_key_inside_an_unknown_field_rejected(schema):
    text = _js(js_doc()).replace(b'{', b'{"colour": {"a": 1, "a": 2},', 1)
    with pytest.raises(EncodingError, match="duplicate"):
        C.decode(text, "json", json_schema=schema)


@pytest.mark.parametrize("schema", [True, False])
def test_js_unknown_enum_name(schema):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] = "SIDEWAYS"
    with pytest.raises(VersionError, match="newer minor") as e:  # SPEC.md section 8
        C.decode(_js(doc), "json", json_schema=schema)
    assert e.value.path == f"{NODE_INPUT}.kind"


@pytest.mark.parametrize("schema", [True, False])
def test_js_unknown_enum_integer_accepted(schema):
    """A value a newer minor version added is written as an integer (as flatc does) and kept."""
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] = 200
    got = C.decode(_js(doc), "json", json_schema=schema)
    kind = got.programs[0].graph.nodes[0].inputs[0].kind
    assert type(kind) is int and kind == 200
    again = json.loads(C.encode(got, "json"))
    assert again["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] == 200


@pytest.mark.parametrize("schema", [True, False])
@pytest.mark.parametrize("value", [256, -1, 2.0, True])
def test_js_enum_integer_outside_underlying_type_rejected(schema, value):
    doc = js_doc()
    doc["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] = value  # ArgumentKind is a ubyte
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


@pytest.mark.parametrize("schema", [True, False])
@pytest.mark.parametrize("levels", [63, 100])
def test_js_depth_over_max_depth_rejected(schema, levels):
    """130 and 204 tables deep: over max_depth=128, and past jsonschema's own Python stack at 204."""
    with pytest.raises(LimitError):
        C.decode(C.encode(S.deep_value_package(levels), "json"), "json", json_schema=schema)


def test_js_missing_required_field():
    with pytest.raises(EncodingError) as e:
        C.decode(b'{"programs": []}', "json")
    assert "format_version" in str(e.value)


def test_js_top_level_not_an_object():
    with pytest.raises(EncodingError):
        C.decode(b"[1, 2]", "json")


