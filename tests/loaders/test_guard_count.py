"""How many guards a file may list, and what each costs: bounded in every reader, and never printed twice.

#41 §2: a file listing one guard 200,000 times made `load()` and `.module()`
print and compile 200,000 asserts. SPEC §10 bounds `input_guards` and
`guard_sources` (schema limits `max_input_guards`, `max_guard_sources`), which
the Python, C++ and TypeScript validators enforce with a LimitError; under
the bound, a guard listed many times is printed (and compiled) once.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.export import Dim

import pt2format
from pt2format._api import read
from pt2f_samples import write_raw
from pt2format._generated import limits
from pt2format.errors import LimitError


class Halves(torch.nn.Module):
    def forward(self, x):
        return x.reshape(2, -1)


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    ep = torch.export.export(Halves(), (torch.randn(8, 3),), dynamic_shapes={"x": {0: 2 * Dim("d", min=2, max=20)}})
    path = tmp_path_factory.mktemp("count") / "halves.pt2f"
    pt2format.save(ep, path)
    return ep, path


def _repeated(src, dst, times: int, *, sources: int = 0):
    f = read(src)
    pkg = copy.deepcopy(f.package)
    data = [bytes(f.storage_view(i)) for i in range(len(pkg.storages))]
    f.close()
    prog = pkg.programs[0]
    assert prog.input_guards
    prog.input_guards = list(prog.input_guards) * times
    prog.guard_sources = list(prog.guard_sources) + [copy.copy(prog.guard_sources[0]) for _ in range(sources)]
    write_raw(dst, pkg, data)
    return dst


def test_too_many_input_guards_is_a_limit_error(halves, tmp_path):
    _, path = halves
    n = len(read(path).package.programs[0].input_guards)
    bad = _repeated(path, tmp_path / "many.pt2f", limits.MAX_INPUT_GUARDS // n + 1)
    for call in (pt2format.validate, pt2format.load, pt2format.load_module):
        with pytest.raises(LimitError, match="too many input_guards"):
            call(bad)


def test_too_many_guard_sources_is_a_limit_error(halves, tmp_path):
    _, path = halves
    bad = _repeated(path, tmp_path / "sources.pt2f", 1, sources=limits.MAX_GUARD_SOURCES)
    with pytest.raises(LimitError, match="too many guard_sources"):
        pt2format.validate(bad)


def test_a_repeated_guard_is_printed_once(halves, tmp_path):
    ep, path = halves
    n = len(read(path).package.programs[0].input_guards)
    many = _repeated(path, tmp_path / "repeated.pt2f", limits.MAX_INPUT_GUARDS // n)
    assert pt2format.load(many)._guards_code == pt2format.load(path)._guards_code
    with pytest.raises(AssertionError, match="Guard failed"):
        pt2format.load(many).module()(torch.randn(9, 3))


def test_native_readers_refuse_too_many_guards(halves, tmp_path):
    import native_util_cpp as U
    import native_util_ts as T

    _, path = halves
    n = len(read(path).package.programs[0].input_guards)
    bad = _repeated(path, tmp_path / "many.pt2f", limits.MAX_INPUT_GUARDS // n + 1)
    ran = 0
    if not T.missing_toolchain():
        T.build()
        r = T.ts_dump(bad)
        assert r.returncode != 0 and b"too many input_guards" in r.stderr, r.stderr
        ran += 1
    if not U.missing_toolchain():
        r = U.run(U.build("release") / "pt2f-dump", bad)
        err = r.stderr if isinstance(r.stderr, bytes) else r.stderr.encode()
        assert r.returncode != 0 and b"too many input_guards" in err, err
        ran += 1
    if not ran:
        pytest.skip("neither the C++ nor the TypeScript toolchain is installed")


@pytest.mark.parametrize("field", ["input_guards", "guard_sources.symbol"])
def test_guard_indices_are_the_validators(halves, tmp_path, field):
    """#43 §4: an index out of its table is a ValidationError from validation, for every entry point
    (loaders/_guards.py no longer checks it again with a LoadError)."""
    from pt2format.errors import ValidationError
    from pt2f_samples import write_raw

    _, path = halves
    f = read(path)
    pkg = copy.deepcopy(f.package)
    data = [bytes(f.storage_view(i)) for i in range(len(pkg.storages))]
    f.close()
    prog = pkg.programs[0]
    if field == "input_guards":
        prog.input_guards = [len(prog.sym_exprs) + 5]
    else:
        prog.guard_sources[0].symbol = len(prog.symbols) + 3
    bad = tmp_path / "index.pt2f"
    write_raw(bad, pkg, data)
    for call in (pt2format.validate, pt2format.load, pt2format.load_module):
        with pytest.raises(ValidationError, match=field.split(".")[0]):
            call(bad)
