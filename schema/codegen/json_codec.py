"""Generates pt2format/_generated/json_codec.py: per-table functions between model objects and JSON trees.

Called through schema/codegen/targets.py (`generate(schema, model) -> str`). The C `json` module
parses and prints the text; the generated functions do the rest, one per
table, checking every value's type and range, unknown keys, union and enum
names, required fields and max_depth; each function notes its field on an
error passing through (schema/codegen/trail.py), from which the caller,
pt2format/_codecs/json.py, names the field path.

Decoding takes the plain tree of `json.loads`, where a duplicate key has
silently replaced the earlier one; `decode_tree` also returns how many members
the objects had and every free string, from which the caller proves there were
no duplicates (see pt2format/_codecs/json.py).
"""

from __future__ import annotations

import math
import struct

from codegen.constants import FLOATS, INT_RANGES, UTYPE, lit as _lit
from codegen.limits import read_limits
from codegen.strings import model_imports, string_check, string_check_all, string_check_imports
from codegen.templates import render
from codegen.trail import marker, wrap_since


def _live(o):
    return [f for f in sorted(o.fields, key=lambda f: f.id) if f.type.base != UTYPE]


def generate(schema, m) -> str:
    unions = {e.short: [m.obj_name(v.union_type.index) for v in e.values if v.value != 0]
              for e in schema.enums if e.is_union}
    enums = {e.short: e for e in schema.enums if not e.is_union}
    out = []
    w = out.append
    w(render("json_codec_head.py.tmpl", model_imports=model_imports(sorted(o.short for o in schema.objects)),
             string_checks=string_check_imports()))
    for name, e in sorted(enums.items()):
        w(f"\nEN_{name} = {{{', '.join(f'{v.value}: {v.name!r}' for v in e.values)}}}\n")
        w(f"EV_{name} = {{{', '.join(f'{v.name!r}: {v.value}' for v in e.values)}}}\n")
    # Keys a table may have. Deprecated fields are left out: their values are not
    # decoded, so their members would escape the count; the reflection code reads them.
    for o in schema.objects:
        if not o.is_struct:
            keys = []
            for f in _live(o):
                if f.deprecated:
                    continue
                if m.field_spec(f)[0] == "union":
                    keys.append(f.name + "_type")
                keys.append(f.name)
            w(f"K_{o.short} = frozenset({sorted(keys)!r})\n")
    w("\n")
    _gen_encoders(w, schema, m, unions)
    _gen_decoders(w, schema, m, unions)
    return "".join(out)


# ---------------------------------------------------------------------------
# model -> JSON tree
# ---------------------------------------------------------------------------

def _int_check(x, elem, ind):
    lo, hi = INT_RANGES[elem]
    return f"{ind}if type({x}) is not int or not {lo} <= {x} <= {hi}:\n{ind}    {x} = _check_int({x}, {lo}, {hi}, {elem!r})\n"


def _gen_encoders(w, schema, m, unions):
    for o in schema.objects:
        name = o.short
        fs = _live(o)
        w("\n")
        start = len(w.__self__)
        w(f"def e_{name}(o):\n")
        what = "struct" if o.is_struct else "table"
        w(f"    if type(o) is not {name}:\n        _bad('wrong {what} type, expected {name}', type(o).__name__)\n")
        if o.is_struct:
            # Struct fields are plain numbers (an enum in a struct as its int, like the reflection codec).
            for f in fs:
                kind, elem, ref, default = m.field_spec(f)
                x = f"x{f.id}"
                w(marker(f.name, "    "))
                w(f"    {x} = o.{f.name}\n")
                if elem in FLOATS:
                    w(f"    if type({x}) is not float:\n        {x} = _check_float({x})\n")
                    w(f"    if {x} - {x} != 0.0:\n        {x} = _out_float({x})\n")
                elif elem == "bool":
                    w(f"    if type({x}) is not bool:\n        _check_bool({x})\n")
                else:
                    w(_int_check(x, elem, "    "))
            w(f"    return {{{', '.join(f'{f.name!r}: x{f.id}' for f in fs)}}}\n")
            wrap_since(w, start, "    ", "o", errors="_ENCODE_ERRORS")
            continue
        w("    r = {}\n")
        for f in fs:
            if f.deprecated:
                continue
            kind, elem, ref, default = m.field_spec(f)
            x = f"x{f.id}"
            k = repr(f.name)
            w(marker(f.name, "    ", x if kind == "vector" and elem in ("table", "struct") else None))
            w(f"    {x} = o.{f.name}\n")
            if kind == "scalar" and elem in FLOATS:
                w(f"    if type({x}) is not float:\n        {x} = _check_float({x})\n")
                if default == 0.0 and math.copysign(1.0, default) > 0:
                    w(f"    if {x} or copysign(1.0, {x}) < 0.0:\n")  # not +0.0 (NaN is truthy)
                else:  # compare bit patterns, as the reflection codec does
                    w(f"    if _pack('<d', {x}) != {struct.pack('<d', default)!r}:\n")
                w(f"        r[{k}] = {x} if {x} - {x} == 0.0 else _out_float({x})\n")
            elif kind == "scalar" and elem == "bool":
                w(f"    if {x} is not {default!r}:\n")
                w(f"        if {x} is not {not default!r}:\n            _check_bool({x})\n")
                w(f"        r[{k}] = {x}\n")
            elif kind in ("scalar", "enum"):
                w(_int_check(x, elem, "    "))
                val = f"EN_{ref}.get({x}, {x})" if kind == "enum" else x
                w(f"    if {x} != {default!r}:\n        r[{k}] = {val}\n")
            elif kind == "string":
                w(f"    if {x} is not None:\n")
                w(f"        if type({x}) is not str:\n            _check_str({x})\n")
                w(f"        r[{k}] = {x}\n")
                _required_enc(w, f)
            elif kind in ("table", "struct"):
                w(f"    if {x} is not None:\n        r[{k}] = e_{ref}({x})\n")
                _required_enc(w, f)
            elif kind == "union":
                w(f"    if {x} is not None:\n")
                w(f"        t = UE_{ref}.get(type({x}))\n")
                w(f"        if t is None:\n            _bad('not a member of the union {ref}', type({x}).__name__)\n")
                w(f"        r[{f.name + '_type'!r}] = t[0]\n        r[{k}] = t[1]({x})\n")
            else:
                if f.required:
                    w(f"    if {x} is None:\n        _bad('required field {f.name} is missing')\n")
                w(f"    if type({x}) is not list:\n        {x} = _vec({x})\n")
                w(f"    if {x}:\n")
                if elem == "string":
                    w(f"        r[{k}] = _strs({x})\n")
                elif elem == "table" or elem == "struct":
                    w(f"        r[{k}] = [e_{ref}(e) for e in {x}]\n")
                elif elem.startswith("enum:"):
                    lo, hi = INT_RANGES[elem[5:]]
                    w(f"        r[{k}] = [EN_{ref}.get(e, e) for e in _check_ints({x}, {lo}, {hi}, {elem[5:]!r})]\n")
                elif elem in FLOATS:
                    w(f"        r[{k}] = _out_floats({x})\n")
                elif elem == "bool":
                    w(f"        r[{k}] = _bools({x})\n")
                else:
                    lo, hi = INT_RANGES[elem]
                    w(f"        r[{k}] = _check_ints({x}, {lo}, {hi}, {elem!r})\n")
        w("    return r\n")
        wrap_since(w, start, "    ", "o", errors="_ENCODE_ERRORS")
    w("\n")
    for u, members in sorted(unions.items()):
        w(f"UE_{u} = {{{', '.join(f'{x}: ({x!r}, e_{x})' for x in members)}}}\n")
    w(f"\n\ndef encode_tree(root):\n    \"\"\"The JSON tree (dicts in schema order) of a Package.\"\"\"\n"
      f"    return e_{schema.root.short}(root)\n\n")


def _required_enc(w, f):
    if f.required:
        w(f"    else:\n        _bad('required field {f.name} is missing')\n")


# ---------------------------------------------------------------------------
# JSON tree -> model
# ---------------------------------------------------------------------------

def _gen_decoders(w, schema, m, unions):
    w(f"\ndef decode_tree(tree, max_depth={read_limits(schema)['max_depth'][0]}):\n")
    w('    """(Package, members, strings) from the tree json.loads produced.\n\n'
      '    `members` counts the members of every object decoded, `strings` holds every\n'
      '    string value other than enum, union and non-finite float names; the caller\n'
      '    uses both to rule out duplicate keys.\n    """\n\n')
    w("    members = 0\n    strings = []\n    keep = strings.append\n    keep_all = strings.extend\n\n")
    w("    def too_deep(d):\n"
      "        raise LimitError('nesting deeper than max_depth', expected=f'<= {max_depth}', got=d)\n\n")
    for o in schema.objects:
        name = o.short
        fs = _live(o)
        start = len(w.__self__)
        w(f"    def d_{name}(o, d):\n")
        w("        if d > max_depth:\n            too_deep(d)\n")
        w(f"        if type(o) is not dict:\n            _bad('wrong type: expected an object ({name})', type(o).__name__)\n")
        w("        nonlocal members\n")
        if o.is_struct:
            w(f"        if len(o) != {len(fs)}:\n            _bad('wrong struct fields: expected the {len(fs)} fields of {name}')\n")
            w(f"        members += {len(fs)}\n")
        else:
            w("        members += len(o)\n")
            w(f"        if not K_{name}.issuperset(o):\n            members += _skipped(o, K_{name}, keep)\n")
        args = []
        for f in fs:
            x = f"x{f.id}"
            args.append(x)
            kind, elem, ref, default = m.field_spec(f)
            if f.deprecated:
                w(f"        {x} = {'[]' if kind == 'vector' else _lit(default) if kind in ('scalar', 'enum') else 'None'}\n")
                continue
            if kind == "union":
                w(marker(f.name + "_type", "        "))
            else:
                w(marker(f.name, "        ", x if kind == "vector" and elem in ("table", "struct") else None))
            if o.is_struct:  # the field count was checked: a missing field is a misspelt one (None fails its check)
                w(f"        {x} = o.get({f.name!r})\n")
                if elem in FLOATS:
                    w(f"        if type({x}) is not float:\n            {x} = _jfloat({x})\n")
                elif elem == "bool":
                    w(f"        if type({x}) is not bool:\n            _check_bool({x})\n")
                else:
                    lo, hi = INT_RANGES[elem]
                    w(f"        if type({x}) is not int or not {lo} <= {x} <= {hi}:\n"
                      f"            _check_int({x}, {lo}, {hi}, {elem!r})\n")
                continue
            w(f"        {x} = o.get({f.name!r})\n")
            if kind in ("scalar", "enum"):
                w(f"        if {x} is None:\n            {x} = {_lit(default)}\n")
                if kind == "enum":
                    lo, hi = INT_RANGES[elem]
                    w(f"        elif type({x}) is str:\n            {x} = EV_{ref}.get({x})\n")
                    w(f"            if {x} is None:\n                raise VersionError('enum value name unknown to this reader: defined by a newer minor (SPEC.md section 8)', got=o[{f.name!r}])\n")
                    w(f"        elif type({x}) is not int or not {lo} <= {x} <= {hi}:\n"
                      f"            _check_int({x}, {lo}, {hi}, {elem!r})\n")
                elif elem in FLOATS:
                    w(f"        elif type({x}) is not float:\n            {x} = _jfloat({x})\n")
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
                w(f"            keep({x})\n")
            elif kind in ("table", "struct"):
                w(f"        if {x} is not None:\n            {x} = d_{ref}({x}, d + 1)\n")
            elif kind == "union":
                # The type is a member name (or NONE), or an index (flatc reads both).
                t = f"t{f.id}"
                nm = len(unions[ref])
                w(f"        {t} = o.get({f.name + '_type'!r})\n")
                w(f"        if {t} is None:\n")
                w(f"            if {x} is not None:\n                _bad('union member without its _type key')\n")
                w(f"        elif {x} is None:\n")
                w(f"            if {t} != 'NONE' and ({t} != 0 or type({t}) is not int):\n"
                  f"                _bad('union type without a member, or unknown', {t})\n")
                w(f"        else:\n")
                w(f"            if type({t}) is str:\n                {t} = UN_{ref}.get({t}, {t})\n")
                w(f"                if type({t}) is str:\n"
                  f"                    if {t} == 'NONE':\n                        _bad('union member given with type NONE')\n"
                  f"                    raise VersionError('union member unknown to this reader: defined by a newer minor (SPEC.md section 8)', got={t})\n")
                w(f"            elif type({t}) is int and 0 < {t} <= {nm}:\n                {t} = UD_{ref}[{t}]\n")
                w(f"            elif type({t}) is int and {nm} < {t} <= 255:\n"
                  f"                raise VersionError('union member unknown to this reader: defined by a newer minor (SPEC.md section 8)', got={t})\n")
                w(f"            else:\n                _bad('wrong type: bad union type, or NONE with a member', {t})\n")
                w(marker(f.name, "            "))
                w(f"            {x} = {t}({x}, d + 1)\n")
            else:
                w(f"        if {x} is None:\n            {x} = []\n")
                w(f"        elif type({x}) is not list:\n            _bad('wrong type: expected an array', type({x}).__name__)\n")
                if elem == "string":
                    w(f"        elif not _STR.issuperset(map(type, {x})):\n            _check_each({x}, _check_str)\n")
                    w(f"        else:\n            keep_all({x})\n")
                    w(f"            {string_check_all(x, m.string_class(o, f), name + '.' + f.name)}\n")
                elif elem in ("table", "struct"):
                    w(f"        elif {x}:\n            d1 = d + 1\n            {x} = [d_{ref}(e, d1) for e in {x}]\n")
                elif elem.startswith("enum:"):
                    lo, hi = INT_RANGES[elem[5:]]
                    w(f"        else:\n            {x} = _enums_in({x}, EV_{ref}, {lo}, {hi})\n")
                elif elem in FLOATS:
                    w(f"        else:\n            {x} = _jfloats({x})\n")
                elif elem == "bool":
                    w(f"        elif not _BOOL.issuperset(map(type, {x})):\n            _check_each({x}, _check_bool)\n")
                else:
                    lo, hi = INT_RANGES[elem]
                    w(f"        else:\n            _check_ints({x}, {lo}, {hi}, {elem!r})\n")
            if f.required:
                w(f"        if {x} is None:\n            _bad('required field {f.name} is missing')\n")
        w(f"        return {name}({', '.join(args)})\n")
        wrap_since(w, start, "        ", "o")
    for u, members in sorted(unions.items()):
        w(f"    UD_{u} = (None, {', '.join('d_' + x for x in members)},)\n")
        w(f"    UN_{u} = {{{', '.join(f'{x!r}: d_{x}' for x in members)}}}\n")
    w(f"\n    root = d_{schema.root.short}(tree, 1)\n    return root, members, strings\n")
