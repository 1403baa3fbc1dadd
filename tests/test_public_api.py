"""The public API changes only on purpose: update these lists together with the changelog."""

import importlib
import subprocess
import sys

PT2FORMAT = {
    "save", "load", "load_module", "read", "open", "validate", "from_torch", "to_torch", "save_weights", "attach_weights",
    "FORMAT_VERSION", "__version__", "LazyFile", "PackageFile", "FallbackWarning", "OpsetWarning",
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError",
    "EncodingError", "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "StringClassError",
    "ExportError", "LoadError", "ProgramNotFoundError", "TorchArchiveError", "MissingDependencyError",
}

NOT_ERRORS = {"save", "load", "load_module", "read", "open", "validate", "from_torch", "to_torch", "save_weights", "attach_weights",
              "FORMAT_VERSION", "__version__",
              "LazyFile", "PackageFile", "FallbackWarning", "OpsetWarning"}


def test_pt2format_exports():
    import pt2format

    assert set(pt2format.__all__) == PT2FORMAT
    for name in PT2FORMAT:
        assert hasattr(pt2format, name), name


def test_errors_form_one_hierarchy():
    import pt2format

    for name in PT2FORMAT - NOT_ERRORS:
        assert issubclass(getattr(pt2format, name), pt2format.Pt2FormatError), name
    for name in ("FormatError", "ValidationError"):
        assert issubclass(getattr(pt2format, name), ValueError), name


def test_errors_are_caught_where_torchs_and_safetensors_are():
    """Issue 25, rough edge 9: each error also derives from the builtin a caller of the library it stands in for
    already catches (docs/errors.md): torch.export.load/save raise SerializeError, a RuntimeError; a missing
    module is an ImportError; bad bytes are ValueErrors as msgpack's are."""
    import msgpack
    from torch._export.serde.serialize import SerializeError

    import pt2format

    torch_base = next(b for b in SerializeError.__mro__ if b.__module__ == "builtins")
    for name in ("LoadError", "VersionError", "UnsupportedFeatureError", "ExportError"):
        assert issubclass(getattr(pt2format, name), torch_base), name
    bad_bytes_base = next(b for b in msgpack.exceptions.ExtraData.__mro__ if b.__module__ == "builtins")
    for name in ("FormatError", "ValidationError", "HeaderError", "ChecksumError", "StringClassError"):
        assert issubclass(getattr(pt2format, name), bad_bytes_base), name
    try:
        import importlib

        importlib.import_module("pt2f_no_such_module")
    except ImportError as e:
        assert isinstance(pt2format.MissingDependencyError("x", extra="torch", module="torch"), type(e).__mro__[1])


def test_import_does_not_import_torch():
    code = "import sys, pt2format, pt2format.cli; assert 'torch' not in sys.modules, 'torch imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_exporter_and_loader_exports():
    exporter = importlib.import_module("pt2format.exporter")
    loaders = importlib.import_module("pt2format.loaders")
    assert "export_program" in exporter.__all__ and "save_programs" in exporter.__all__
    assert "load_program" in loaders.__all__ and "attach_weights" in loaders.__all__
    assert "save_weights" in exporter.__all__


def test_public_functions_are_documented_and_annotated():
    """Every public function has a real docstring, keyword-only options and a return annotation."""
    import inspect

    import pt2format

    for name in ("save", "load", "read", "open", "validate", "from_torch", "to_torch"):
        fn = getattr(pt2format, name)
        doc = inspect.getdoc(fn) or ""
        assert len(doc.splitlines()) >= 3, name
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, name
        params = list(sig.parameters.values())
        assert all(p.kind is p.KEYWORD_ONLY for p in params[2 if name in ("save", "from_torch", "to_torch") else 1:]), name
    for cls in (pt2format.LazyFile, pt2format.PackageFile):
        for attr, member in vars(cls).items():
            if not attr.startswith("_") and callable(member):
                assert inspect.getdoc(member), f"{cls.__name__}.{attr}"


def test_fallback_warning_is_a_user_warning():
    import pt2format

    assert issubclass(pt2format.FallbackWarning, UserWarning)


def test_schema_module_is_public():
    import pt2format.schema as schema

    assert schema.Package.__name__ == "Package" and schema.ScalarType.FLOAT32 == 7


def test_schema_classes_carry_resolvable_type_annotations():
    import typing

    import pt2format.schema as schema

    for name, cls in schema.TABLES.items():
        hints = typing.get_type_hints(cls)
        assert set(cls.__slots__) <= set(hints), name
        assert typing.get_type_hints(cls.__init__)["return"] is type(None), name


def test_dcp_is_reached_from_the_package_as_the_readme_writes_it():
    """`import pt2format` then `pt2format.dcp.StorageReader` (README): the plug-ins load on first use only."""
    import subprocess
    import sys

    code = ("import sys, pt2format; assert 'torch.distributed.checkpoint' not in sys.modules; "
            "from torch.distributed.checkpoint import StorageReader; "
            "assert issubclass(pt2format.dcp.StorageReader, StorageReader)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
