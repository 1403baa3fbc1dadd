"""Generates pt2format/_generated/fb_writer.py: one specialized FlatBuffers write function per table.

Called through schema/codegen/targets.py (`generate(schema, model) -> str`). flatbuffers.Builder costs
~190 us per node; the generated functions read each field once, write children
first (back to front, as flatbuffers' Builder does), look the table's inline
layout up by which fields are present (cached per table type), and pack the
table in one `struct.pack`. Integers and floats are checked before they are
marked present, vectors of scalars when struct.pack refuses them; each table
function notes its field on an error passing through (schema/codegen/trail.py),
from which pt2format/_codecs/flatbuffers.py names the field path.
"""

from __future__ import annotations

import math
import struct

from codegen.constants import FLOATS, FMT, INT_RANGES, SIZE, UTYPE, struct_align as _struct_align, struct_fmt as _struct_fmt
from codegen.fb_reader import shared_heights
from codegen.strings import model_imports
from codegen.templates import render
from codegen.trail import marker, wrap_since


def generate(schema, m) -> str:
    structs = {o.short: o for o in schema.objects if o.is_struct}
    tables = [o for o in schema.objects if not o.is_struct]
    unions = {e.short: [m.obj_name(v.union_type.index) for v in e.values if v.value != 0]
              for e in schema.enums if e.is_union}
    out = []
    w = out.append
    w(render("fb_writer_head.py.tmpl", model_imports=model_imports(sorted(o.short for o in schema.objects)),
             ident=schema.file_ident))
    for name, o in sorted(structs.items()):
        w(f"_ST_{name} = struct.Struct({_struct_fmt(o)!r}).pack\n")
    w("\n\n")
    for o in tables:
        fields = _layout_fields(o, m, structs)
        w(f"_F_{o.short} = {tuple((sl, sz, al, fm) for sl, sz, al, fm, _ in fields)!r}\n")
    w("\n\n")
    w(render("fb_writer_encode.py.tmpl"))
    shared = shared_heights(schema, m)
    for o in tables:
        _gen_table(w, o, m, structs, unions, o.short in shared)
        if o.short in shared:
            _gen_shared(w, o.short)
    for u, members in sorted(unions.items()):
        w(f"    UW_{u} = (None, {', '.join('w_' + x for x in members)},)\n")
        w(f"    UI_{u} = {{{', '.join(f'{x}: {i + 1}' for i, x in enumerate(members))}}}\n")
    w(render("fb_writer_finish.py.tmpl", root=schema.root.short))
    return "".join(out)


def _gen_shared(w, name):
    """w_<name> for a pt2f_shared table: an object written before is referenced again (its budget counted again)."""
    w(f"    sh_{name} = {{}}  # id(object) -> (its position, what a reader spends on it, the object: its id stays its own)\n\n")
    w(f"    def w_{name}(o):\n")
    w("        nonlocal spent, reused\n")
    w(f"        h = sh_{name}.get(id(o))\n")
    w("        if h is not None:\n            spent += h[1]\n            reused = True\n            return h[0]\n")
    w("        s0 = spent\n")
    w(f"        d = w_{name}_body(o)\n")
    w(f"        if share:\n            sh_{name}[id(o)] = (d, spent - s0, o)\n")
    w("        return d\n\n")


def _layout_fields(o, m, structs):
    """(slot, size, align, fmt, field) of a table's inline fields, in layout order."""
    items = []
    for f in sorted(o.fields, key=lambda f: f.id):
        if f.deprecated:
            continue
        if f.type.base == UTYPE:
            items.append((f.id, 1, 1, "B", f))
            continue
        kind, elem, ref, _ = m.field_spec(f)
        if kind in ("scalar", "enum"):
            items.append((f.id, SIZE[elem], SIZE[elem], FMT[elem], f))
        elif kind == "struct":
            so = structs[ref]
            items.append((f.id, so.bytesize, _struct_align(so), _struct_fmt(so)[1:], f))
        else:
            items.append((f.id, 4, 4, "I", f))
    # Stable sort by alignment, descending (then slot): the bytes every earlier pt2format writer produced.
    return sorted(items, key=lambda x: -x[2])


def _default_test(var, kind, elem, default):
    """An expression true when `var` must be written (differs from the default bit for bit)."""
    if kind == "scalar" and elem in ("float32", "float64"):
        if default == 0.0 and math.copysign(1.0, default) > 0:
            return f"{var} or copysign(1.0, {var}) < 0.0"
        return f"struct.pack('<d', {var}) != {struct.pack('<d', default)!r}"
    return f"{var} != {default!r}"


def _gen_table(w, o, m, structs, unions, shared=False):
    name = o.short
    layout = _layout_fields(o, m, structs)
    bit = {f.id: i for i, (_, _, _, _, f) in enumerate(layout)}
    w(f"    L_{name} = {{}}\n\n")
    start = len(w.__self__)
    w(f"    def w_{name}{'_body' if shared else ''}(o):\n")
    w("        nonlocal size, spent\n        spent += 4\n")
    w(f"        if type(o) is not {name}:\n            _bad('wrong table type, expected {name}', type(o).__name__)\n")
    w("        mk = 0\n")
    present = {}  # field id -> (value variable, presence test for the value list)
    for f in sorted(o.fields, key=lambda f: f.id):
        if f.deprecated or f.type.base == UTYPE:
            continue
        kind, elem, ref, default = m.field_spec(f)
        i = f.id
        x = f"x{i}"
        w(marker(f.name, "        ", x if kind == "vector" and elem in ("table", "struct") else None))
        w(f"        {x} = o.{f.name}\n")
        if kind in ("scalar", "enum"):
            if elem == "bool":
                w(f"        if {x} is not {default!r}:\n")
                w(f"            if {x} is not {not default!r}:\n                _check_bool({x})\n")
                w(f"            mk |= {1 << bit[i]}\n")
            elif elem in FLOATS:
                w(f"        if type({x}) is not float:\n            {x} = _check_float({x})\n")
                w(f"        if {_default_test(x, kind, elem, default)}:\n            mk |= {1 << bit[i]}\n")
            else:
                lo, hi = INT_RANGES[elem]
                w(f"        if {_default_test(x, kind, elem, default)}:\n")
                w(f"            if type({x}) is not int or not {lo} <= {x} <= {hi}:\n"
                  f"                {x} = _check_int({x}, {lo}, {hi}, {elem!r})\n")
                w(f"            mk |= {1 << bit[i]}\n")
            present[i] = (x, "scalar")
        elif kind == "struct":
            so = structs[ref]
            w(f"        if {x} is not None:\n")
            w(f"            if type({x}) is not {ref}:\n                _bad('wrong struct type, expected {ref}', type({x}).__name__)\n")
            w(f"            mk |= {1 << bit[i]}\n")
            present[i] = (x, "struct", [sf.name for sf in sorted(so.fields, key=lambda sf: sf.offset)])
        elif kind == "union":
            w(f"        if {x} is not None:\n")
            w(f"            t{i} = UI_{ref}.get(type({x}))\n")
            w(f"            if t{i} is None:\n                _bad('not a member of the union {ref}', type({x}).__name__)\n")
            w(f"            {x} = UW_{ref}[t{i}]({x})\n")
            w(f"            mk |= {(1 << bit[i - 1]) | (1 << bit[i])}\n")
            present[i - 1] = (f"t{i}", "scalar")
            present[i] = (x, "offset")
        else:
            test = f"{x} is not None" if kind in ("string", "table") else x
            w(f"        if {test}:\n")
            if kind == "string":
                w(f"            {x} = sget({x}) or S({x})\n")
            elif kind == "table":
                w(f"            {x} = w_{ref}({x})\n")
            else:
                _gen_vector(w, x, elem, ref, structs)
            w(f"            mk |= {1 << bit[i]}\n")
            if f.required:
                w(f"        else:\n            _bad('required field {f.name} is missing')\n")
            present[i] = (x, "offset")
    w("        f_ = None\n")  # packing: a value left unchecked here is a struct's (the path names its table)
    # L: the layout of this table with these fields, and (once one such table is written) where its vtable is;
    # vtables are shared by their bytes, so the position found first stays right for the whole encode.
    w(f"        L = L_{name}.get(mk)\n        if L is None:\n            L = L_{name}[mk] = _layout_entry(_F_{name}, mk)\n")
    w("        pks, offs, osz, al, vtb, vd = L\n")
    w("        pad = -(size + osz) % al\n        t = size + pad + osz\n")
    w("        if vd is None:\n            vd = vget(vtb)\n            if vd is None:\n"
      "                vd = vtables[vtb] = t + len(vtb)\n            L[5] = vd\n")
    args = ["vd - t"]  # every inline field in layout order; an absent one packs E into "0s" (see _layout_entry)
    for slot, _, _, _, f in layout:
        var, how = present[slot][:2]
        b = 1 << bit[slot]
        if how == "scalar":
            args.append(f"{var} if mk & {b} else E")
        elif how == "struct":
            args += [f"{var}.{n} if mk & {b} else E" for n in present[slot][2]]
        else:
            args.append(f"t - offs[{slot}] - {var} if mk & {b} else E")
    w("        app(pks[pad](\n            " + ",\n            ".join(args) + "))\n")
    # A vtable written before lies below the table; a new one follows it.
    w("        if vd > t:\n            app(vtb)\n            size = vd\n"
      "        else:\n            size = t\n        return t\n")
    wrap_since(w, start, "        ", "o", errors="_ENCODE_ERRORS")


def _gen_vector(w, x, elem, ref, structs):
    ind = "            "
    if elem == "string":
        w(f"{ind}{x} = OV([sget(e) or S(e) for e in {x}])\n")
    elif elem == "table":
        w(f"{ind}{x} = OV([w_{ref}(e) for e in {x}])\n")
    elif elem == "struct":
        so = structs[ref]
        names = [sf.name for sf in sorted(so.fields, key=lambda sf: sf.offset)]
        # A vector of structs is packed once per list object (the tree is not changed while it is encoded; the
        # exporter shares one TensorMeta, hence its sizes and strides, among the values of one shape).
        w(f"{ind}h_ = bget(id({x}))\n{ind}if h_ is None or h_[0] is not {x}:\n")
        # Kept as one chunk, the count then the packed elements (BVC), with the body's length.
        w(f"{ind}    b_ = b''.join([_ST_{ref}({', '.join('e.' + n for n in names)}) for e in {x}])\n")
        w(f"{ind}    h_ = bodies[id({x})] = ({x}, _U32(len({x})) + b_, len(b_))\n")
        w(f"{ind}{x} = BVC(h_[1], h_[2], {max(_struct_align(so), 4)}, len({x}))\n")
    elif elem == "uint8":
        w(f"{ind}{x} = BV(bytes({x}), len({x}), 4)\n")
    else:
        sc = elem.split(":", 1)[-1]
        if sc == "bool":
            w(f"{ind}if not all(type(e) is bool for e in {x}):\n{ind}    _check_each({x}, _check_bool)\n")
        w(f"{ind}try:\n{ind}    b_ = struct.pack('<%d{FMT[sc]}' % len({x}), *{x})\n")
        w(f"{ind}except (struct.error, TypeError, OverflowError):\n")
        if sc in FLOATS:
            w(f"{ind}    _check_each({x}, _check_float)\n")
        elif sc != "bool":
            lo, hi = INT_RANGES[sc]
            w(f"{ind}    _check_ints({x}, {lo}, {hi}, {sc!r})\n")
        w(f"{ind}    raise\n")
        w(f"{ind}{x} = BV(b_, len({x}), {max(SIZE[sc], 4)})\n")
