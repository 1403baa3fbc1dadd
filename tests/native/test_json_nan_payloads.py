"""NaN payloads, the sign of a NaN, infinities and -0.0 survive every encoding in every reader (SPEC.md §4).

JSON spells the canonical quiet NaN "nan" and any other NaN "nan:0x<16 hex digits>". The canonical
dump prints floats as their bit patterns, so equal dumps mean equal bits; the expected bits are the
ones put into the file, not a reader's output.
"""

from __future__ import annotations

import struct

import pytest

import native_util_cpp as C
from pt2format import _codecs
from pt2format._api import write_package
from pt2format._generated import model as m

BITS = [0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF,
        0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0x0000000000000001]


def _f(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _package():
    pkg = C.sample_package()
    floats = m.Value(m.ListValue(items=[m.Value(m.FloatValue(_f(b))) for b in BITS]))
    pkg.operators = [m.OperatorSchema(target="torch.ops.test.nan_payloads.default", kind=m.OperatorKind.OP_OVERLOAD,
                                      parameters=[m.OperatorParameter(name="x", type="float[]", default_value=floats)])]
    return pkg


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nan")
    out = {}
    for enc in ("flatbuffers", "msgpack", "json"):
        out[enc] = d / f"nan-{enc}.pt2f"
        write_package(out[enc], _package(), C.sample_payloads(), encoding=enc, fsync=False)
    return out


def test_json_spells_payloads(files):
    text = files["json"].read_bytes()
    assert b'"nan:0x7ff8000000000001"' in text and b'"nan:0xfff8000000000000"' in text
    assert text.count(b'"nan"') == 1  # only the canonical one


@pytest.mark.parametrize("enc", ["flatbuffers", "msgpack", "json"])
def test_python_keeps_every_bit(files, enc):
    raw = _codecs.encode(_package(), enc)
    got = _codecs.decode(raw, enc).operators[0].parameters[0].default_value.value.items
    assert [struct.unpack("<Q", struct.pack("<d", v.value.value))[0] for v in got] == BITS


@pytest.mark.parametrize("enc", ["flatbuffers", "msgpack", "json"])
def test_three_readers_dump_the_same_bits(files, cpp_release, ts_reader, enc):
    python = C.python_dump_of_tree(files[enc])
    for b in BITS:
        assert f'"0x{b:016x}"' in python
    r = C.run(cpp_release / "pt2f-dump", files[enc])
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == python
    t = ts_reader.ts_dump(files[enc])
    assert t.returncode == 0, t.stderr
    assert t.stdout.decode() == python
