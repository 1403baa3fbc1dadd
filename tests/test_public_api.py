"""The public API changes only on purpose: update these lists together with the changelog."""

import importlib
import importlib.util
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


# -- the generated stubs: what type checkers and editors read (scripts/gen_stubs.py) ----------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
#: Positional arguments that make a call of each stubbed function well formed, by table name.
CALLS = {
    "SAVE": "pt2format.save(ep, 'x.pt2f'", "LOAD": "pt2format.load('x.pt2f'",
    "LOAD_MODULE": "pt2format.load_module('x.pt2f'", "SAVE_WEIGHTS": "pt2format.save_weights({}, 'x.pt2f'",
    "ATTACH_WEIGHTS": "pt2format.attach_weights(ep, 'x.pt2f'", "READ": "pt2format.read('x.pt2f'",
    "OPEN": "pt2format.open('x.pt2f'", "VALIDATE": "pt2format.validate('x.pt2f'",
    "FROM_TORCH": "pt2format.from_torch('x.pt2', 'x.pt2f'", "TO_TORCH": "pt2format.to_torch('x.pt2f', 'x.pt2'",
    "DCP_READER": "pt2format.dcp.StorageReader('x.pt2f'", "DCP_WRITER": "pt2format.dcp.StorageWriter('x.pt2f'",
}


def _gen_stubs():
    spec = importlib.util.spec_from_file_location("gen_stubs", ROOT / "scripts" / "gen_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stubs_are_generated_from_the_options_tables():
    """pt2format/__init__.pyi and dcp.pyi are what scripts/gen_stubs.py writes today (an option added, renamed or
    retyped in pt2format/_options.py without regenerating fails here)."""
    gen = _gen_stubs()
    for rel, make in gen.STUBS.items():
        assert (ROOT / rel).read_text(encoding="utf-8") == make(), f"{rel} is stale: run python scripts/gen_stubs.py"
    assert set(CALLS) == set(gen.FUNCTIONS.values()) | set(gen.DCP_CLASSES.values())


def _free_names(code: str) -> set:
    """Names a page reads before it binds them (the documents' ``ep``, ``model``, ...), builtins aside."""
    import ast
    import builtins

    first_read, first_bound = {}, {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            where = first_read if isinstance(node.ctx, ast.Load) else first_bound
            where[node.id] = min(where.get(node.id, node.lineno), node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                first_bound[(a.asname or a.name).split(".")[0]] = 0  # imports: never declared
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first_bound[node.name] = 0
        elif isinstance(node, ast.arg):
            first_bound[node.arg] = 0
    return {n for n, line in first_read.items()
            if line < first_bound.get(n, 1 << 30) and first_bound.get(n) != 0 and n not in dir(builtins)}


def _doc_examples():
    """The Python blocks of the README and docs/*.md, one module per page (a page's blocks run in order)."""
    import re

    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    for page in pages:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
        if blocks:
            yield page.relative_to(ROOT), "\n".join(blocks)


def test_mypy_checks_the_examples_and_rejects_misspelled_options(tmp_path):
    """One mypy run: every example of the README and docs type-checks against the stubs; a script calling every
    public function and DCP class with each option misspelled, or with a value outside an option's type, gets
    an error on each of those lines, and one calling each with every option at its default gets none."""
    from pt2format import _options

    examples = list(_doc_examples())
    assert len(examples) >= 4, examples
    for i, (page, code) in enumerate(examples):
        free = sorted(_free_names(code))
        preamble = "from typing import Any\n" + "".join(f"{n}: Any = None\n" for n in free)
        (tmp_path / f"example_{i}.py").write_text(f"# {page}\n" + preamble + code, encoding="utf-8")

    lines, bad = ["from typing import Any", "import pt2format", "import pt2format.dcp", "ep: Any"], {}
    for table, call in CALLS.items():
        options = getattr(_options, table).options
        lines.append(call + "".join(f", {o.name}={o.default!r}" for o in options) + ")")  # every default: fine
        for o in options:  # the last letter dropped: a misspelling the run-time check catches, mypy must too
            lines.append(f"{call}, {o.name[:-1]}={o.default!r})")
            bad[len(lines)] = f"{table}: {o.name[:-1]}"
    for wrong in ("pt2format.save(ep, 'x.pt2f', encoding='jsn')", "pt2format.open('x.pt2f', framework='tf')",
                  "pt2format.load('x.pt2f', verify_data='yes')", "pt2format.read('x.pt2f', max_depth='9')"):
        lines.append(wrong)
        bad[len(lines)] = wrong
    (tmp_path / "misspelled.py").write_text("\n".join(lines) + "\n", encoding="utf-8")

    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / ".mypy_cache"), "--no-error-summary",
                           "--show-error-codes", "--disable-error-code", "var-annotated", *sorted(p.name for p in tmp_path.glob("*.py"))],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    errors = [ln for ln in proc.stdout.splitlines() if ": error: " in ln]
    assert not proc.stderr.strip(), proc.stderr[-3000:]
    in_examples = [e for e in errors if e.startswith("example_")]
    assert not in_examples, "\n".join(in_examples)
    flagged = {int(e.split(":")[1]) for e in errors if e.startswith("misspelled.py:")}
    assert flagged == set(bad), ({bad[n] for n in set(bad) - flagged}, sorted(flagged - set(bad)), proc.stdout[-3000:])
    assert not [e for e in errors if not e.startswith(("example_", "misspelled.py:"))], proc.stdout[-3000:]
