"""Files of a test-only minor 1.1 are read by every 1.0 reader, in every encoding, as SPEC.md §8 says.

The 1.1 schema (tests/support/evolution_ext.py) appends a field to the root
table and to Node, a value to an enum, a member to a union; a 1.1 copy of the
Python package is generated from it with regen.py and writes the files. The
1.0 readers (Python and TypeScript in all three encodings, C++ in
FlatBuffers) must:

- ignore the new fields (absent from the dump) and skip an OPTIONAL section
  of a new kind: the dump is exactly the 1.0 dump of the same tree;
- keep the new enum value as its integer (FlatBuffers, MessagePack; JSON by
  name is a VersionError naming the name);
- refuse the new union member with a VersionError;
- refuse the new feature bit with an UnsupportedFeatureError naming it.

And the 1.1 reader dumps 1.0 files (the golden files included) exactly as the
1.0 reader does, while its dump of a 1.1 file shows the new field.

The expected dumps are not written here: they are the 1.0 Python reader's
dumps of the same tree written by the 1.0 writer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evolution_ext as E
import native_util_cpp as CPP
import native_util_ts as TS
import pt2f_samples
from pt2format import _api
from pt2format._dump import dump
from pt2format._generated import model as m

ROOT = Path(__file__).resolve().parents[2]
ENCODINGS = ("flatbuffers", "msgpack", "json")
VARIANTS = ("field", "enum", "union", "feature")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{(variant, encoding): path} written by the 1.1 package; field files also get an OPTIONAL section."""
    tmp = tmp_path_factory.mktemp("evolution")
    root = E.scratch_package(tmp)
    jobs, out = [], {}
    for variant in VARIANTS:
        for enc in ENCODINGS:
            path = tmp / f"{variant}-{enc}.pt2f"
            jobs.append({"op": "write", "variant": variant, "encoding": enc, "path": str(path)})
            out[variant, enc] = path
    results = E.run_scratch(root, jobs)
    assert all(r["ok"] for r in results), results
    for enc in ENCODINGS:
        plain = out["field", enc]
        E.with_optional_section(plain, plain.with_name(f"field-section-{enc}.pt2f"))
        out["field+section", enc] = plain.with_name(f"field-section-{enc}.pt2f")
    out["_root"] = root
    return out


def _expected_dump(tmp_path, mutate=None) -> str:
    """The 1.0 reader's dump of the same tree, written by the 1.0 writer (format_version 1.1 as the file's)."""
    pkg = pt2f_samples.tiny_package()
    pkg.format_version = m.FormatVersion(1, 1)
    if mutate:
        mutate(pkg)
    path = tmp_path / "expected.pt2f"
    _api.write_package(path, pkg, pt2f_samples.float_payloads(), fsync=False)
    return dump(path)


def _python(path):
    try:
        return {"ok": True, "dump": dump(path)}
    except Exception as e:  # noqa: BLE001 - the class is the outcome under test
        return {"ok": False, "error": type(e).__name__, "message": str(e)}


@pytest.fixture(scope="module")
def cpp():
    why = CPP.missing_toolchain()
    if why:
        pytest.fail(f"C++ toolchain missing: {why}")
    return CPP.build("release")


@pytest.fixture(scope="module")
def ts():
    why = TS.missing_toolchain()
    if why:
        pytest.fail(f"TypeScript toolchain missing: {why}")
    TS.build()


def _cpp(build_dir, path):
    r = CPP.run(build_dir / "pt2f-dump", path)
    if r.returncode == 0:
        return {"ok": True, "dump": r.stdout.decode("utf-8")}
    line = r.stderr.strip()
    return {"ok": False, "error": line.split(": ", 2)[1] if line.count(": ") >= 2 else line, "message": line}


def _ts(path):
    return TS.dump_batch([path])[0]


def _readers(files, variant, cpp_dir):
    """{reader/encoding: outcome} of every 1.0 reader for one variant."""
    out = {f"python/{enc}": _python(files[variant, enc]) for enc in ENCODINGS}
    out["cpp/flatbuffers"] = _cpp(cpp_dir, files[variant, "flatbuffers"])
    out.update({f"ts/{enc}": _ts(files[variant, enc]) for enc in ENCODINGS})
    return out


# ---------------------------------------------------------------------------

def test_new_fields_are_ignored_and_optional_section_skipped(files, cpp, ts, tmp_path):
    want = _expected_dump(tmp_path)
    assert E.NOTE not in want
    for variant in ("field", "field+section"):
        for who, r in _readers(files, variant, cpp).items():
            assert r["ok"], (variant, who, r)
            assert r["dump"] == want, f"{variant}, {who}: dump differs from the 1.0 dump of the same tree"
    raw = files["field+section", "flatbuffers"].read_bytes()
    assert E.OPTIONAL_PAYLOAD in raw  # the section is really there


def test_new_field_is_in_the_file(files):
    """The 1.1 reader sees what the 1.0 readers ignored (so the test above is not vacuous)."""
    jobs = [{"op": "dump", "path": str(files["field+section", enc])} for enc in ENCODINGS]
    for r in E.run_scratch(files["_root"], jobs):
        assert r["ok"], r
        assert json.loads(r["dump"])["package"]["evolution_test_note"] == E.NOTE


def test_new_enum_value_is_kept_as_its_integer(files, cpp, ts, tmp_path):
    enum_field, _, _, _ = E.named_argument_refs()
    value = E.new_enum_value()
    want = _expected_dump(tmp_path, lambda p: setattr(p.programs[0].graph.nodes[0].inputs[0], enum_field, value))
    assert f'"{enum_field}":{value}' in want
    for who, r in _readers(files, "enum", cpp).items():
        if who.endswith("/json") and not who.startswith("cpp"):  # by name: the 1.0 reader cannot know its value
            assert not r["ok"] and r["error"] == "VersionError", r
            assert "EVOLUTION_TEST" in r["message"] and "1.1" in r["message"], r["message"]
            continue
        assert r["ok"], (who, r)
        assert r["dump"] == want, f"{who}: dump differs"


def test_new_union_member_is_refused(files, cpp, ts):
    for who, r in _readers(files, "union", cpp).items():
        assert not r["ok"] and r["error"] == "VersionError", (who, r)
        assert "_type" in r["message"], (who, r["message"])


def test_new_feature_bit_is_refused_naming_it(files, cpp, ts):
    for who, r in _readers(files, "feature", cpp).items():
        assert not r["ok"] and r["error"] == "UnsupportedFeatureError", (who, r)
        assert f"0x{E.FEATURE_BIT:x}" in r["message"], (who, r["message"])


def test_newer_reader_dumps_older_files_as_their_minor_does(files, tmp_path):
    """Adding fields in 1.1 breaks no 1.0 golden file: the 1.1 reader's dump equals the expected one."""
    golden = sorted((ROOT / "conformance" / "golden").glob("1.*/*/program.pt2f"))
    assert golden, "no golden files"
    sample = tmp_path / "sample.pt2f"
    _api.write_package(sample, pt2f_samples.tiny_package(), pt2f_samples.float_payloads(), fsync=False)
    paths = [sample, *golden]
    results = E.run_scratch(files["_root"], [{"op": "dump", "path": str(p)} for p in paths])
    for path, r in zip(paths, results):
        assert r["ok"], (path, r)
        want = dump(path) if path == sample else (path.parent / "expected.json").read_text(encoding="utf-8")
        assert r["dump"] == want, f"{path.relative_to(ROOT) if path != sample else 'sample'}: 1.1 dump differs"


def test_inspect_and_hexdump_name_an_unknown_optional_section(files):
    from pt2format import cli
    from pt2format._container.annotate import annotate

    path = files["field+section", "flatbuffers"]
    text = cli._inspect(str(path), 5)
    assert f"?{E.OPTIONAL_KIND}" in text, text
    dumped = annotate(path.read_bytes())
    assert f"kind = {E.OPTIONAL_KIND} (?{E.OPTIONAL_KIND})" in dumped and "flags = 0x1" in dumped
