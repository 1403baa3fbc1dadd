"""The next minor, released with schema/release.py in a scratch clone, is read by this checkout's readers
as SPEC.md §8 says, in every encoding and every reader.

tests/support/evolution_ext.py releases the working minor in a clone (if it is
not released yet) and then a test-only next minor N with one of each addition:
a field on the root table and on Node, an enum value, a union member, a
feature bit and an OPTIONAL section kind. N's package writes the files; this
checkout's readers (Python, C++ and TypeScript, each in FlatBuffers, MessagePack
and JSON) must:

- ignore the new fields (absent from the dump) and skip the OPTIONAL section:
  the dump is exactly this checkout's dump of the same tree;
- keep the new enum value as its integer (FlatBuffers, MessagePack; JSON by
  name is a VersionError naming the name and both versions);
- refuse the new union member with a VersionError naming both versions;
- refuse the new feature bit with an UnsupportedFeatureError naming it.

And N's reader dumps this checkout's files (the golden files included) exactly
as this checkout's reader does, while its dump of an N file shows the new field;
N's writer labels each file with the smallest minor it needs. Nothing here names
a version, so the test holds at every release.

The expected dumps are not written here: they are this checkout's Python
reader's dumps of the same tree written by this checkout's writer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evolution_ext as E
import native_util_cpp as CPP
import native_util_ts as TS
import pt2f_samples
from pt2format import FORMAT_VERSION, _api
from pt2format._content_minor import content_minor
from pt2format._dump import dump
from pt2format._generated import model as m

ROOT = Path(__file__).resolve().parents[2]
ENCODINGS = ("flatbuffers", "msgpack", "json")
VARIANTS = ("field", "enum", "union", "feature", "plain")


@pytest.fixture(scope="module")
def nm(tmp_path_factory):
    return E.release_next_minor(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def files(nm, tmp_path_factory):
    """{(variant, encoding): path} written by N's package; field files also get an OPTIONAL section of N's kind."""
    tmp = tmp_path_factory.mktemp("evolution")
    jobs, out = [], {}
    for variant in VARIANTS:
        for enc in ENCODINGS:
            path = tmp / f"{variant}-{enc}.pt2f"
            jobs.append({"op": "write", "variant": variant, "encoding": enc, "path": str(path)})
            out[variant, enc] = path
    results = E.run_scratch(nm, jobs)
    assert all(r["ok"] for r in results), results
    out["_labels"] = {(j["variant"], j["encoding"]): tuple(r["label"]) for j, r in zip(jobs, results)}
    for enc in ENCODINGS:
        plain = out["field", enc]
        E.with_optional_section(plain, plain.with_name(f"field-section-{enc}.pt2f"), nm.optional_kind)
        out["field+section", enc] = plain.with_name(f"field-section-{enc}.pt2f")
    return out


def _expected_dump(tmp_path, label, mutate=None) -> str:
    """This checkout's dump of the same tree, written by this checkout's writer with N's label."""
    pkg = pt2f_samples.tiny_package()
    pkg.format_version = m.FormatVersion(*label)
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


def _readers(files, variant, cpp_dir):
    """{reader/encoding: outcome} of every reader of this checkout for one variant."""
    out = {f"python/{enc}": _python(files[variant, enc]) for enc in ENCODINGS}
    out.update({f"cpp/{enc}": _cpp(cpp_dir, files[variant, enc]) for enc in ENCODINGS})
    out.update(zip((f"ts/{enc}" for enc in ENCODINGS), TS.dump_batch([files[variant, enc] for enc in ENCODINGS])))
    return out


def _both_versions(nm, message):
    file_v, reader_v = nm.label, f"{FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}"
    return f"format {file_v}" in message and f"reads {reader_v}" in message


# ---------------------------------------------------------------------------

def test_release_command_made_the_next_minor(nm):
    """release.py froze N into the clone's history, dated it, and every generated page says N."""
    root = nm.root
    frozen = root / "schema" / "history" / nm.label
    assert (frozen / "pt2format.fbs").read_text() == (root / "schema" / "pt2format.fbs").read_text()
    assert (frozen / "container.toml").read_text() == (root / "schema" / "container.toml").read_text()
    assert f"///   {nm.label} ({E.DATE}) test-only extension" in (frozen / "pt2format.fbs").read_text()
    assert "released." in (frozen / "pt2format.fbs").read_text().split("namespace")[0]
    assert f"## {nm.label} — {E.DATE}" in (root / "schema" / "CHANGELOG.md").read_text()
    spec = (root / "schema" / "SPEC.md").read_text()
    assert spec.startswith(f"# The `.pt2f` file format, version {nm.label}\n")
    assert f"| `EVOLUTION_TEST` | test-only feature | {nm.label} |" in spec
    assert f"| {nm.label} " in (root / "docs" / "versions.md").read_text()
    fields_md = (root / "schema" / "FIELDS.md").read_text()
    assert f"| `evolution_test_note` | string |  | {nm.label} |" in fields_md
    assert f"| 0 | `note` | string |  | {nm.label} |" in fields_md  # from its table's pt2f_since
    assert f"## {E.NEW_TABLE}\n\nA new argument (test-only).\n\nSince {nm.label} (`pt2f_since`)." in fields_md
    minors = (root / "pt2format" / "_generated" / "minors.py").read_text()
    assert f"'evolution_test_weight': {nm.version[1]}" in minors


def test_the_release_command_refuses_out_of_order(nm, tmp_path):
    """Releasing a version the schema is not at, a version already frozen differently, or adding a version
    line over a history without the previous minor are refused, naming what to do first."""
    r = E.run_release(nm.root, (nm.version[0], nm.version[1] + 2))
    assert r.returncode != 0 and "version line says" in r.stderr, r.stderr
    clone = E.scratch_clone(tmp_path)
    fbs = clone / "schema" / "pt2format.fbs"
    skip = (nm.previous[0], nm.previous[1] + 2)
    text = fbs.read_text()
    if not (clone / "schema" / "history" / f"{nm.previous[0]}.{nm.previous[1]}").exists():
        skip = (nm.previous[0], nm.previous[1] + 1)  # the working minor itself is not released yet
    fbs.write_text(E.extension_fbs(text, skip))
    r = E.run_release(clone, skip)
    assert r.returncode != 0 and "release " in r.stderr and "first" in r.stderr, r.stderr
    assert not (clone / "schema" / "history" / f"{skip[0]}.{skip[1]}").exists()
    import subprocess
    import sys
    r = subprocess.run([sys.executable, str(clone / "schema" / "regen.py"), "--check"], capture_output=True, text=True)
    assert r.returncode != 0 and "first" in (r.stderr + r.stdout), r.stdout + r.stderr


def test_new_fields_are_ignored_and_optional_section_skipped(nm, files, cpp, ts, tmp_path):
    want = _expected_dump(tmp_path, nm.version)
    assert E.NOTE not in want
    for variant in ("field", "field+section"):
        for who, r in _readers(files, variant, cpp).items():
            assert r["ok"], (variant, who, r)
            assert r["dump"] == want, f"{variant}, {who}: dump differs from this checkout's dump of the same tree"
    raw = files["field+section", "flatbuffers"].read_bytes()
    assert E.OPTIONAL_PAYLOAD in raw  # the section is really there


def test_new_field_is_in_the_file(nm, files):
    """N's reader sees what this checkout's readers ignored (so the test above is not vacuous)."""
    jobs = [{"op": "dump", "path": str(files["field+section", enc])} for enc in ENCODINGS]
    for r in E.run_scratch(nm, jobs):
        assert r["ok"], r
        assert json.loads(r["dump"])["package"]["evolution_test_note"] == E.NOTE


def test_the_writer_records_the_smallest_minor(nm, files):
    """A file using an N name or N's feature bit is labelled N; one using none the minor its content needs."""
    labels = files["_labels"]
    for enc in ENCODINGS:
        for variant in ("field", "enum", "union", "feature"):
            assert labels[variant, enc] == nm.version, (variant, enc, labels[variant, enc])
        assert labels["plain", enc] == (nm.version[0], content_minor(pt2f_samples.tiny_package()))
        with _api.read(files["plain", enc]) as f:
            assert f.header.format_version == labels["plain", enc]


def test_new_enum_value_is_kept_as_its_integer(nm, files, cpp, ts, tmp_path):
    enum_field, _, _, _ = E.named_argument_refs()
    value = E.new_enum_value()
    want = _expected_dump(tmp_path, nm.version,
                          lambda p: setattr(p.programs[0].graph.nodes[0].inputs[0], enum_field, value))
    assert f'"{enum_field}":{value}' in want
    for who, r in _readers(files, "enum", cpp).items():
        if who.endswith("/json"):  # by name: the reader cannot know its value
            assert not r["ok"] and r["error"] == "VersionError", (who, r)
            assert "EVOLUTION_TEST" in r["message"] and _both_versions(nm, r["message"]), (who, r["message"])
            continue
        assert r["ok"], (who, r)
        assert r["dump"] == want, f"{who}: dump differs"


def test_new_union_member_is_refused(nm, files, cpp, ts):
    for who, r in _readers(files, "union", cpp).items():
        assert not r["ok"] and r["error"] == "VersionError", (who, r)
        assert "_type" in r["message"] and _both_versions(nm, r["message"]), (who, r["message"])


def test_new_feature_bit_is_refused_naming_it(nm, files, cpp, ts):
    for who, r in _readers(files, "feature", cpp).items():
        assert not r["ok"] and r["error"] == "UnsupportedFeatureError", (who, r)
        assert f"0x{nm.feature_bit:x}" in r["message"], (who, r["message"])


def test_convert_refuses_a_newer_minor(nm, files, tmp_path):
    """This checkout's converter would drop N's field and section: it refuses (SPEC.md §8.2)."""
    from pt2format.errors import VersionError

    for enc in ENCODINGS:
        out = tmp_path / f"converted-{enc}.pt2f"
        with pytest.raises(VersionError) as e:
            _api.convert(files["field+section", enc], out, "json")
        assert _both_versions(nm, str(e.value)) or (nm.label in str(e.value)), str(e.value)
        assert not out.exists()


def test_newer_reader_dumps_older_files_as_their_minor_does(nm, tmp_path):
    """N's additions break no golden file: N's reader dumps each exactly as committed."""
    golden = sorted((ROOT / "conformance" / "golden").glob("*/*/program.pt2f"))
    assert golden, "no golden files"
    sample = tmp_path / "sample.pt2f"
    _api.write_package(sample, pt2f_samples.tiny_package(), pt2f_samples.float_payloads(), fsync=False)
    paths = [sample, *golden]
    results = E.run_scratch(nm, [{"op": "dump", "path": str(p)} for p in paths])
    for path, r in zip(paths, results):
        assert r["ok"], (path, r)
        want = dump(path) if path == sample else (path.parent / "expected.json").read_text(encoding="utf-8")
        assert r["dump"] == want, f"{path.relative_to(ROOT) if path != sample else 'sample'}: N's dump differs"


def test_inspect_and_hexdump_name_an_unknown_optional_section(nm, files):
    from pt2format import cli
    from pt2format._container.annotate import annotate

    path = files["field+section", "flatbuffers"]
    text = cli._inspect(str(path), 5)
    assert f"?{nm.optional_kind}" in text, text
    dumped = annotate(path.read_bytes())
    assert f"kind = {nm.optional_kind} (?{nm.optional_kind})" in dumped and "flags = 0x1" in dumped
