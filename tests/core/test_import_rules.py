"""Who may import whom: the torch-free core, the shared torch vocabulary, the exporter and the loaders.

Read from the source (AST), every import statement, at any depth (a deferred
import inside a function counts as much as one at the top):

- the core (pt2format/ except vocab/ and the facade __init__.py) imports
  nothing from pt2format.exporter, pt2format.loaders or pt2format.vocab;
- the facades (pt2format/__init__.py, and pt2format/dcp.py, the
  torch.distributed.checkpoint plug-ins) reach the torch side only through the
  public names of pt2format.exporter and pt2format.loaders (no `_module`);
- pt2format.vocab imports nothing from the exporter or the loaders;
- the loaders import nothing from the exporter, and the exporter nothing
  from the loaders: what both need is in pt2format.vocab.

A new import that breaks a rule fails here with the file and line.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TORCH_SIDE = ("pt2format.exporter", "pt2format.loaders", "pt2format.vocab")
FACADES = ("pt2format/__init__.py", "pt2format/dcp.py")


def _package_of(rel: str) -> str:
    """The dotted package a source file belongs to (exporter/ and loaders/ live under pt2format's name)."""
    top, *rest = rel.split("/")
    base = {"pt2format": "pt2format", "exporter": "pt2format.exporter", "loaders": "pt2format.loaders"}[top]
    return ".".join([base, *rest[:-1]])


def _imports(rel: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file, relative imports resolved."""
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"), rel)
    package = _package_of(rel)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import sub` may import a submodule: count each name as pkg.name too.
            out += [(node.lineno, module)] + [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return out


def _files(top: str, *, skip: tuple[str, ...] = ()) -> list[str]:
    rels = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / top).rglob("*.py"))]
    return [r for r in rels if "/_generated/" not in r and "/cpp/" not in r and "/ts/" not in r
            and not r.startswith(skip)]


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(files, forbidden) -> list[str]:
    return sorted({f"{rel}:{line}: imports {mod}" for rel in files for line, mod in _imports(rel)
                   if _under(mod, forbidden)})


def test_the_core_imports_nothing_from_the_torch_side():
    core = _files("pt2format", skip=("pt2format/vocab/",) + FACADES)
    assert "pt2format/_open.py" in core and "pt2format/_api.py" in core  # the walk sees the core
    assert _violations(core, TORCH_SIDE) == []


def test_the_facade_uses_only_public_names_of_the_torch_side():
    bad = [f"{rel}:{line}: imports {mod}" for rel in FACADES for line, mod in _imports(rel)
           if _under(mod, TORCH_SIDE) and any(part.startswith("_") for part in mod.split(".")[2:])]
    assert bad == []


def test_the_vocabulary_imports_neither_direction():
    files = _files("pt2format/vocab")
    assert "pt2format/vocab/enums.py" in files
    assert _violations(files, ("pt2format.exporter", "pt2format.loaders")) == []


def test_loaders_and_exporter_do_not_import_each_other():
    loaders, exporter = _files("loaders"), _files("exporter")
    assert "loaders/_graph.py" in loaders and "exporter/_graph.py" in exporter
    assert _violations(loaders, ("pt2format.exporter",)) == []
    assert _violations(exporter, ("pt2format.loaders",)) == []


def test_the_rules_see_a_violation(tmp_path, monkeypatch):
    """The checker itself: a relative and an absolute forbidden import are both found."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "loaders").mkdir()
    (tmp_path / "loaders" / "_x.py").write_text(
        "def f():\n    from pt2format.exporter._graph import g\n\nfrom ..exporter import _values\n")
    assert _violations(["loaders/_x.py"], ("pt2format.exporter",)) == [
        "loaders/_x.py:2: imports pt2format.exporter._graph",
        "loaders/_x.py:2: imports pt2format.exporter._graph.g",
        "loaders/_x.py:4: imports pt2format.exporter",
        "loaders/_x.py:4: imports pt2format.exporter._values",
    ]
