"""Generates pt2format/_generated/msgpack_codec.py: per-table functions between model objects and MSGPACK arrays.

Called through schema/codegen/targets.py (`generate(schema, model) -> str`). msgpack's C extension
packs and unpacks the positional arrays (SPEC.md section 4) in a few ms; the
generated functions do the rest, one per table: on encode they turn an object
into its array (None for absent or default fields, trailing None dropped),
checking each value's type and range; on decode they check every element of
an unpacked array and call the model constructor. Each function notes its
field on an error passing through (schema/codegen/trail.py), from which the
caller, pt2format/_codecs/msgpack.py, names the field path.
"""

from __future__ import annotations

import math

from codegen.constants import INT_RANGES, UTYPE, lit as _lit
from codegen.limits import read_limits
from codegen.strings import model_imports, string_check, string_check_all, string_check_imports
from codegen.templates import render
from codegen.trail import marker, wrap_since


def generate(schema, m) -> str:
    structs = {o.short: o for o in schema.objects if o.is_struct}
    unions = {e.short: [m.obj_name(v.union_type.index) for v in e.values if v.value != 0]
              for e in schema.enums if e.is_union}
    out = []
    w = out.append
    w(render("msgpack_codec_head.py.tmpl", model_imports=model_imports(sorted(o.short for o in schema.objects)),
             string_checks=string_check_imports()))
    _gen_encoders(w, schema, m, structs, unions)
    _gen_decoders(w, schema, m, structs, unions)
    return "".join(out)


# ---------------------------------------------------------------------------
# model -> arrays
# ---------------------------------------------------------------------------

def _gen_encoders(w, schema, m, structs, unions):
    for name, o in sorted(structs.items()):
        fs = sorted(o.fields, key=lambda f: f.id)
        start = len(w.__self__)
        w(f"def _es_{name}(o):\n")
        w(f"    if type(o) is not {name}:\n        _bad('wrong struct type, expected {name}', type(o).__name__)\n")
        for f in fs:
            kind, elem, ref, default = m.field_spec(f)
            x = f"o.{f.name}"
            w(marker(f.name, "    "))
            w(_scalar_check(f"x{f.id}", x, elem, "    ", encode=True))
        w(f"    return [{', '.join(f'x{f.id}' for f in fs)}]\n")
        wrap_since(w, start, "    ", "o", errors="_ENCODE_ERRORS")
        w("\n")
    w("def encode_tree(root):\n")
    w('    """The array tree of a Package, ready for msgpack.packb(use_bin_type=True)."""\n\n')
    for o in schema.objects:
        if o.is_struct:
            continue
        name = o.short
        fs = sorted(o.fields, key=lambda f: f.id)
        k = max((f.id for f in fs), default=-1) + 1
        start = len(w.__self__)
        w(f"    def e_{name}(o):\n")
        w(f"        if type(o) is not {name}:\n            _bad('wrong table type, expected {name}', type(o).__name__)\n")
        if k == 0:
            w("        return []\n")
            wrap_since(w, start, "        ", "o", errors="_ENCODE_ERRORS")
            continue
        slots = ["None"] * k
        for f in fs:
            if f.type.base == UTYPE:
                continue
            i = f.id
            x = f"x{i}"
            if f.deprecated:
                continue
            slots[i] = x
            kind, elem, ref, default = m.field_spec(f)
            w(marker(f.name, "        ", f"x{i}" if kind == "vector" and elem in ("table", "struct") else None))
            w(f"        {x} = o.{f.name}\n")
            if kind == "scalar" and elem in ("float32", "float64"):
                w(f"        if type({x}) is not float:\n            {x} = _check_float({x})\n")
                if default == 0.0 and math.copysign(1.0, default) > 0:
                    w(f"        if not {x} and copysign(1.0, {x}) > 0.0:\n            {x} = None\n")
                else:
                    w(f"        if {x} == {_lit(default)} and copysign(1.0, {x}) == {math.copysign(1.0, default)!r}:\n"
                      f"            {x} = None\n")
            elif kind in ("scalar", "enum"):
                if elem == "bool":
                    w(f"        if {x} is {default!r}:\n            {x} = None\n")
                    w(f"        elif {x} is not {not default!r}:\n            _check_bool({x})\n")
                else:
                    lo, hi = INT_RANGES[elem]
                    w(f"        if {x} == {default!r}:\n            {x} = None\n")
                    w(f"        elif type({x}) is not int or not {lo} <= {x} <= {hi}:\n"
                      f"            {x} = _check_int({x}, {lo}, {hi}, {elem!r})\n")
            elif kind == "string":
                w(f"        if {x} is not None and type({x}) is not str:\n            _check_str({x})\n")
            elif kind == "table":
                w(f"        if {x} is not None:\n            {x} = e_{ref}({x})\n")
            elif kind == "struct":
                w(f"        if {x} is not None:\n            {x} = _es_{ref}({x})\n")
            elif kind == "union":
                slots[i - 1] = f"t{i}"
                w(f"        t{i} = None\n        if {x} is not None:\n")
                w(f"            t{i} = UI_{ref}.get(type({x}))\n")
                w(f"            if t{i} is None:\n                _bad('not a member of the union {ref}', type({x}).__name__)\n")
                w(f"            {x} = UE_{ref}[t{i}]({x})\n")
            else:
                w(f"        if not {x}:\n            {x} = None\n")
                w(f"        elif type({x}) is not list:\n")
                if elem == "uint8":
                    w(f"            {x} = bytes({x})\n        else:\n            {x} = bytes(_check_ints({x}, 0, 255, 'uint8'))\n")
                    _required(w, f)
                    continue
                w(f"            {x} = list({x})\n")
                w(f"        if {x} is not None:\n")
                if elem == "string":
                    w(f"            if not _STR.issuperset(map(type, {x})):\n                _check_each({x}, _check_str)\n")
                elif elem == "table":
                    w(f"            {x} = [e_{ref}(e) for e in {x}]\n")
                elif elem == "struct":
                    w(f"            {x} = [_es_{ref}(e) for e in {x}]\n")
                else:
                    sc = elem.split(":", 1)[-1]
                    if sc in ("float32", "float64"):
                        w(f"            {x} = _floats({x})\n")
                    elif sc == "bool":
                        w(f"            if not _BOOL.issuperset(map(type, {x})):\n                _check_each({x}, _check_bool)\n")
                    else:
                        lo, hi = INT_RANGES[sc]
                        w(f"            {x} = _check_ints({x}, {lo}, {hi}, {sc!r})\n")
            _required(w, f)
        w(f"        r = [{', '.join(slots)}]\n")
        w("        while r and r[-1] is None:\n            r.pop()\n        return r\n")
        wrap_since(w, start, "        ", "o", errors="_ENCODE_ERRORS")
    for u, members in sorted(unions.items()):
        w(f"    UE_{u} = (None, {', '.join('e_' + x for x in members)},)\n")
        w(f"    UI_{u} = {{{', '.join(f'{x}: {i + 1}' for i, x in enumerate(members))}}}\n")
    w(f"\n    return e_{schema.root.short}(root)\n\n\n")


def _required(w, f):
    if f.required:
        w(f"        if x{f.id} is None:\n            _bad('required field {f.name} is missing')\n")


def _scalar_check(var, src, elem, ind, encode):
    """Statements assigning a checked scalar from `src` to `var` (struct fields: no defaults)."""
    if elem in ("float32", "float64"):
        return (f"{ind}{var} = {src}\n{ind}if type({var}) is not float:\n{ind}    {var} = _check_float({var})\n")
    if elem == "bool":
        return f"{ind}{var} = {src}\n{ind}if type({var}) is not bool:\n{ind}    _check_bool({var})\n"
    lo, hi = INT_RANGES[elem]
    return (f"{ind}{var} = {src}\n{ind}if type({var}) is not int or not {lo} <= {var} <= {hi}:\n"
            f"{ind}    {var} = _check_int({var}, {lo}, {hi}, {elem!r})\n")


# ---------------------------------------------------------------------------
# arrays -> model
# ---------------------------------------------------------------------------

def _gen_decoders(w, schema, m, structs, unions):
    for name, o in sorted(structs.items()):
        fs = sorted(o.fields, key=lambda f: f.id)
        start = len(w.__self__)
        w(f"def _ds_{name}(a):\n")
        w(f"    if type(a) is not list or len(a) != {len(fs)}:\n        _bad('wrong type: expected a {len(fs)}-element array ({name})')\n")
        w(f"    {', '.join(f'x{f.id}' for f in fs)}{',' if len(fs) == 1 else ''} = a\n")
        for f in fs:
            kind, elem, ref, default = m.field_spec(f)
            x = f"x{f.id}"
            w(marker(f.name, "    "))
            if elem in ("float32", "float64"):
                w(f"    if type({x}) is not float:\n        {x} = _check_float({x})\n")
            elif elem == "bool":
                w(f"    if type({x}) is not bool:\n        _check_bool({x})\n")
            else:
                lo, hi = INT_RANGES[elem]
                w(f"    if type({x}) is not int or not {lo} <= {x} <= {hi}:\n        {x} = _check_int({x}, {lo}, {hi}, {elem!r})\n")
        w(f"    return {name}({', '.join(f'x{f.id}' for f in fs)})\n")
        wrap_since(w, start, "    ", "a")
        w("\n")
    w(f"def decode_tree(tree, max_depth={read_limits(schema)['max_depth'][0]}):\n")
    w('    """A Package from the array tree msgpack.unpackb produced."""\n\n')
    w("    def too_deep(d):\n"
      "        raise LimitError('nesting deeper than max_depth', expected=f'<= {max_depth}', got=d)\n\n")
    for o in schema.objects:
        if o.is_struct:
            continue
        name = o.short
        fs = sorted(o.fields, key=lambda f: f.id)
        k = max((f.id for f in fs), default=-1) + 1
        start = len(w.__self__)
        w(f"    def d_{name}(a, d):\n")
        w(f"        if type(a) is not list:\n            _bad('wrong type: expected an array ({name})', type(a).__name__)\n")
        w("        if d > max_depth:\n            too_deep(d)\n")
        if k == 0:
            w(f"        return {name}()\n")
            wrap_since(w, start, "        ", "a")
            continue
        w(f"        n = len(a)\n")
        w(f"        {', '.join(f'x{i}' for i in range(k))}{',' if k == 1 else ''} = "
          f"a if n == {k} else (a + _NONES[:{k} - n] if n < {k} else a[:{k}])\n")
        args = []
        for f in fs:
            if f.type.base == UTYPE:
                continue
            i = f.id
            x = f"x{i}"
            args.append(x)
            kind, elem, ref, default = m.field_spec(f)
            if f.deprecated:
                w(f"        {x} = {'[]' if kind == 'vector' else _lit(default) if kind in ('scalar', 'enum') else 'None'}\n")
                continue
            if kind == "union":
                w(marker(f.name + "_type", "        "))
            else:
                w(marker(f.name, "        ", f"x{i}" if kind == "vector" and elem in ("table", "struct") else None))
            if kind in ("scalar", "enum"):
                w(f"        if {x} is None:\n            {x} = {_lit(default)}\n")
                if elem in ("float32", "float64"):
                    w(f"        elif type({x}) is not float:\n            {x} = _check_float({x})\n")
                elif elem == "bool":
                    w(f"        elif type({x}) is not bool:\n            _check_bool({x})\n")
                else:
                    lo, hi = INT_RANGES[elem]
                    w(f"        elif type({x}) is not int or not {lo} <= {x} <= {hi}:\n"
                      f"            _check_int({x}, {lo}, {hi}, {elem!r})\n")
            elif kind == "string":
                w(f"        if {x} is not None:\n")
                w(f"            if type({x}) is not str:\n                _check_str({x})\n")
                w(f"            {string_check(x, m.string_class(o, f), name + '.' + f.name)}\n")
            elif kind == "table":
                w(f"        if {x} is not None:\n            {x} = d_{ref}({x}, d + 1)\n")
            elif kind == "struct":
                w(f"        if {x} is not None:\n            {x} = _ds_{ref}({x})\n")
            elif kind == "union":
                t = f"x{i - 1}"
                nm = len(unions[ref])
                w(f"        if {t} is None or {t} == 0:\n")
                w(f"            if {t} is None and {x} is not None:\n                _bad('union member without a type')\n")
                w(f"            {x} = None\n")
                w(f"        elif type({t}) is not int or not 0 < {t} <= 255:\n            _bad('wrong type or out of range: a union type index is an integer in 0..255', {t})\n")
                w(f"        elif not 0 < {t} <= {nm}:\n"
                  f"            raise VersionError('union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)', got={t})\n")
                w(f"        else:\n")
                w(marker(f.name, "            "))
                w(f"            if {x} is None:\n                _bad('union type without a member')\n")
                w(f"            {x} = UD_{ref}[{t}]({x}, d + 1)\n")
            else:
                w(f"        if {x} is None:\n            {x} = []\n")
                if elem == "uint8":
                    w(f"        elif type({x}) is bytes:\n            {x} = list({x})\n")
                    w(f"        elif type({x}) is list:\n            _check_ints({x}, 0, 255, 'uint8')\n")
                    w(f"        else:\n            _bad('wrong type: expected bin', type({x}).__name__)\n")
                else:
                    w(f"        elif type({x}) is not list:\n            _bad('wrong type: expected an array', type({x}).__name__)\n")
                    if elem == "string":
                        w(f"        elif not _STR.issuperset(map(type, {x})):\n            _check_each({x}, _check_str)\n")
                        w(f"        else:\n            {string_check_all(x, m.string_class(o, f), name + '.' + f.name)}\n")
                    elif elem == "table":
                        w(f"        else:\n            d1 = d + 1\n            {x} = [d_{ref}(e, d1) for e in {x}]\n")
                    elif elem == "struct":
                        w(f"        else:\n            {x} = [_ds_{ref}(e) for e in {x}]\n")
                    else:
                        sc = elem.split(":", 1)[-1]
                        if sc in ("float32", "float64"):
                            w(f"        else:\n            {x} = _floats({x})\n")
                        elif sc == "bool":
                            w(f"        elif not _BOOL.issuperset(map(type, {x})):\n            _check_each({x}, _check_bool)\n")
                        else:
                            lo, hi = INT_RANGES[sc]
                            w(f"        else:\n            _check_ints({x}, {lo}, {hi}, {sc!r})\n")
            if f.required:
                w(f"        if {x} is None:\n            _bad('required field {f.name} is missing')\n")
        w(f"        return {name}({', '.join(args)})\n")
        wrap_since(w, start, "        ", "a")
    for u, members in sorted(unions.items()):
        w(f"    UD_{u} = (None, {', '.join('d_' + x for x in members)},)\n")
    w(f"\n    return d_{schema.root.short}(tree, 1)\n")
