"""Canonical dump (SPEC §6): exact text for hand-checked trees, float bits, escapes, encoding independence."""

import struct
import sys
import zlib
from pathlib import Path

import pytest


from pt2f_samples import ENCODINGS, float_payloads, tiny_package  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._dump import dump, dump_text, float_hex, render  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.errors import EncodingError  # noqa: E402


def text(obj) -> str:
    """Render one object with the dump's JSON settings (same as SPEC §6's Python one-liner)."""
    import json

    return json.dumps(render(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_minimal_file_exact(tmp_path):
    path = tmp_path / "m.pt2f"
    _api.write_package(path, m.Package(format_version=m.FormatVersion(1, 0)), [])
    assert dump(path) == (
        '{"package":{"external_files":[],"extra_files":[],"format_version":{"major":1,"minor":0},"metadata":[],'
        '"operators":[],"producer":null,"programs":[],"required_features":0,"segments":[],"shard_files":[],'
        '"storages":[],"tensors":[],"weight_sets":[]},"storage_crc32":[]}\n')


@pytest.mark.parametrize("value, bits", [
    (0.0, "0x0000000000000000"), (-0.0, "0x8000000000000000"), (1.5, "0x3ff8000000000000"),
    (float("inf"), "0x7ff0000000000000"), (float("-inf"), "0xfff0000000000000"),
    (float("nan"), "0x7ff8000000000000"), (1e-310, "0x000012688b70e62b"),
    (struct.unpack("<d", bytes.fromhex("010000000000f07f"))[0], "0x7ff0000000000001"),  # NaN payload kept
])
def test_float_bits(value, bits):
    assert float_hex(value) == bits
    assert text(m.FloatValue(value)) == '{"value":"%s"}' % bits


def test_defaults_unions_enums_structs():
    assert text(m.Device()) == '{"index":-1,"type":null}'
    assert text(m.Argument()) == '{"value":null,"value_type":"NONE"}'
    assert text(m.Argument(m.TensorArgument("x"))) == '{"value":{"name":"x"},"value_type":"TensorArgument"}'
    assert text(m.ScalarTypeValue(m.ScalarType.FLOAT32)) == '{"value":"FLOAT32"}'
    assert text(m.ScalarTypeValue(200)) == '{"value":200}'  # unknown to this schema: an integer
    assert text(m.SymIntValue("s", m.SymInt(-1, 5))) == '{"name":"s","value":{"expr":-1,"value":5}}'
    assert text(m.SymIntValue("s")) == '{"name":"s","value":null}'


def test_integers_exact():
    assert text(m.IntValue(-2**63)) == '{"value":-9223372036854775808}'
    assert text(m.IntListArgument([2**63 - 1, 0, -1])) == '{"values":[9223372036854775807,0,-1]}'
    assert text(m.ShardFile("a", 2**64 - 1)) == '{"name":"a","package_id":[],"size":18446744073709551615}'


def test_vectors():
    assert text(m.BoolListArgument([True, False])) == '{"values":[true,false]}'
    assert text(m.BoolListArgument([1, 0])) == '{"values":[true,false]}'
    assert text(m.BytesValue(b"\x00\xff")) == '{"value":[0,255]}'
    assert text(m.BytesValue([0, 255])) == '{"value":[0,255]}'
    assert text(m.FloatListArgument([-0.0])) == '{"values":["0x8000000000000000"]}'
    assert text(m.StringListArgument([])) == '{"values":[]}'


def test_string_escapes():
    s = 'a"\\\b\f\n\r\t\x01\x1f\x7f\u00e9\U0001F600'
    assert text(m.StringValue(s)) == '{"value":"a\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\u00e9\U0001F600"}'


def test_invalid_utf8_is_an_error():
    with pytest.raises(EncodingError) as e:
        render(m.Package(producer=m.Producer(name="bad\udc80")))
    assert e.value.path == "package.producer.name"


def test_keys_sorted_by_code_point():
    # "value" < "value_type" and "Z" < "_" < "a" in code-point order
    out = dump_text(m.Package(format_version=m.FormatVersion(1, 0), metadata=[m.StringEntry("k", "v")]), [])
    assert out.index('"format_version"') < out.index('"metadata"') < out.index('"operators"')
    assert '"metadata":[{"key":"k","value":"v"}]' in out


def test_same_dump_for_every_encoding(tmp_path):
    outs = []
    for enc in ENCODINGS:
        pkg = tiny_package((3, 20))
        pkg.programs[0].example_inputs = m.Value(m.ListValue([m.Value(m.FloatValue(float("nan"))),
                                                              m.Value(m.FloatValue(-0.0))]))
        _api.write_package(tmp_path / enc, pkg, float_payloads((3, 20)), encoding=enc)
        outs.append(dump(tmp_path / enc))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].endswith("\n") and outs[0].count("\n") == 1
    assert '"0x7ff8000000000000"' in outs[0] and '"0x8000000000000000"' in outs[0]


def test_storage_crcs(tmp_path):
    payloads = float_payloads((3, 20))
    _api.write_package(tmp_path / "m", tiny_package((3, 20)), payloads)
    out = dump(tmp_path / "m")
    expected = ",".join('"0x%08x"' % zlib.crc32(p) for p in payloads)
    assert out.endswith(',"storage_crc32":[%s]}\n' % expected)
