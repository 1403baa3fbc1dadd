"""The C++ and TypeScript readers read the files of names torch writes (issue 20) as Python does.

The programs of tests/roundtrip/test_torch_names.py (`n1.n2@1`, a sliced
module's stack key, `modül`/`bü`), saved in every encoding: each reader's
canonical dump equals Python's byte for byte, so all three accept the same
names.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import native_util_cpp as C
import native_util_ts as T
import pt2format
from pt2format._dump import dump

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
import test_torch_names as N  # noqa: E402

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("cpp_reader")]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    out = []
    for name, make in sorted(N.PROGRAMS.items()):
        ep = make()
        for enc in N.ENCODINGS:
            p = d / f"{name}-{enc}.pt2f"
            pt2format.save(ep, p, encoding=enc, progress=False, fsync=False)
            out.append(p)
    return out


def test_cpp_reader_dumps_torch_names_like_python(files):
    why = C.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    build = C.build("release")
    for p in files:
        r = C.run(build / "pt2f-dump", p)
        assert r.returncode == 0, f"{p.name}: {r.stderr}"
        assert r.stdout == dump(p).encode("utf-8"), p.name


def test_ts_reader_dumps_torch_names_like_python(files):
    why = T.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader tests need Node.js: {why}")
    T.build()
    for p in files:
        r = T.ts_dump(p)
        assert r.returncode == 0, f"{p.name}: {r.stderr}"
        assert r.stdout == dump(p).encode("utf-8"), p.name
