"""Generates pt2format/_generated/fb_reader.py: one specialized, bounds-checked FlatBuffers decode function per table.

Called through schema/codegen/targets.py (`generate(schema, model) -> str`). flatc's Python accessors
cost ~250 us per node; this reader unpacks each table's vtable in one
`struct.unpack_from`, reads fields with precompiled `struct.Struct`s and
builds the model objects directly (constructor arguments in field order).

Every position is checked against the buffer before it is read; an error
raises EncodingError/LimitError/VersionError with the offset, and each table
function it passes notes its field (schema/codegen/trail.py), from which the
caller, pt2format/_codecs/flatbuffers.py, names the field path. Checks and
limits: table nesting <= max_depth; each table visit spends 4 (a table has at least 4 bytes of its own),
each vector visit count + 1 and each newly decoded string its length from a budget of
len(buffer) + 64 (honest buffers never share vectors and strings are cached
by offset, so they stay under it; shared-offset bombs do not); union indexes
beyond the union are errors; strings are NUL-terminated UTF-8.
"""

from __future__ import annotations

from codegen.constants import FMT, FMT_NAMES, SIZE, UTYPE, lit as _lit, struct_fmt as _struct_fmt
from codegen.strings import model_imports, string_check, string_check_all, string_check_imports
from codegen.templates import render
from codegen.trail import marker, wrapped


def _check_acyclic(schema, m) -> None:
    """Termination argument: every cycle between table types must pass through a vector.

    The budget is only spent on vectors; without a vector-free cycle the work
    between two vector visits is bounded by the schema.
    """
    edges = _table_edges(schema, m, vectors=False)
    state = {}

    def visit(n, stack):
        if state.get(n) == 1:
            raise SystemExit(f"fb_reader: vector-free cycle between tables: {' -> '.join(stack + [n])}")
        if state.get(n) == 2:
            return
        state[n] = 1
        for t in sorted(edges[n]):
            visit(t, stack + [n])
        state[n] = 2

    for n in sorted(edges):
        visit(n, [])


def generate(schema, m) -> str:
    _check_acyclic(schema, m)
    structs = {o.short: o for o in schema.objects if o.is_struct}
    tables = [o for o in schema.objects if not o.is_struct]
    unions = {e.short: [m.obj_name(v.union_type.index) for v in e.values if v.value != 0]
              for e in schema.enums if e.is_union}
    max_slots = max((max((f.id for f in o.fields), default=-1) + 1 for o in tables), default=0)

    out = []
    w = out.append
    names = sorted(o.short for o in schema.objects)
    w(render("fb_reader_head.py.tmpl", model_imports=model_imports(names), string_checks=string_check_imports(accepted=True),
             ident=schema.file_ident, nslots=max_slots, nslots1=max_slots + 1))
    for ch in sorted(set(FMT.values())):
        w(f"_S_{_fmt_name(ch)} = struct.Struct('<{ch}').unpack_from\n")
    for name, o in sorted(structs.items()):
        w(f"_ST_{name} = struct.Struct({_struct_fmt(o)!r})\n")
    heights = shared_heights(schema, m)
    w(f"#: The pt2f_shared tables: decoded once per offset (see decode's `share`).\nSHARED_TABLES = {tuple(sorted(heights))!r}\n")
    w("\n\n")
    w(render("fb_reader_decode.py.tmpl"))
    for o in tables:
        _gen_table(w, o, m, unions, structs, o.short in heights)
        if o.short in heights:
            _gen_shared(w, o.short, heights[o.short])
    for u, members in sorted(unions.items()):
        w(f"    U_{u} = (None, {', '.join('t_' + x for x in members)},)\n")
    if heights:
        w("    if not share:\n")
        for name in sorted(heights):
            w(f"        t_{name} = t_{name}_body\n")
    root = schema.root.short
    w(f"\n    tree = t_{root}(_U32(buf, 0)[0], 1)\n")
    # The decoder's functions reference each other (a cycle the collector frees, later): the shared objects
    # must not wait for it with them, or they outlive the tree that holds them (and a collection walks them).
    w("".join(f"    sh_{name}.clear()\n" for name in sorted(heights)))
    w("    if stats is not None:\n        stats['spent'] = n + 64 - budget\n")
    w("    return tree\n")
    return "".join(out)


def _table_edges(schema, m, vectors=True) -> dict:
    """Table name -> the table types its fields (tables, union members, and with `vectors` vectors of tables) hold."""
    edges = {}
    for o in schema.objects:
        if o.is_struct:
            continue
        out = set()
        for f in o.fields:
            if f.type.base == UTYPE or f.deprecated:
                continue
            kind, elem, ref, _ = m.field_spec(f)
            if kind == "table" or (vectors and kind == "vector" and elem == "table"):
                out.add(ref)
            elif kind == "union":
                e = next(e for e in schema.enums if e.short == ref)
                out.update(m.obj_name(v.union_type.index) for v in e.values if v.value != 0)
        edges[o.short] = out
    return edges


def shared_heights(schema, m) -> dict:
    """`pt2f_shared` table -> how many levels of tables can nest below it (the schema bounds it, or regen stops)."""
    edges = _table_edges(schema, m)

    def height(n, stack):
        if n in stack:
            raise SystemExit(f"regen: pt2f_shared table {stack[0]} holds tables that nest again: "
                             f"{' -> '.join(stack + (n,))}")
        return max((1 + height(t, stack + (n,)) for t in edges[n]), default=0)

    return {o.short: height(o.short, ()) for o in schema.objects
            if not o.is_struct and "pt2f_shared" in o.attributes}


def _gen_shared(w, name, height):
    """t_<name> for a shared table: the object decoded at that offset before, charged as a fresh decode would be.

    The budget this subtree spent (strings aside: a string is charged once per offset anyway) is spent again,
    and the depth is checked against the deepest the schema lets it nest; when either would fail, or for the
    first visit, the table is decoded (t_<name>_body), so every error and its offset is the one a reader
    without the cache gives (SPEC.md §10). After `_runtime.SHARED_GIVE_UP` misses without a hit, t_<name> is
    the body."""
    w(f"    sh_{name} = {{}}\n    hit_{name} = False\n\n")
    w(f"    def t_{name}(p, d):\n")
    w(f"        nonlocal budget, hit_{name}, t_{name}\n")
    w(f"        h = sh_{name}.get(p)\n")
    w("        if h is not None:\n")
    w(f"            if h[1] <= budget and d <= max_depth - {height}:\n")
    w(f"                budget -= h[1]\n                hit_{name} = True\n                return h[0]\n")
    w(f"        elif len(sh_{name}) >= _SHARED_GIVE_UP and not hit_{name}:\n")
    w(f"            t_{name} = t_{name}_body\n")
    w(f"            return t_{name}_body(p, d)\n")
    w("        b0, s0 = budget, strings_spent\n")
    w(f"        x = t_{name}_body(p, d)\n")
    w(f"        sh_{name}[p] = (x, b0 - budget - (strings_spent - s0))\n")
    w("        return x\n\n")


def _fmt_name(ch):
    return FMT_NAMES[ch]


def _gen_table(w, o, m, unions, structs, shared=False):
    name = o.short
    fields = sorted(o.fields, key=lambda f: f.id)
    k = max((f.id for f in fields), default=-1) + 1
    slot_names = [""] * k
    for f in fields:
        slot_names[f.id] = f.name
    w(f"    vc_{name} = {{}}\n    Z_{name} = {_slot_sizes(o, m, structs)!r}\n    SN_{name} = {tuple(slot_names)!r}\n\n")
    head = f"    def t_{name}{'_body' if shared else ''}(p, d):\n"
    out = []
    outer_w = w
    w = out.append
    w("        if d > max_depth:\n            too_deep(p, d)\n")
    # Each table visit spends 1 from the budget, so tables that share subtables (a fan-out bomb)
    # cannot expand into more objects than the buffer has bytes (SPEC.md §10).
    w("        nonlocal budget\n        budget -= 4\n        if budget < 0:\n            spend(0, p)\n")
    w("        if p + 4 > n:\n            _fail('table offset out of range', p, f'<= {n - 4}', p)\n")
    w("        vt = p - _I32(buf, p)[0]\n")
    w(f"        c = vc_{name}.get(vt)\n        if c is None:\n            c = vc_{name}[vt] = vtab(vt, Z_{name})\n")
    slots = "".join(f", o{i}" for i in range(k))
    w(f"        os,{slots[1:]} = c\n")
    w("        if p + os > n:\n            _fail('bad table size', p, '4..buffer end', os)\n")
    if k == 0:
        w(f"        return {name}()\n")
        outer_w(wrapped(head, "".join(out), "        ", "p", f"SN_{name}"))
        return
    args = []
    for f in fields:
        if f.type.base == UTYPE:
            continue
        kind, elem, ref, default = m.field_spec(f)
        var = f"x{f.id}"
        args.append(var)
        i = f.id
        if f.deprecated:
            w(f"        {var} = {'[]' if kind == 'vector' else _lit(default) if kind in ('scalar', 'enum') else 'None'}\n")
            continue
        if kind == "union":
            w(marker(f.name + "_type", "        "))
        elif kind == "vector" and elem == "table":
            w(marker(f.name, "        ", "fb"))
        else:
            w(marker(f.name, "        "))
        if kind in ("scalar", "enum"):
            sz = SIZE[elem]
            w(f"        if o{i}:\n")
            w(f"            {var} = _S_{_fmt_name(FMT[elem])}(buf, p + o{i})[0]\n")
            w(f"        else:\n            {var} = {_lit(default)}\n")
            continue
        if kind == "struct":
            so = structs[ref]
            w(f"        if o{i}:\n")
            w(f"            {var} = {ref}(*_ST_{ref}.unpack_from(buf, p + o{i}))\n")
            w(f"        else:\n            {var} = None\n")
            continue
        if kind == "union":
            t = i - 1
            nm = len(unions[ref])
            w(f"        {var} = None\n")
            w(f"        if o{t}:\n")
            w(f"            ty = buf[p + o{t}]\n")
            w("            if ty:\n")
            w(f"                if ty > {nm}:\n")
            w(f"                    _newer('union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)', p + o{t}, '0..{nm}', ty)\n")
            w(marker(f.name, "                "))
            w(f"                if not o{i}:\n                    _fail('union type without a member', p)\n")
            w(f"                q = p + o{i}\n")
            w(f"                {var} = U_{ref}[ty](q + _U32(buf, q)[0], d + 1)\n")
            continue
        # Offsets: string, table, vector.
        w(f"        if o{i}:\n")
        w(f"            q = p + o{i}\n            q += _U32(buf, q)[0]\n")
        if kind == "string":
            w(f"            {var} = sget(q)\n            if {var} is None:\n                {var} = rstr(q)\n")
            cls = m.string_class(o, f)
            w(f"            if {var} not in _OK_{cls}:\n")
            w(f"                {string_check(var, cls, o.short + '.' + f.name)}\n")
        elif kind == "table":
            w(f"            {var} = t_{ref}(q, d + 1)\n")
        else:
            _gen_vector(w, var, elem, ref, structs)
            if elem == "string":
                w(f"            {string_check_all(var, m.string_class(o, f), o.short + '.' + f.name)}\n")
        if f.required:
            w(f"        else:\n            _fail('required field {f.name} is missing', p, '{f.name}', 'absent')\n")
        else:
            w(f"        else:\n            {var} = {'[]' if kind == 'vector' else 'None'}\n")
    w(f"        return {name}({', '.join(args)})\n")
    outer_w(wrapped(head, "".join(out), "        ", "p", f"SN_{name}"))


def _slot_sizes(o, m, structs) -> tuple:
    """Inline size of each vtable slot's field (0 for deprecated fields, which are never read)."""
    k = max((f.id for f in o.fields), default=-1) + 1
    sizes = [0] * k
    for f in o.fields:
        if f.deprecated:
            continue
        if f.type.base == UTYPE:
            sizes[f.id] = 1
            continue
        kind, elem, ref, _ = m.field_spec(f)
        if kind in ("scalar", "enum"):
            sizes[f.id] = SIZE[elem]
        elif kind == "struct":
            sizes[f.id] = structs[ref].bytesize
        else:
            sizes[f.id] = 4
    return tuple(sizes)


def _vec_count(w, ind, esize):
    """`cnt` = the element count of the vector at q, checked as `vec` checks it, inline: `vec` runs (and raises)
    only when a check fails; one call saved per vector, 100,000 in a 20,000-node program."""
    w(f"{ind}if q + 4 > n or (cnt := _U32(buf, q)[0]) * {esize} > n - q - 4:\n{ind}    vec(q, {esize})\n")
    w(f"{ind}budget -= cnt + 1\n{ind}if budget < 0:\n{ind}    spend(0, q)\n")


def _gen_vector(w, var, elem, ref, structs):
    ind = "            "
    if elem == "string":
        _vec_count(w, ind, 4)
        w(f"{ind}{var} = list(map(rstr, map(add, range(q + 4, q + 4 + 4 * cnt, 4), _unpack('<%dI' % cnt, buf, q + 4))))\n")
    elif elem == "table":
        _vec_count(w, ind, 4)
        # Most vectors of tables in a graph hold one (a node's output, a module stack of one entry).
        # (q stays the vector's position: the error path names the element from it, see _runtime._index.)
        w(f"{ind}if cnt == 1:\n{ind}    r = q + 4\n{ind}    {var} = [t_{ref}(r + _U32(buf, r)[0], d + 1)]\n{ind}else:\n")
        w(f"{ind}    {var} = list(map(t_{ref}, map(add, range(q + 4, q + 4 + 4 * cnt, 4), _unpack('<%dI' % cnt, buf, q + 4)), "
          f"repeat(d + 1, cnt)))\n")
    elif elem == "struct":
        size = structs[ref].bytesize
        _vec_count(w, ind, size)
        w(f"{ind}{var} = list(starmap({ref}, _ST_{ref}.iter_unpack(buf[q + 4:q + 4 + {size} * cnt])))\n")
    elif elem == "uint8":
        _vec_count(w, ind, 1)
        w(f"{ind}{var} = list(buf[q + 4:q + 4 + cnt])\n")
    else:
        sc = elem.split(":", 1)[-1]
        _vec_count(w, ind, SIZE[sc])
        w(f"{ind}{var} = list(_unpack('<%d{FMT[sc]}' % cnt, buf, q + 4))\n")
