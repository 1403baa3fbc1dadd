"""The TypeScript reader's MSGPACK and JSON decoders (loaders/ts/src/msgpack.ts, json.ts) against Python's.

Every expectation comes from something the TS reader did not produce: the
committed golden dumps, Python's own decoder and reader on the same bytes
(`pt2format._codecs.decode`, `pt2format._dump.dump`), or IEEE bit patterns.
Files are packed by the SPEC.md container packer of native_util_ts; the
programs are encoded by pt2format's encoders or the `msgpack` package and
then altered byte by byte where a test needs hostile input.
"""

from __future__ import annotations

from pt2format import FORMAT_VERSION  # generated trees use every member of the working schema

import json
import math
import struct
import zlib

import msgpack
import pytest

import native_util_ts as U

from pt2format._generated import model as m

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]

GOLDEN = U.ROOT / "conformance" / "golden"
ENCODINGS = {"flatbuffers": U.FLATBUFFERS, "msgpack": U.MSGPACK, "json": U.JSON}


@pytest.fixture(scope="module")
def ts():
    why = U.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader tests need Node.js: {why}")
    U.build()
    return U


def small(encoding: str):
    """A valid one-program package (tiny_package) with its storages laid out as pack_container does."""
    import pt2f_samples as W
    from pt2format import _codecs

    sizes = (3, 5)
    pkg = W.tiny_package(sizes)
    payloads = W.float_payloads(sizes)
    offsets, _ = U.storage_layout([len(p) for p in payloads])
    pkg.storages = [m.Storage(segment=0, offset=o, size=len(p), checksum_kind=m.ChecksumKind.CRC32,
                              checksum=zlib.crc32(p)) for o, p in zip(offsets, payloads)]
    pkg.segments = [m.Segment(file=0, section=1)]
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    pkg.required_features = 0
    return pkg, payloads, _codecs.encode(pkg, encoding)


def place_storages(pkg, payloads):
    """Point pkg.storages at payloads laid out as pack_container does; header-level fields consistent."""
    offsets, _ = U.storage_layout([len(p) for p in payloads])
    pkg.storages = [m.Storage(segment=0, offset=o, size=len(p), checksum_kind=m.ChecksumKind.CRC32,
                              checksum=zlib.crc32(p)) for o, p in zip(offsets, payloads)]
    pkg.segments = [m.Segment(file=0, section=1)] if payloads else []
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    pkg.required_features = 0
    return pkg


def verdicts(tmp_path, files: dict, validate: bool = True) -> dict:
    """name -> (verdict, dump) of the TS reader and of the Python reader, for each name -> file bytes."""
    from pt2format._dump import dump
    from pt2format.errors import Pt2FormatError

    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.pt2f"
        paths[name].write_bytes(data)
    ts_recs = {r["file"]: r for r in U.dump_batch(paths.values(), validate=validate)}
    out = {}
    for name, p in paths.items():
        r = ts_recs[str(p)]
        assert r["ok"] or r["error"] != "internal", (name, r["message"])
        ts_v = ("OK", r["dump"]) if r["ok"] else (r["error"], None)
        try:
            py_v = ("OK", dump(p))
        except Pt2FormatError as e:
            py_v = (type(e).__name__, None)
        out[name] = (ts_v, py_v)
    return out


def assert_agree(tmp_path, files: dict, expect: dict | None = None):
    """The TS and Python readers give the same verdict (error class, or OK with the same dump) on every file."""
    for name, (ts_v, py_v) in verdicts(tmp_path, files).items():
        assert ts_v == py_v, name
        if expect and name in expect:
            assert ts_v[0] == expect[name], (name, ts_v[0])


# ---------------------------------------------------------------------------
# Golden files and random trees: same dump in every encoding
# ---------------------------------------------------------------------------

def test_golden_files_dump_byte_identical_in_every_encoding(ts):
    dirs = sorted(p for p in GOLDEN.glob("*/*") if (p / "program.pt2f").is_file())
    assert {d.name.rsplit("-", 1)[1] for d in dirs} == set(ENCODINGS)
    recs = {r["file"]: r for r in U.dump_batch([d / "program.pt2f" for d in dirs])}
    for d in dirs:
        r = recs[str(d / "program.pt2f")]
        assert r["ok"], (d.name, r.get("message"))
        assert r["dump"].encode("utf-8") == (d / "expected.json").read_bytes(), d.name


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_random_trees_dump_as_python_decodes_them(ts, tmp_path, encoding):
    """hypothesis trees (edge ints, NaN payloads, -0.0, unicode): TS decode + dump == Python decode + dump."""
    import codec_strategies as S
    from hypothesis import HealthCheck, given, settings
    from pt2format import _codecs
    from pt2format._dump import dump_text

    files, want = {}, {}

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(S.packages(max_depth=6, max_len=3))
    def collect(pkg):
        payloads = [bytes([len(files), k]) * (k + 1) for k in range(len(pkg.storages))]
        place_storages(pkg, payloads)
        program = _codecs.encode(pkg, encoding)
        name = f"t{len(files)}"
        files[name] = U.pack_container(program, payloads, encoding=ENCODINGS[encoding])
        decoded = _codecs.decode(program, encoding)
        want[name] = dump_text(decoded, [zlib.crc32(p) for p in payloads], minor=decoded.format_version.minor)

    collect()
    paths = {n: tmp_path / f"{n}.pt2f" for n in files}
    for n, p in paths.items():
        p.write_bytes(files[n])
    recs = {r["file"]: r for r in U.dump_batch(paths.values(), validate=False)}
    for n, p in paths.items():
        r = recs[str(p)]
        assert r["ok"], (n, r["message"])
        assert r["dump"] == want[n], n
    assert len(paths) >= 20


def test_exhaustive_tree_dumps_identically_in_three_encodings(ts, tmp_path):
    """Every table, union member and enum value: FLATBUFFERS and MSGPACK of one tree dump to one text; JSON,
    which spells every NaN "nan" (SPEC.md section 4: payloads are not kept), to what Python decodes from it."""
    import codec_strategies as S
    from pt2format import _codecs

    pkg = S.exhaustive_package()
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    pkg.storages, pkg.segments, pkg.shard_files = [], [], []
    for t in _walk(pkg):
        if type(t) is m.ShardFile:
            t.package_id = []
    paths = {}
    for enc, code in ENCODINGS.items():
        paths[enc] = tmp_path / f"{enc}.pt2f"
        paths[enc].write_bytes(U.pack_container(_codecs.encode(pkg, enc), encoding=code))
    recs = {r["file"]: r for r in U.dump_batch(paths.values(), validate=False)}
    dumps = {enc: recs[str(p)] for enc, p in paths.items()}
    assert all(r["ok"] for r in dumps.values()), dumps
    assert dumps["msgpack"]["dump"] == dumps["flatbuffers"]["dump"]
    from pt2format._dump import dump_text
    assert dumps["json"]["dump"] == dump_text(_codecs.decode(_codecs.encode(pkg, "json"), "json"), [], minor=pkg.format_version.minor)


def _walk(obj):
    if isinstance(obj, list):
        for x in obj:
            yield from _walk(x)
    elif hasattr(type(obj), "FIELDS"):
        yield obj
        for f in type(obj).FIELDS:
            yield from _walk(getattr(obj, f[0]))


# ---------------------------------------------------------------------------
# JSON specifics (SPEC.md section 4)
# ---------------------------------------------------------------------------

def _json_file(text: str, payloads) -> bytes:
    return U.pack_container(text.encode("utf-8"), payloads, encoding=U.JSON)


def test_json_floats_ints_keys_and_unicode_agree_with_python(ts, tmp_path):
    pkg, payloads, program = small("json")
    doc = json.loads(program)
    files = {"plain": _json_file(program.decode(), payloads)}

    def variant(name, mutate, raw=None):
        d = json.loads(program)
        mutate(d)
        files[name] = _json_file(raw(json.dumps(d)) if raw else json.dumps(d), payloads)

    prog0 = doc["programs"][0]
    assert prog0.get("graph") and doc.get("producer") is not None
    # Unknown keys at every level are a newer minor's fields: ignored (SPEC.md 8.2).
    variant("unknown_keys", lambda d: (d.update(zz_future={"a": [1, {"b": None}]}),
                                       d["programs"][0].update(future_field=[1.5, "x"])))
    # Floats: -0.0, non-finite spellings and an integer where a float goes, on an operator default.
    for name, value in {"neg_zero": -0.0, "nan": "nan", "inf": "inf", "ninf": "-inf", "int_for_float": 3,
                        "tiny": 5e-324, "big_int_for_float": 10 ** 400}.items():
        variant(f"float_{name}", lambda d, v=value: d.update(operators=[{"target": "t", "parameters": [
            {"name": "p", "default_value": {"value_type": "FloatValue", "value": {"value": v}}}]}]))
    # Integers: 64-bit extremes exact; out of range; more digits than Python parses.
    for name, value in {"int64_min": -(1 << 63), "int64_max": (1 << 63) - 1, "int_past_64": 1 << 64,
                        "int_5000_digits": 987654321987}.items():
        variant(f"int_{name}", lambda d, v=value: d.update(operators=[{"target": "t", "parameters": [
            {"name": "p", "default_value": {"value_type": "IntValue", "value": {"value": v}}}]}]),
            raw=(lambda t: t.replace("987654321987", "9" * 5000)) if name == "int_5000_digits" else None)
    # A float where an integer goes, a bool where an integer goes.
    variant("float_for_int", lambda d: d["programs"][0]["state"][0].update(tensor=0.0))
    variant("bool_for_int", lambda d: d["programs"][0]["state"][0].update(tensor=True))
    # Strings: a lone surrogate (free text and a class-checked field), an escaped plain name.
    variant("lone_surrogate_text", lambda d: d["producer"].update(name="\ud800"))
    variant("lone_surrogate_name", lambda d: d["programs"][0]["graph"]["nodes"][0].update(name="a\udc00"))
    variant("escaped_name", lambda d: None, raw=lambda t: t.replace('"forward"', '"\\u0066orward"'))
    # Enums and unions by name: unknown to this reader -> VersionError; by integer: kept.
    variant("enum_unknown_name", lambda d: d["programs"][0]["state"][0].update(kind="FUTURE_KIND"))
    variant("enum_as_int", lambda d: d["programs"][0]["state"][0].update(kind=1))
    variant("union_unknown_member", lambda d: d["programs"][0]["graph"]["outputs"][0].update(
        value_type="FutureArgument"))
    variant("union_type_without_member", lambda d: d["programs"][0]["graph"]["outputs"][0].pop("value"))
    # Malformed text: duplicate keys, bare NaN, trailing comma, BOM, not UTF-8.
    text = json.dumps(doc)
    files["duplicate_key2"] = _json_file('{"format_version": {"major": 1, "minor": 0}, ' + text[1:], payloads)
    files["bare_nan"] = _json_file(text[:-1] + ', "x": NaN}', payloads)
    files["trailing_comma"] = _json_file(text[:-1] + ",}", payloads)
    files["bom"] = U.pack_container(b"\xef\xbb\xbf" + text.encode(), payloads, encoding=U.JSON)
    files["not_utf8"] = U.pack_container(text.encode().replace(b'"forward"', b'"forw\xffrd"'), payloads,
                                         encoding=U.JSON)
    files["deep"] = _json_file(text[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}", payloads)
    assert_agree(tmp_path, files, expect={
        "plain": "OK", "unknown_keys": "OK", "float_neg_zero": "OK", "float_nan": "OK", "float_int_for_float": "OK",
        "float_big_int_for_float": "EncodingError", "int_int64_min": "OK", "int_int64_max": "OK",
        "int_int_past_64": "EncodingError", "int_int_5000_digits": "LimitError", "float_for_int": "EncodingError",
        "lone_surrogate_text": "EncodingError", "lone_surrogate_name": "EncodingError", "escaped_name": "OK",
        "enum_unknown_name": "VersionError", "union_unknown_member": "VersionError", "duplicate_key2": "EncodingError",
        "bare_nan": "EncodingError", "bom": "EncodingError", "not_utf8": "EncodingError"})
    # The dump text holds the exact bit patterns (independent of both readers).
    r = verdicts(tmp_path, {k: files[k] for k in ("float_neg_zero", "float_nan", "int_int64_min")})
    assert '"value":"0x8000000000000000"' in r["float_neg_zero"][0][1]
    assert '"value":"0x7ff8000000000000"' in r["float_nan"][0][1]
    assert '"value":-9223372036854775808' in r["int_int64_min"][0][1]
    plain, unknown = verdicts(tmp_path, {"a": files["plain"], "b": files["unknown_keys"]}).values()
    assert plain[0] == unknown[0]


# ---------------------------------------------------------------------------
# MessagePack specifics
# ---------------------------------------------------------------------------

def _mp_file(tree, payloads, **pack) -> bytes:
    return U.pack_container(msgpack.packb(tree, **pack), payloads, encoding=U.MSGPACK)


def test_msgpack_widths_floats_positions_and_errors_agree_with_python(ts, tmp_path):
    pkg, payloads, program = small("msgpack")
    tree = msgpack.unpackb(program, raw=False)
    fields = {f[0]: f[1] for f in m.Package.FIELDS}
    files = {"plain": U.pack_container(program, payloads, encoding=U.MSGPACK)}

    def variant(name, mutate, **pack):
        t = msgpack.unpackb(program, raw=False)
        mutate(t)
        files[name] = _mp_file(t, payloads, **pack)

    def at(lst, i, v):
        while len(lst) <= i:
            lst.append(None)
        lst[i] = v

    fv = fields["format_version"]
    # Positions past the reader's fields (a newer minor's) are ignored, whatever they hold.
    n_ids = max(f[1] for f in m.Package.FIELDS) + 1
    variant("extra_positions", lambda t: t.extend([None] * (n_ids - len(t)) + [{"k": [1, 2]}, msgpack.ExtType(5, b"xy"),
                                                                                1.5, None]))
    # A float32-encoded float and an integer where a float goes (operator default values).
    op = [None] * 8
    ops_id = fields["operators"]
    schema_fields = {f[0]: f[1] for f in m.OperatorSchema.FIELDS}
    param_fields = {f[0]: f[1] for f in m.OperatorParameter.FIELDS}
    value_id = {f[0]: f[1] for f in m.Value.FIELDS}["value"]
    float_member = m.UNIONS[[f for f in m.Value.FIELDS if f[0] == "value"][0][4]].index("FloatValue") + 1

    def with_default(v):
        param = [None] * (param_fields["default_value"] + 1)
        param[param_fields["name"]] = "p"
        value = [None] * (value_id + 1)
        value[value_id - 1] = float_member
        value[value_id] = [v]
        param[param_fields["default_value"]] = value
        o = [None] * (max(schema_fields["target"], schema_fields["parameters"]) + 1)
        o[schema_fields["target"]] = "t"
        o[schema_fields["parameters"]] = [param]
        return lambda t: at(t, ops_id, [o])

    del op
    variant("float32_nan_payload", with_default(struct.unpack("<f", struct.pack("<I", 0x7FA00001))[0]),
            use_single_float=True)
    variant("float64_neg_zero", with_default(-0.0))
    variant("int_for_float", with_default(-7))
    variant("uint64_for_float", with_default((1 << 64) - 1))
    variant("str_for_float", with_default("nan"))
    variant("bool_for_float", with_default(True))
    # Integers of every msgpack width for the format version (uint32 fields): fixint is what packb picks;
    # a 64-bit encoding of a small value is the same integer.
    variant("format_major_wide", lambda t: t.__setitem__(fv, [1, 0]))
    files["format_major_uint64"] = U.pack_container(
        program.replace(msgpack.packb(tree[fv]), b"\x92\xcf" + struct.pack(">Q", 1) + b"\x00", 1), payloads,
        encoding=U.MSGPACK)
    variant("major_out_of_range", lambda t: t.__setitem__(fv, [1 << 32, 0]))
    variant("major_negative", lambda t: t.__setitem__(fv, [-1, 0]))
    variant("trailing_nil_dropped", lambda t: t.__setitem__(fv, [1]))
    variant("table_as_map", lambda t: t.__setitem__(fields["producer"], {"name": "x"}))
    variant("bin_for_string", lambda t: t[fields["programs"]][0].__setitem__(
        {f[0]: f[1] for f in m.Program.FIELDS}["name"], b"forward"))
    variant("root_not_array", lambda t: t.clear() or t.append(None), )
    files["root_is_map"] = U.pack_container(msgpack.packb({"a": 1}), payloads, encoding=U.MSGPACK)
    files["trailing_bytes"] = U.pack_container(program + b"\xc0", payloads, encoding=U.MSGPACK)
    files["truncated"] = U.pack_container(program[:-3], payloads, encoding=U.MSGPACK)
    files["reserved_c1"] = U.pack_container(b"\xc1", payloads, encoding=U.MSGPACK)
    files["bad_utf8"] = U.pack_container(program.replace(b"forward", b"forw\xffrd", 1), payloads,
                                         encoding=U.MSGPACK)
    files["deep"] = U.pack_container(b"\x91" * 3000 + b"\xc0", payloads, encoding=U.MSGPACK)
    files["huge_array_header"] = U.pack_container(b"\xdd\xff\xff\xff\xff", payloads, encoding=U.MSGPACK)
    assert_agree(tmp_path, files, expect={
        "plain": "OK", "extra_positions": "OK", "float32_nan_payload": "OK", "float64_neg_zero": "OK",
        "int_for_float": "OK", "uint64_for_float": "OK", "str_for_float": "EncodingError", "format_major_uint64": "OK",
        "major_out_of_range": "EncodingError", "trailing_nil_dropped": "OK", "table_as_map": "EncodingError",
        "trailing_bytes": "EncodingError", "truncated": "EncodingError", "bad_utf8": "EncodingError",
        "deep": "LimitError", "huge_array_header": "EncodingError"})
    r = verdicts(tmp_path, {"f32": files["float32_nan_payload"]})["f32"][0]
    # (double) of the float32 NaN 0x7fa00001: quieted, payload shifted into the double's fraction
    want = (0x7FA00001 & 0x7FFFFF | 0x400000) << 29 | 0x7FF << 52
    assert f'"value":"0x{want:016x}"' in r[1]
    assert math.isnan(struct.unpack("<d", struct.pack("<Q", want))[0])
