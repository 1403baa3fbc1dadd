"""Emits the artifacts of the other readers and of the spec: JSON Schema, C++ and TypeScript (flatc), element sizes, field tables."""

from __future__ import annotations

import json
from pathlib import Path

from codegen.bfbs import FSchema, run_flatc
from codegen.constants import INT_RANGES_BY_BASE, UTYPE
from codegen.paths import FBS
from codegen.schema_view import Model, header_line, scalar_type_itemsizes


def gen_cpp_itemsize(s: FSchema, version: str) -> str:
    sizes = scalar_type_itemsizes(s)
    out = [header_line("//", version)]
    out.append("// Bytes per element of each ScalarType value, from the schema's pt2f_itemsize attributes.\n"
               "#pragma once\n\n#include <cstddef>\n\n#include \"pt2format_generated.h\"\n\n"
               "namespace pt2f::generated {\n\n"
               "/// 0 for UNSPECIFIED and for values this schema does not define.\n"
               "inline size_t scalar_type_itemsize(pt2format::ScalarType dtype) {\n"
               "  switch (dtype) {\n")
    for name, size in sizes.items():
        out.append(f"    case pt2format::ScalarType::{name}: return {size};\n")
    out.append("    default: return 0;\n  }\n}\n\n}  // namespace pt2f::generated\n")
    return "".join(out)


def gen_ts_itemsize(s: FSchema, version: str) -> str:
    sizes = scalar_type_itemsizes(s)
    return (header_line("//", version)
            + "/** Bytes per element of each ScalarType value with data, by name (the schema's pt2f_itemsize). */\n"
            + "export const DTYPE_ITEMSIZE: Readonly<Record<string, number>> = Object.freeze("
            + json.dumps(sizes) + ");\n")


NON_FINITE = ["nan", "inf", "-inf"]


def _allow_non_finite(node):
    """Floats may be the strings nan/inf/-inf, flatc's JSON spelling of non-finite values, or
    "nan:0x<bits>" for a NaN other than the canonical one (SPEC.md §4; flatc does not read it)."""
    if isinstance(node, dict):
        if node.get("type") == "number":
            desc = node.get("description")
            new = {"anyOf": [{"type": "number"}, {"enum": NON_FINITE},
                             {"type": "string", "pattern": "^nan:0x[0-9a-f]{16}$"}]}
            if desc is not None:
                new["description"] = desc
            return new
        return {k: _allow_non_finite(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_allow_non_finite(v) for v in node]
    return node


def _allow_unknown_enum_values(doc: dict, s: FSchema) -> dict:
    """An enum may also be an integer of its underlying type: flatc writes a value unknown to
    its schema (one added by a newer minor version) as a JSON integer, and parses it back.

    flatc's schema lists only the names. Every enum-typed property and vector element refers
    to its enum's definition, so rewriting the definitions covers them all. Union type enums
    are left as names: a member unknown to this schema cannot be written either.
    """
    defs = doc["definitions"]
    for e in s.enums:
        key = e.name.replace(".", "_")
        if e.is_union or key not in defs:
            continue
        lo, hi = INT_RANGES_BY_BASE[e.underlying.base]
        names = defs[key]
        new = {"anyOf": [{"type": names["type"], "enum": names["enum"]},
                         {"type": "integer", "minimum": lo, "maximum": hi}]}
        if "description" in names:
            new["description"] = names["description"]
        defs[key] = new
    return doc


def _allow_unknown_fields(doc: dict, s: FSchema) -> dict:
    """A table may hold keys this schema does not define: a newer minor's fields, which a
    JSON reader ignores (SPEC.md section 8). Structs never grow, so they stay closed."""
    defs = doc["definitions"]
    for o in s.objects:
        d = defs.get(o.name.replace(".", "_"))
        if d is not None and not o.is_struct:
            d.pop("additionalProperties", None)
    return doc


def gen_jsonschema(s: FSchema, tmp: Path, version: str, fbs: Path = FBS) -> str:
    """flatc's JSON Schema, post-processed by _allow_non_finite, _allow_unknown_enum_values
    and _allow_unknown_fields."""
    run_flatc(["--jsonschema", "-o", str(tmp), str(fbs)], tmp)
    doc = json.loads((tmp / (fbs.stem + ".schema.json")).read_text())
    doc = _allow_non_finite(doc)
    doc = _allow_unknown_enum_values(doc, s)
    doc = _allow_unknown_fields(doc, s)
    doc = {"$comment": header_line("", version).strip(), **doc}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def gen_cpp(tmp: Path, version: str) -> str:
    run_flatc(["--cpp", "--cpp-std", "c++17", "--scoped-enums", "--reflect-names", "--no-emit-min-max-enum-values", "-o", str(tmp), str(FBS)], tmp)
    return header_line("//", version) + (tmp / "pt2format_generated.h").read_text()


def gen_ts(tmp: Path, version: str) -> dict[str, str]:
    out_dir = tmp / "ts"
    run_flatc(["--ts", "--ts-omit-entrypoint", "-o", str(out_dir), str(FBS)], tmp)
    files = {}
    for p in sorted(out_dir.rglob("*.ts")):
        files[str(p.relative_to(out_dir))] = header_line("//", version) + p.read_text()
    return files


def gen_fields_md(s: FSchema, version: str, minor_table: dict | None = None, schema_version=(1, 0)) -> str:
    """The field tables of the spec; `since` is each name's `pt2f_since` (regen checked it against
    schema/history/, schema/evolution.py check_since), and a declaration newer than X.0 says its own."""
    import evolution  # schema/evolution.py (schema/ is on sys.path: regen.py runs from it)

    m = Model(s)
    minor_table = minor_table or {}
    _, owners, _ = evolution.declared_minors(s, schema_version)

    def since(kind, owner, key):
        return f"{schema_version[0]}.{minor_table.get((kind, owner, key), 0)}"

    def declared(kind, name):
        minor = owners.get((kind, name), 0)
        return f"Since {schema_version[0]}.{minor} (`pt2f_since`).\n\n" if minor else ""

    out = [f"<!-- {header_line('', version).strip()} -->\n# Field tables\n\n"
           "Every table and struct of `schema/pt2format.fbs` with its fields, ids and defaults.\n"
           "Union fields occupy two ids: `<name>_type` (the member index) and `<name>`.\n"
           "`since` is the format version that first defined the name, as its `pt2f_since` attribute\n"
           "says (or its table's, enum's or union's; absent means X.0). regen.py refuses one that is not\n"
           "the first release under `schema/history/` that has the name, or the working schema's\n"
           "version for a name no release has (SPEC.md §8.5, schema/ATTRIBUTES.md).\n\n"]
    for o in s.objects:
        out.append(f"## {o.short}{' (struct)' if o.is_struct else ''}\n\n{' '.join(o.doc).strip()}\n\n"
                   + declared("struct" if o.is_struct else "table", o.short))
        if not o.fields:
            out.append("(no fields)\n\n")
            continue
        out.append("| id | field | type | default | since | meaning |\n|---|---|---|---|---|---|\n")
        for f in o.fields:
            if f.type.base == UTYPE:
                tname = "union type"
                default = "0"
            else:
                kind, elem, ref, default = m.field_spec(f)
                tname = {"scalar": elem, "enum": f"{ref} ({elem})", "string": "string", "table": ref,
                         "struct": ref, "union": f"union {ref}",
                         "vector": f"[{ref or elem}]"}[kind]
                default = "" if default is None else repr(default)
            doc = " ".join(f.doc).replace("|", "\\|").strip()
            out.append(f"| {f.id} | `{f.name}` | {tname} | {default} | {since('field', o.short, f.name)} | {doc} |\n")
        out.append("\n")
    for e in s.enums:
        out.append(f"## {'union ' if e.is_union else 'enum '}{e.short}\n\n{' '.join(e.doc).strip()}\n\n"
                   + declared("union" if e.is_union else "enum", e.short))
        out.append("| value | name | since | meaning |\n|---|---|---|---|\n")
        kind = "member" if e.is_union else "value"
        for v in e.values:
            out.append(f"| {v.value} | `{v.name}` | {since(kind, e.short, v.value)} | "
                       f"{' '.join(v.doc).replace('|', chr(92) + '|').strip()} |\n")
        out.append("\n")
    return "".join(out)


