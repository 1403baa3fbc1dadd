"""Agreement with flatc: our JSON through `flatc -b` and our binary through `flatc --json` decode to the same tree.

Known flatc behaviours, modelled explicitly here rather than hidden:
- `flatc -b` drops a scalar equal to its default using ==, so -0.0 (== 0.0) is
  lost unless `--force-defaults` is given; we pass it (and check the loss once).
- `flatc --json` prints NaN and infinities as bare `nan`, `-nan`, `inf`,
  `-inf` even with --strict-json; we quote them before decoding (SPEC's JSON
  spells them as strings).
- `flatc --json` prints doubles in fixed notation with 12 decimals; expected
  trees are rounded the same way (`_as_flatc_prints`).
- flatc sorts vectors of tables with a `(key)` field; our trees keep them sorted.
- flatc does not parse the "nan:0x<bits>" spelling of a non-canonical NaN (SPEC.md §4),
  and keeps no NaN payload anyway: JSON given to flatc has them spelled "nan" (model
  equality treats all NaNs alike; payloads are checked in tests/native/test_json_nan_payloads.py).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from pt2format import _codecs as C
from pt2format._generated import model as M

import codec_strategies as S
from toolpaths import require_tool

ROOT = Path(__file__).resolve().parents[3]
FBS = ROOT / "schema" / "pt2format.fbs"
_SETTINGS = settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _flatc(args, cwd):
    proc = subprocess.run([require_tool("flatc", "flatc"), *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


_NAN_BITS = re.compile(rb'"nan:0x[0-9a-f]{16}"')


def flatc_binary_from_json(json_bytes: bytes, tmp: Path, *, force_defaults=True) -> bytes:
    (tmp / "x.json").write_bytes(_NAN_BITS.sub(b'"nan"', json_bytes))
    _flatc(["-b", *(["--force-defaults"] if force_defaults else []), "-o", str(tmp), str(FBS), str(tmp / "x.json")], tmp)
    return (tmp / "x.pt2fp").read_bytes()


_BARE = re.compile(r'("(?:[^"\\]|\\.)*")|(-?nan|-?inf)\b')


def flatc_json_from_binary(fb_bytes: bytes, tmp: Path) -> bytes:
    (tmp / "y.bin").write_bytes(fb_bytes)
    _flatc(["--json", "--strict-json", "--raw-binary", "-o", str(tmp), str(FBS), "--", str(tmp / "y.bin")], tmp)
    text = (tmp / "y.json").read_text(encoding="utf-8")

    def quote(m):
        if m.group(1):
            return m.group(1)  # a string: leave it alone
        word = m.group(2)
        return '"nan"' if word.endswith("nan") else f'"{word}"'

    return _BARE.sub(quote, text).encode("utf-8")


def _as_flatc_prints(tree):
    """A copy of `tree` with every finite float rounded as flatc prints it (12 decimals, fixed)."""

    def fix(x):
        return float(f"{x:.12f}") if type(x) is float and math.isfinite(x) else x

    def walk(obj):
        cls = type(obj)
        args = []
        for f in cls.FIELDS:
            name, _, kind, elem = f[:4]
            v = getattr(obj, name)
            if kind in ("table", "struct", "union") and v is not None:
                v = walk(v)
            elif kind == "vector" and elem in ("table", "struct"):
                v = [walk(x) for x in v]
            elif kind == "vector":
                v = [fix(x) for x in v]
            else:
                v = fix(v)
            args.append(v)
        return cls(*args)

    return walk(tree)


@pytest.fixture(scope="module")
def exhaustive():
    return S.exhaustive_package()


def test_exhaustive_json_through_flatc_binary(exhaustive, tmp_path):
    fb = flatc_binary_from_json(C.encode(exhaustive, "json"), tmp_path)
    assert C.decode(fb, "flatbuffers") == exhaustive


def test_exhaustive_binary_through_flatc_json(exhaustive, tmp_path):
    text = flatc_json_from_binary(C.encode(exhaustive, "flatbuffers"), tmp_path)
    assert C.decode(text, "json") == _as_flatc_prints(exhaustive)


@given(pkg=S.packages(fixed_decimals=12))
@_SETTINGS
def test_random_json_through_flatc_binary(pkg, tmp_path):
    fb = flatc_binary_from_json(C.encode(pkg, "json"), tmp_path)
    assert C.decode(fb, "flatbuffers") == pkg


@given(pkg=S.packages(fixed_decimals=12))
@_SETTINGS
def test_random_binary_through_flatc_json(pkg, tmp_path):
    text = flatc_json_from_binary(C.encode(pkg, "flatbuffers"), tmp_path)
    assert C.decode(text, "json") == pkg


def test_flatc_refuses_nan_payload_spelling(tmp_path):
    """Documents SPEC.md §4: flatc cannot convert a JSON file holding a non-canonical NaN."""
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    pkg = M.Package(format_version=M.FormatVersion(1, 0), operators=[M.OperatorSchema(
        target="torch.ops.t.op.default", parameters=[M.OperatorParameter(
            name="x", type="float", default_value=M.Value(M.FloatValue(payload_nan)))])])
    text = C.encode(pkg, "json")
    assert b'"nan:0x7ff8000000000001"' in text
    (tmp_path / "x.json").write_bytes(text)
    proc = subprocess.run([require_tool("flatc", "flatc"), "-b", "-o", str(tmp_path), str(FBS), str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "nan:0x7ff8000000000001" in proc.stdout + proc.stderr


def test_flatc_drops_negative_zero_without_force_defaults(tmp_path):
    """Documents the flatc behaviour the tests above work around with --force-defaults."""
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(
        example_inputs=M.Value(M.FloatValue(-0.0)))])
    got = C.decode(flatc_binary_from_json(C.encode(pkg, "json"), tmp_path, force_defaults=False), "flatbuffers")
    value = got.programs[0].example_inputs.value.value
    assert value == 0.0 and math.copysign(1.0, value) == 1.0
    ours = C.decode(C.encode(pkg, "flatbuffers"), "flatbuffers").programs[0].example_inputs.value.value
    assert math.copysign(1.0, ours) == -1.0


# ---------------------------------------------------------------------------
# flatc's C++ verifier (flatc --json does not verify; it crashes on bad input)
# ---------------------------------------------------------------------------

_VERIFY_CPP = r"""
// Runs the flatc-generated FlatBuffers verifier on each file named on the command line.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>
#include <cmath>  // defines the INFINITY macro: the generated header must not clash with it
#include "pt2format_generated.h"
int main(int argc, char** argv) {
  int bad = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    flatbuffers::Verifier::Options opts;
    opts.max_depth = 300;
    flatbuffers::Verifier v(buf.data(), buf.size(), opts);
    bool ok = pt2format::VerifyPackageBuffer(v);
    std::printf("%s %s\n", ok ? "OK" : "FAIL", argv[i]);
    bad += !ok;
  }
  return bad ? 1 : 0;
}
"""


@pytest.fixture(scope="module")
def cpp_verifier(tmp_path_factory):
    """flatc's C++ verifier for our schema, compiled once (skipped without a C++ compiler or headers)."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    include = Path(sys.prefix) / "include"
    if cxx is None or not (include / "flatbuffers" / "flatbuffers.h").exists():
        pytest.skip("no C++ compiler or flatbuffers headers")
    d = tmp_path_factory.mktemp("verifier")
    # Our own header: the checked-in one is generated without --no-emit-min-max-enum-values and
    # SymOp's MIN/MAX values collide with flatc's MIN/MAX sentinels.
    _flatc(["--cpp", "--cpp-std", "c++17", "--scoped-enums", "--no-emit-min-max-enum-values", "-o", str(d), str(FBS)], d)
    (d / "verify.cpp").write_text(_VERIFY_CPP)
    subprocess.run([cxx, "-O0", "-std=c++17", "-I", str(include), "-I", str(d), str(d / "verify.cpp"),
                    "-o", str(d / "verify")], check=True, capture_output=True, timeout=300)

    def verify(*buffers: bytes) -> list[bool]:
        paths = []
        for i, b in enumerate(buffers):
            p = d / f"buf{i}.bin"
            p.write_bytes(b)
            paths.append(str(p))
        out = subprocess.run([str(d / "verify"), *paths], capture_output=True, text=True, timeout=60).stdout
        return [line.startswith("OK") for line in out.splitlines()]

    return verify


def test_cpp_verifier_accepts_our_binaries(exhaustive, cpp_verifier):
    good = [C.encode(exhaustive, "flatbuffers"), C.encode(S.deep_value_package(60), "flatbuffers"),
            C.encode(M.Package(format_version=M.FormatVersion(1, 0)), "flatbuffers"),
            C.encode(S.alignment_package(), "flatbuffers")]  # the verifier also checks alignment
    bad = bytearray(good[0])
    bad[0:4] = (len(bad) + 8).to_bytes(4, "little")
    assert cpp_verifier(*good, bytes(bad)) == [True, True, True, True, False]


@given(pkg=S.packages(unknown_enums=True))
@_SETTINGS
def test_cpp_verifier_accepts_random_binaries(pkg, cpp_verifier):
    assert cpp_verifier(C.encode(pkg, "flatbuffers")) == [True]


def _schema_validator():
    schema = json.loads((ROOT / "schema" / "pt2format.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft201909Validator(schema)


def test_our_json_validates_against_the_schema(exhaustive):
    v = _schema_validator()
    v.validate(json.loads(C.encode(exhaustive, "json")))
    v.validate(json.loads(C.encode(S.deep_value_package(60), "json")))


@given(pkg=S.packages())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_json_validates_against_the_schema(pkg):
    _VALIDATOR.validate(json.loads(C.encode(pkg, "json")))


_VALIDATOR = _schema_validator()


@given(pkg=S.packages(unknown_enums=True))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_json_with_unknown_enum_values_validates(pkg):
    _VALIDATOR.validate(json.loads(C.encode(pkg, "json")))


def test_unknown_enum_values_from_flatc_validate_and_round_trip(tmp_path):
    """flatc prints an enum value its schema does not name as a JSON integer: that text must
    pass the JSON Schema and decode to the int, which our JSON writes back as an integer."""
    meta = M.TensorMeta(dtype=200, layout=255, sizes=[M.SymInt(-1, 2)])
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(graph=M.Graph(
        tensor_values=[M.TensorValue("t", meta)],
        nodes=[M.Node(name="n", inputs=[M.NamedArgument("a", M.IntArgument(1), kind=77)])]))])
    text = flatc_json_from_binary(C.encode(pkg, "flatbuffers"), tmp_path)
    doc = json.loads(text)
    flatc_meta = doc["programs"][0]["graph"]["tensor_values"][0]["meta"]
    assert (flatc_meta["dtype"], flatc_meta["layout"]) == (200, 255)
    _VALIDATOR.validate(doc)
    for schema in (True, False):
        got = C.decode(text, "json", json_schema=schema)
        assert got == pkg
        got_meta = got.programs[0].graph.tensor_values[0].meta
        assert type(got_meta.dtype) is int and got_meta.dtype == 200
    ours = json.loads(C.encode(got, "json"))
    assert ours["programs"][0]["graph"]["nodes"][0]["inputs"][0]["kind"] == 77
    assert ours["programs"][0]["graph"]["tensor_values"][0]["meta"]["dtype"] == 200
    assert C.decode(flatc_binary_from_json(C.encode(got, "json"), tmp_path), "flatbuffers") == pkg
