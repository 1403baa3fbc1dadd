"""Each public function's options are defined once (pt2format/_options.py) and reach every place from there.

The public signature, the docstring and the implementation's defaults must
all agree with the table; an unknown keyword is refused by the public
function's own name, as Python would; and the table refuses an
implementation that lacks an option or writes its default again.
"""

from __future__ import annotations

import inspect

import pytest

import pt2format
from pt2format import _options

PUBLIC = {
    "save": (_options.SAVE, "pt2format.exporter._save", "save_programs"),
    "save_weights": (_options.SAVE_WEIGHTS, "pt2format.exporter._save", "save_weights"),
    "load": (_options.LOAD, "pt2format.loaders._load", "load_program"),
    "load_module": (_options.LOAD_MODULE, "pt2format.loaders._module", "load_module"),
    "attach_weights": (_options.ATTACH_WEIGHTS, "pt2format.loaders._weights", "attach_weights"),
    "from_torch": (_options.FROM_TORCH, "pt2format._interop", "from_torch"),
    "to_torch": (_options.TO_TORCH, "pt2format._interop", "to_torch"),
}


def _keyword_defaults(fn) -> dict:
    return {p.name: p.default for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_signature_docs_and_implementation_agree(name):
    import importlib

    table, module, impl_name = PUBLIC[name]
    public = getattr(pt2format, name)
    impl = getattr(importlib.import_module(module), impl_name)
    shown = _keyword_defaults(public)
    assert list(shown) == list(table.names)
    assert shown == table.defaults()
    # what the implementation really uses when the caller gives nothing: Python's own kwdefaults
    assert {k: v for k, v in impl.__kwdefaults__.items() if k in shown} == shown
    for option in table.names:
        assert f"\n        {option}: " in public.__doc__, (name, option)


def test_open_agrees_with_its_table():
    from pt2format._open import LazyFile

    assert _keyword_defaults(pt2format.open) == _options.OPEN.defaults()
    # LazyFile is built only by pt2format.open, which passes every option: it takes them all, without defaults
    assert set(_options.OPEN.names) <= set(_keyword_defaults(LazyFile.__init__))
    assert not set(_options.OPEN.names) & set(LazyFile.__init__.__kwdefaults__ or {})


CALLS = {
    "save": lambda **kw: pt2format.save(None, "unused.pt2f", **kw),
    "load": lambda **kw: pt2format.load(b"", **kw),
    "open": lambda **kw: pt2format.open(b"", **kw),
    "attach_weights": lambda **kw: pt2format.attach_weights(None, {}, **kw),
    "from_torch": lambda **kw: pt2format.from_torch(b"", "unused.pt2f", **kw),
    "to_torch": lambda **kw: pt2format.to_torch(b"", "unused.pt2", **kw),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_unknown_option_is_refused_by_the_public_name(name):
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'no_such_option'"):
        CALLS[name](no_such_option=1)


def test_positional_parameters_may_still_be_given_by_name(tmp_path):
    with pytest.raises(pt2format.FormatError):
        pt2format.load(f=b"not a pt2f file", weights=False)
    assert pt2format.open(f=_tiny_file(tmp_path), framework="np").programs() == ["forward"]


def _tiny_file(tmp_path):
    import pt2f_samples
    from pt2format._api import write_package

    path = tmp_path / "tiny.pt2f"
    write_package(path, pt2f_samples.tiny_package((3, 5)), pt2f_samples.float_payloads((3, 5)), fsync=False)
    return path


def test_table_refuses_an_implementation_that_drifts():
    table = _options.Options(_options.Option("a", 1, "int", "doc"), _options.Option("b", 2, "int", "doc"))

    def missing(x, *, a):
        pass

    def respelled(x, *, a=1, b):
        pass

    def extra(x, *, a, b, c):
        pass

    for fn in (missing, respelled, extra):
        with pytest.raises(TypeError, match="does not match its options table"):
            table.implements(fn)

    def fine(x, *, a, b, internal=None):
        return a, b, internal

    assert table.implements(fine)(0) == (1, 2, None)


def test_lends_gives_a_few_defaults_and_refuses_one_written_again():
    table = _options.Options(_options.Option("a", 1, "int", "doc"), _options.Option("b", 2, "int", "doc"))

    @table.lends("a")
    def inner(x, *, a, b):
        return a, b

    assert inner(0, b=5) == (1, 5)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'b'"):
        inner(0)

    def respelled(x, *, a=1):
        pass

    def positional(x, a):
        pass

    for fn in (respelled, positional):
        with pytest.raises(TypeError, match=r"\['a'\] must be keyword-only parameters without a default"):
            table.lends("a")(fn)


# Functions under the public ones that other modules and tests call with options left out: their defaults are
# the public function's (Python's own kwdefaults, what a call without the option really uses).
LENT = {
    ("pt2format._api", "write_package"): (_options.SAVE, ("encoding", "fsync", "max_shard_size")),
    ("pt2format._api", "convert"): (_options.SAVE, ("fsync",)),
    ("pt2format._api", "read"): (_options.READ, _options.READ.names),
    ("pt2format.loaders._weights", "read_weights"): (
        _options.ATTACH_WEIGHTS, ("program", "weight_set", "map_location", "copy", "allow_subclasses", "mmap")),
    ("pt2format.exporter._program", "export_package"): (_options.SAVE, ("example_inputs", "weight_sets")),
}


@pytest.mark.parametrize("module,name", sorted(LENT))
def test_inner_functions_take_the_public_defaults(module, name):
    import importlib

    table, names = LENT[module, name]
    fn = getattr(importlib.import_module(module), name)
    assert {k: fn.__kwdefaults__[k] for k in names} == {k: table.defaults()[k] for k in names}


def test_the_layers_under_write_package_take_fsync_from_their_caller():
    from pt2format import _target
    from pt2format._container import writer

    for fn in (writer.write_container, writer.write_container_data_first, writer.atomic_write,
               _target.write_target, _target.write_path_data_first):
        assert "fsync" not in (fn.__kwdefaults__ or {}), fn.__qualname__
        with pytest.raises(TypeError, match="required keyword-only argument"):
            fn(*[None] * fn.__code__.co_argcount)


def test_dcp_reader_and_writer_agree_with_their_tables():
    from pt2format import dcp

    for cls, table in ((dcp.StorageReader, _options.DCP_READER), (dcp.StorageWriter, _options.DCP_WRITER)):
        assert _keyword_defaults(cls) == table.defaults()
        for option in table.names:
            assert f"\n        {option}: " in cls.__doc__, (cls, option)
    assert _options.DCP_WRITER.defaults()["fsync"] is _options.SAVE.defaults()["fsync"] is True
    assert _options.DCP_WRITER.defaults()["encoding"] == _options.SAVE.defaults()["encoding"] == "flatbuffers"
