"""The one table of generated files: output path -> emitter. Adding a target is one line.

An emitter takes the `Ctx` of one regeneration (the schema read from flatc's
binary schema, its Model view, the flatc version, a scratch directory, the
minor table) and returns the file's text, or, for a target ending in "/", a
dict of file name -> text for that directory (flatc's TypeScript module).
PYTHON_TARGETS are relative to the package root (the repo, or a scratch copy
for `regen.py --fbs X --out DIR`); REPO_TARGETS to the repo root.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codegen import container, cpp_strings, identifier_chars, fb_reader, fb_writer, json_codec, limits, minors, rules, msgpack_codec, native, py_model, strings, ts_strings, versions
from codegen.bfbs import FSchema, build_bfbs, flatc_version
from codegen.paths import FBS, ROOT
from codegen.schema_view import Model, header_line


@dataclass
class Ctx:
    """Everything an emitter may need, computed once per regeneration."""

    s: FSchema
    version: str  # flatc's
    tmp: Path
    fbs: Path
    schema_version: tuple
    minor_table: dict
    container: container.Table
    model: Model = field(init=False)

    def __post_init__(self):
        self.model = Model(self.s)

    @functools.cached_property
    def jsonschema(self) -> str:
        return native.gen_jsonschema(self.s, self.tmp, self.version, self.fbs)


def _py(generate):
    """A Python codec emitter (`generate(schema, model) -> str`) with the generated-file header line."""
    return lambda c: header_line("#", c.version) + generate(c.s, c.model)


PYTHON_TARGETS = {
    "pt2format/_generated/model.py": lambda c: py_model.gen_python_model(c.s, c.version),
    "pt2format/_generated/fb_reader.py": _py(fb_reader.generate),
    "pt2format/_generated/fb_writer.py": _py(fb_writer.generate),
    "pt2format/_generated/msgpack_codec.py": _py(msgpack_codec.generate),
    "pt2format/_generated/json_codec.py": _py(json_codec.generate),
    "pt2format/_generated/minors.py": lambda c: minors.gen_python_minors(c.schema_version, c.minor_table, c.version),
    "pt2format/_generated/container.py": lambda c: container.gen_python(c.container, c.version),
    "pt2format/_generated/string_check.py": _py(strings.generate_tree_check),
    "pt2format/_generated/limits.py": lambda c: limits.gen_python(c.s, header_line("#", c.version)),
    "pt2format/_generated/field_rules.py": lambda c: rules.gen_python(c.s, c.model, header_line("#", c.version)),
    "pt2format/_generated/identifier_chars.py": lambda c: identifier_chars.gen_python(header_line("#", c.version)),
    # A copy of the JSON Schema inside the package, so an installed pt2format can validate JSON.
    "pt2format/_generated/pt2format.schema.json": lambda c: c.jsonschema,
}

REPO_TARGETS = {
    "schema/pt2format.schema.json": lambda c: c.jsonschema,
    # SPEC.md §9's identifier table as data, the normative form readers in other languages take.
    "schema/identifiers.json": lambda c: identifier_chars.gen_json(c.version),
    "loaders/cpp/generated/pt2format_generated.h": lambda c: native.gen_cpp(c.tmp, c.version),
    "loaders/cpp/generated/pt2format_minors.h": lambda c: minors.gen_cpp_minors(c.schema_version, c.minor_table, c.version),
    "loaders/cpp/generated/pt2format_itemsize.h": lambda c: native.gen_cpp_itemsize(c.s, c.version),
    "loaders/cpp/generated/pt2format_strings.h": lambda c: cpp_strings.generate(c.s, c.model, header_line("//", c.version)),
    "loaders/cpp/generated/pt2format_container.h": lambda c: container.gen_cpp(c.container, c.version),
    "loaders/cpp/generated/pt2format_limits.h": lambda c: limits.gen_cpp(c.s, header_line("//", c.version)),
    "loaders/cpp/generated/pt2format_rules.h": lambda c: rules.gen_cpp(c.s, c.model, header_line("//", c.version)),
    "schema/FIELDS.md": lambda c: native.gen_fields_md(c.s, c.version, c.minor_table, c.schema_version) + limits.gen_spec_table(c.s),
    "schema/SPEC.md": lambda c: versions.spec(c.schema_version, c.container),
    "docs/versions.md": lambda c: versions.versions_page(c.schema_version),
    "loaders/ts/src/generated/": lambda c: native.gen_ts(c.tmp, c.version),
    "loaders/ts/src/generated/container.ts": lambda c: container.gen_ts(c.container, c.version),
    "loaders/ts/src/generated/minors.ts": lambda c: minors.gen_ts_minors(c.schema_version, c.minor_table, c.version),
    "loaders/ts/src/generated/itemsize.ts": lambda c: native.gen_ts_itemsize(c.s, c.version),
    "loaders/ts/src/generated/limits.ts": lambda c: limits.gen_ts(c.s, header_line("//", c.version)),
    "loaders/ts/src/generated/rules.ts": lambda c: rules.gen_ts(c.s, c.model, header_line("//", c.version)),
    "loaders/ts/src/generated/strings.ts": lambda c: ts_strings.generate(c.s, c.model, header_line("//", c.version)),
}

# Directories whose every file is generated (regen.py empties them first; --check flags strays).
GENERATED_DIRS = [t for t in REPO_TARGETS if t.endswith("/")]


def _expand(base: Path, targets: dict, ctx: Ctx, out: dict) -> None:
    for rel, emit in targets.items():
        text = emit(ctx)
        if rel.endswith("/"):
            for name, t in text.items():
                out[base / rel / name] = t
        else:
            out[base / rel] = text


def _newest_released_table(version: tuple[int, int]):
    """The container table frozen with the newest release of `version`'s major, if it has one."""
    import evolution

    from codegen.paths import HISTORY

    same = [(v, p) for v, p in evolution.history_versions(HISTORY) if v[0] == version[0] and v < version]
    path = container.table_path(same[-1][1]) if same else None
    return container.load(path) if path is not None and path.exists() else None


def generate_all(fbs: Path = FBS, root: Path = ROOT, python_only: bool = False) -> dict[Path, str]:
    """Every artifact of `fbs` by output path; `python_only` for the package's files only under `root`
    (a scratch schema, e.g. the test-only 1.1 extension generated under a copy of the package)."""
    version = flatc_version()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        s = build_bfbs(tmp, fbs)
        schema_version, minor_table = minors.schema_minors(tmp, s, fbs)
        table_file = container.table_path(fbs)
        table = container.load(table_file if table_file.exists() else container.table_path(FBS))
        container.check_since(table, schema_version, _newest_released_table(schema_version))
        ctx = Ctx(s, version, tmp, fbs, schema_version, minor_table, table)
        files: dict[Path, str] = {}
        _expand(root, PYTHON_TARGETS, ctx, files)
        if not python_only:
            _expand(ROOT, REPO_TARGETS, ctx, files)
    return files
