"""SPEC.md §4.2: the encodings' edge cases, each read the same way by the Python, C++ and TypeScript readers.

Files are golden ones with one spot re-spelled (a bool byte 2, `1` or `1e400`
where a float goes, `[]` for an absent vector, a MessagePack float32, tables
nested past flatc's default verifier depth). The expected values come from
the rule and from IEEE 754 as Python's `float`/`struct` and torch compute it,
never from a reader of this package.
"""

from __future__ import annotations

import json
import re
import struct

import msgpack
import pytest
import torch

from conformance import make_invalid as M
from pt2format._generated import model as m

_AT_CLASS = re.compile(r"(\w+Error)")


def _bits(x: float) -> str:
    return "0x" + struct.pack(">d", x).hex()


def _with_float(value=1.25):
    def mutate(p):
        p.programs[0].graph.nodes[0].metadata.custom = m.MapValue(entries=[
            m.MapEntry(key=m.Value(m.StringValue("k")), value=m.Value(m.FloatValue(value)))])
    return mutate


def _float_in(dump: dict) -> str:
    custom = dump["package"]["programs"][0]["graph"]["nodes"][0]["metadata"]["custom"]
    return custom["entries"][0]["value"]["value"]["value"]


def _replace(old: bytes, new: bytes):
    def patch(b):
        assert b.count(old) == 1, (old, b.count(old))
        return b.replace(old, new)
    return patch


def _nested_lists(depth: int):
    def mutate(p):
        v = m.Value(m.IntValue(1))
        for _ in range(depth):
            v = m.Value(m.ListValue(items=[v]))
        p.programs[0].graph.nodes[0].metadata.custom = m.MapValue(entries=[m.MapEntry(key=m.Value(m.StringValue("k")),
                                                                                      value=v)])
    return mutate


def _fb_bool_2(b: bytes) -> bytes:
    """The requires_grad byte of programs[0].graph.tensor_values[0].meta, found by walking the vtables, set to 2."""
    b = bytearray(b)
    ids = {f: _field_id(t, f) for t, f in (("Package", "programs"), ("Program", "graph"), ("Graph", "tensor_values"),
                                            ("TensorValue", "meta"), ("TensorMeta", "requires_grad"))}

    def table(pos):
        return pos + struct.unpack_from("<I", b, pos)[0]

    def field(t, fid):
        vt = t - struct.unpack_from("<i", b, t)[0]
        off = struct.unpack_from("<H", b, vt + 4 + 2 * fid)[0]
        assert off, fid
        return t + off

    def first(t, fid):
        vec = table(field(t, fid))
        return table(vec + 4)

    meta = table(field(first(table(field(first(table(0), ids["programs"]), ids["graph"])), ids["tensor_values"]),
                       ids["meta"]))
    at = field(meta, ids["requires_grad"])
    assert b[at] == 1
    b[at] = 2
    return bytes(b)


def _field_id(table: str, name: str) -> int:
    """The FlatBuffers field id of Table.name, from the field table regen writes from flatc's schema."""
    from pathlib import Path

    text = (Path(M.__file__).resolve().parents[1] / "schema" / "FIELDS.md").read_text()
    section = text.split(f"\n## {table}\n")[1].split("\n## ")[0]
    return int(re.search(r"\| (\d+) \| `" + name + r"` \|", section).group(1))


def _requires_grad_true(p):
    p.programs[0].graph.tensor_values[0].meta.requires_grad = True


def _f32(bits: int) -> bytes:
    return b"\xca" + struct.pack(">I", bits)


def _torch_widened(bits: int) -> str:
    """float32 bits widened to binary64 by torch (IEEE 754 conversion), as the dump spells a float."""
    f32 = torch.tensor([struct.unpack("<i", struct.pack("<I", bits))[0]], dtype=torch.int32).view(torch.float32)
    return "0x" + format(f32.to(torch.float64).view(torch.int64).item() & (2 ** 64 - 1), "016x")


_F64_125 = b"\xcb" + struct.pack(">d", 1.25)


def _empty_array_for_absent(b: bytes) -> bytes:
    root = msgpack.unpackb(b, strict_map_key=False)
    sid = _field_id("Package", "shard_files")
    root += [None] * (sid + 1 - len(root))
    assert root[sid] is None
    root[sid] = []
    return msgpack.packb(root)


# name -> (case, encoding, mutate, patch, expectation); an expectation is an error class, or a function of the dump.
CASES = {
    "fb_bool_byte_2": ("mlp", "flatbuffers", _requires_grad_true, _fb_bool_2,
                       lambda d: d["package"]["programs"][0]["graph"]["tensor_values"][0]["meta"]["requires_grad"]
                       is True),
    "json_int_literal": ("mlp", "json", _with_float(), _replace(b"1.25", b"1"), lambda d: _float_in(d) == _bits(1.0)),
    "json_int_literal_rounds": ("mlp", "json", _with_float(), _replace(b"1.25", b"9007199254740993"),
                                lambda d: _float_in(d) == _bits(float(9007199254740993))),
    "json_int_literal_too_large": ("mlp", "json", _with_float(), _replace(b"1.25", b"1" + b"0" * 400), "EncodingError"),
    "json_1e400": ("mlp", "json", _with_float(), _replace(b"1.25", b"1e400"), "EncodingError"),
    "json_minus_1e400": ("mlp", "json", _with_float(), _replace(b"1.25", b"-1e400"), "EncodingError"),
    "json_1e-400": ("mlp", "json", _with_float(), _replace(b"1.25", b"1e-400"), lambda d: _float_in(d) == _bits(0.0)),
    "msgpack_empty_array": ("mlp", "msgpack", lambda p: None, _empty_array_for_absent,
                            lambda d: d["package"]["shard_files"] == []),
    "fb_depth_past_64": ("mlp", "flatbuffers", _nested_lists(40), None, lambda d: True),
    "fb_depth_past_128": ("mlp", "flatbuffers", _nested_lists(70), None, "LimitError"),
}
for _name, _bits32 in (("one_and_a_quarter", 0x3FA00000), ("inf", 0x7F800000), ("signalling_nan", 0x7F800001),
                       ("nan_payload", 0x7FC00001), ("negative_nan", 0xFFC00000)):
    CASES[f"msgpack_float32_{_name}"] = ("mlp", "msgpack", _with_float(), _replace(_F64_125, _f32(_bits32)),
                                         (lambda b: lambda d: _float_in(d) == _torch_widened(b))(_bits32))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("encoding_edges")
    out = {}
    for name, (case, enc, mutate, patch, _) in CASES.items():
        (d / f"{name}.pt2f").write_bytes(M.tree_file(case, enc, mutate, patch=patch))
        out[name] = d / f"{name}.pt2f"
    return out


def _check(name, verdict, dump_text):
    expect = CASES[name][4]
    if isinstance(expect, str):
        assert verdict == expect, (name, verdict)
    else:
        assert verdict == "OK", (name, verdict)
        assert expect(json.loads(dump_text)), name


def test_python_reader(files):
    import pt2format
    from pt2format._dump import dump
    from pt2format.errors import Pt2FormatError

    for name, path in files.items():
        try:
            pt2format.validate(path)
            text, verdict = dump(path), "OK"
        except Pt2FormatError as e:
            text, verdict = None, type(e).__name__
        _check(name, verdict, text)


@pytest.mark.native
def test_cpp_reader(files, cpp_release):
    import native_util_cpp as U

    for name, path in files.items():
        r = U.run(cpp_release / "pt2f-dump", path)
        if r.returncode == U.EXIT_OK:
            _check(name, "OK", r.stdout.decode("utf-8"))
        else:
            found = _AT_CLASS.search(r.stderr)
            _check(name, found.group(1) if found else r.stderr, None)


@pytest.mark.native
def test_ts_reader(files, ts_reader):
    by_file = {r["file"]: r for r in ts_reader.dump_batch(list(files.values()), verify_data=True)}
    for name, path in files.items():
        r = by_file[str(path)]
        _check(name, "OK" if r["ok"] else r["error"], r.get("dump"))
