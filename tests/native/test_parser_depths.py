"""SPEC.md §10: the parsers' container depths, `max_json_depth` and `max_msgpack_depth` of the limits table.

A golden file gets arrays nested under a key (JSON) or a field number
(MessagePack) the schema does not define, so only the parser sees them. The
root container is depth 1, so `bound - 1` nested arrays are the deepest a
reader accepts and `bound` arrays are a LimitError. The bounds are SPEC.md's
numbers (900 and 1024, msgpack-python's unpacker stack), written here, not
read from the generated table, so a changed table fails this test. The C++ and
TypeScript readers are held to both; the Python reader to MessagePack only
(its JSON parser stops at CPython's recursion limit, a little deeper).
"""

from __future__ import annotations

import copy

import pytest

from conformance import _invalid_raw as R
from pt2format import _codecs
from pt2format._generated import limits

JSON_DEPTH = 900
MSGPACK_DEPTH = 1024


def test_the_table_holds_specs_numbers():
    assert (limits.MAX_JSON_DEPTH, limits.MAX_MSGPACK_DEPTH) == (JSON_DEPTH, MSGPACK_DEPTH)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(encoding, nested arrays) -> (file, expected verdict)."""
    d = tmp_path_factory.mktemp("parser_depths")
    pkg, payloads, package_id = R.decode("mlp")
    js = _codecs.encode(copy.deepcopy(pkg), "json")
    mp = _codecs.encode(copy.deepcopy(pkg), "msgpack")
    out = {}
    for n in (JSON_DEPTH - 1, JSON_DEPTH):
        program = js.replace(b"{", b'{"zz_unknown": ' + b"[" * n + b"]" * n + b",", 1)
        out[("json", n)] = R.assemble(program, payloads, "json", package_id=package_id)
    for n in (MSGPACK_DEPTH - 1, MSGPACK_DEPTH):
        program = R._msgpack_set_package_field(mp, 40, b"\x91" * n + b"\xc0")  # field 40: none in the schema
        out[("msgpack", n)] = R.assemble(program, payloads, "msgpack", package_id=package_id)
    paths = {}
    for (enc, n), data in out.items():
        path = d / f"{enc}_{n}.pt2f"
        path.write_bytes(data)
        bound = JSON_DEPTH if enc == "json" else MSGPACK_DEPTH
        paths[(enc, n)] = (path, "OK" if n < bound else "LimitError")
    return paths


def test_python_reader_msgpack(files):
    import pt2format
    from pt2format.errors import Pt2FormatError

    for (enc, n), (path, expected) in files.items():
        if enc != "msgpack":
            continue
        try:
            pt2format.validate(path)
            verdict = "OK"
        except Pt2FormatError as e:
            verdict = type(e).__name__
        assert verdict == expected, (enc, n)


@pytest.mark.native
def test_cpp_reader(files, cpp_release):
    import native_util_cpp as U

    for (enc, n), (path, expected) in files.items():
        r = U.run(cpp_release / "pt2f-dump", path)
        verdict = "OK" if r.returncode == U.EXIT_OK else ("LimitError" if "LimitError" in r.stderr else r.stderr)
        assert verdict == expected, (enc, n)


@pytest.mark.native
def test_ts_reader(files, ts_reader):
    by_file = {r["file"]: r for r in ts_reader.dump_batch([p for p, _ in files.values()])}
    for (enc, n), (path, expected) in files.items():
        r = by_file[str(path)]
        assert ("OK" if r["ok"] else r["error"]) == expected, (enc, n)
