"""The native verifiers' bound on table visits: max(1,000,000, program bytes / 4), the same in C++ and TypeScript.

Shared offsets let a small FlatBuffers buffer stand for a huge tree. A program
whose `example_inputs` is a list of two references to one list of two
references ... visits 2^(levels + 2) + 1 tables. Padded with 1 MiB that no
field references, the bound is 1,000,000 (the padding's quarter is smaller),
while a bound of 1,000,000 + bytes / 4 (what the TypeScript reader had) would
let 18 levels, 1,048,577 visits, through. The Python reader refuses both
files: its decode budget charges 4 bytes a table visit against the program's
length (SPEC.md §10).
"""

from __future__ import annotations

import pytest

import native_util_ts as U

pytestmark = [pytest.mark.native]

LIMIT = 1_000_000
PAD = 1 << 20


def _program(levels: int, pad: int) -> bytes:
    def build(b):
        if pad:
            b.CreateString("x" * pad)  # bytes of the buffer that nothing references
        v = U.int_value(b)
        for _ in range(levels):
            v = U.list_value(b, [v, v])
        return v
    return U.fb_package(build)


def _visits(levels: int) -> int:
    """Package, FormatVersion, Program, and 2^(levels + 2) - 2 for the value: each level is Value + ListValue."""
    return 3 + 2 ** (levels + 2) - 2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("table_visits")
    out = {}
    for name, levels, pad in (("over_padded", 18, PAD), ("under", 17, 0)):
        program = _program(levels, pad)
        bound = max(LIMIT, len(program) // 4)
        if pad:  # a bound of 1,000,000 + bytes / 4 would let the padded file through
            assert LIMIT + len(program) // 4 >= _visits(levels) > bound
        path = d / f"{name}.pt2f"
        path.write_bytes(U.pack_container(program))
        out[name] = (path, "LimitError" if _visits(levels) > bound else "OK")
    assert [v for _, v in out.values()] == ["LimitError", "OK"]
    return out


def _verdict(ok: bool, text: str) -> str:
    return "OK" if ok else ("LimitError" if "LimitError" in text else text[-300:])


def test_cpp_and_ts_bound_table_visits_alike(files, cpp_release, ts_reader):
    import native_util_cpp as C

    by_file = {r["file"]: r for r in ts_reader.dump_batch([p for p, _ in files.values()], validate=False)}
    for name, (path, expected) in files.items():
        r = C.run(cpp_release / "pt2f-dump", "--no-validate", path)
        assert _verdict(r.returncode == C.EXIT_OK, r.stderr) == expected, ("cpp", name, r.stderr[-300:])
        t = by_file[str(path)]
        assert _verdict(t["ok"], f"{t.get('error')}: {t.get('message')}") == expected, ("ts", name, t)
        if expected == "LimitError":
            assert "table" in r.stderr and "table" in t["message"], (r.stderr, t["message"])


def test_python_reader_refuses_both_within_its_budget(files):
    from pt2format import _api
    from pt2format.errors import LimitError

    for name, (path, _) in files.items():
        with pytest.raises(LimitError, match="more objects than its size allows"):
            _api.read(path)
