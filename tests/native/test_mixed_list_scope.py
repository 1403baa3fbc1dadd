"""The items of a 1.1 MixedListArgument are in their graph's scope, in all three readers.

Every other argument kind that names a value is checked against the graph's
declarations; a MixedListArgument item was not (each item is a whole
Argument, which the readers' scope walk skipped), so a file naming an
undeclared tensor there passed validation. The invalid corpus holds the case
(`mixed_list_item_undeclared-*`, tagged with its class from SPEC.md §7); this
test holds the three readers to the same place, the item's name.
"""

from __future__ import annotations

import pytest

from conformance import make_invalid as M
from pt2format._generated import model as m

_PATH = "programs[0].graph.nodes[0].inputs[0].value.items[{i}].value{tail}"


def _nested(p):
    """Node input 0 as a MixedListArgument holding a MixedListArgument whose second item is undeclared."""
    p.format_version.minor = 1
    inp = p.programs[0].graph.nodes[0].inputs[0]
    inner = m.MixedListArgument(items=[m.Argument(value=m.IntArgument(value=3)),
                                       m.Argument(value=m.TensorArgument(name="nowhere"))])
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value), m.Argument(value=inner)])


def _flat(p):
    p.format_version.minor = 1
    inp = p.programs[0].graph.nodes[0].inputs[0]
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value),
                                           m.Argument(value=m.SymIntArgument(name="u_nowhere"))])


CASES = {
    "flat_symint": (_flat, _PATH.format(i=1, tail=".name")),
    "nested_tensor": (_nested, _PATH.format(i=1, tail=".items[1].value.name")),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("mixed_list_scope")
    out = {}
    for key, (mutate, path) in CASES.items():
        for enc in M.ENCODINGS:
            f = d / f"{key}-{enc}.pt2f"
            f.write_bytes(M.tree_file("mlp", enc, mutate))
            out[(key, enc)] = (f, path)
    return out


def test_python_reader(files):
    import pt2format
    from pt2format.errors import ValidationError

    for (key, enc), (file, path) in files.items():
        with pytest.raises(ValidationError) as e:
            pt2format.validate(file)
        assert e.value.path == path, (key, enc)
        assert "is not declared in this graph" in str(e.value), (key, enc, str(e.value))


@pytest.mark.native
def test_cpp_reader(files):
    import native_util_cpp as U

    why = U.missing_toolchain()
    if why:
        pytest.fail(f"C++ toolchain missing: {why}")
    build = U.build("release")
    for (key, enc), (file, path) in files.items():
        code, line, found = U.error_at(build, file)
        assert code == U.EXIT_BAD_FILE and "ValidationError" in line, (key, enc, line)
        assert found == path, (key, enc, line)


@pytest.mark.native
def test_ts_reader(files):
    import native_util_ts as U

    why = U.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader needs Node.js: {why}")
    U.build()
    by_file = U.errors_at([f for f, _ in files.values()])
    for (key, enc), (file, path) in files.items():
        error, found, r = by_file[str(file)]
        assert error == "ValidationError" and found == path, (key, enc, r)
