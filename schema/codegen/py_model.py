"""Emits pt2format/_generated/model.py: annotated model classes, enums, union member lists, FIELDS tables."""

from __future__ import annotations

from codegen.bfbs import FObject, FSchema
from codegen.constants import STRUCT_FMT, UTYPE
from codegen.schema_view import Model, header_line, scalar_type_itemsizes

def _py_doc(lines: list[str], indent: str) -> str:
    text = " ".join(l.strip() for l in lines).strip()
    if not text:
        return ""
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    return f'{indent}"""{text}"""\n'




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
    m = Model(s)
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


