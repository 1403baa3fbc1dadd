"""The invalid-file corpus: every reader refuses every file with exactly the tagged error class.

`conformance/invalid/` is written by `conformance/make_invalid.py` (each file
breaks one rule of SPEC.md); the expected class comes from SPEC.md's rule, not
from any reader. One test per reader and file, so a disagreement names both.
"""

from __future__ import annotations

import inspect

import pytest

import invalid_corpus as C
from conformance import make_invalid
from pt2format import errors

ENTRIES = C.entries()
IDS = [C.entry_id(e) for e in ENTRIES]


def test_committed_corpus_equals_generator():
    """Drift: the committed files and manifest are exactly what make_invalid.py writes."""
    files, manifest = make_invalid.build()
    committed = {p.name for p in C.INVALID_DIR.glob("*.pt2f")}
    assert committed == set(files), sorted(committed ^ set(files))
    for name, data in files.items():
        assert (C.INVALID_DIR / name).read_bytes() == data, f"{name} differs: run python conformance/make_invalid.py"
    assert C.MANIFEST.read_bytes() == manifest


def test_manifest_is_well_formed():
    error_classes = {n for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.Pt2FormatError)}
    spec = (C.ROOT / "schema" / "SPEC.md").read_text(encoding="utf-8")
    assert len(ENTRIES) >= 100
    for e in ENTRIES:
        assert set(e) == {"file", "rule", "encoding", "error", "description"}, e
        assert e["error"] in error_classes, e
        assert e["encoding"] in make_invalid.ENCODINGS, e
        section = e["rule"].removeprefix("§").split(".")
        heading = f"## {section[0]}." if len(section) == 1 else f"### {section[0]}.{section[1]} "
        assert heading in spec or f"## {section[0]}. " in spec, e
    # Every encoding is covered, and every error class a file can earn.
    assert {e["encoding"] for e in ENTRIES} == set(make_invalid.ENCODINGS)
    assert {e["error"] for e in ENTRIES} >= {
        "HeaderError", "SegmentError", "ChecksumError", "EncodingError", "LimitError", "VersionError",
        "UnsupportedFeatureError", "ValidationError", "StringClassError", "StaleShardError"}


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_python_reader(entry):
    assert C.python_verdict(C.INVALID_DIR / entry["file"]) == entry["error"], entry["description"]


@pytest.fixture(scope="module")
def cpp_build():
    import native_util_cpp as U

    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    return U.build("release")


@pytest.mark.native
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_cpp_reader(cpp_build, entry):
    assert C.cpp_verdict(cpp_build, C.INVALID_DIR / entry["file"]) == entry["error"], entry["description"]


@pytest.fixture(scope="module")
def ts_verdicts():
    """Every file through the TypeScript reader once (one Node process); file path -> verdict."""
    import native_util_ts as U

    why = U.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader column needs Node.js: {why}")
    U.build()
    return C.ts_verdicts([C.INVALID_DIR / e["file"] for e in ENTRIES])


@pytest.mark.native
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_ts_reader(entry, ts_verdicts):
    assert ts_verdicts[str(C.INVALID_DIR / entry["file"])] == entry["error"], entry["description"]
