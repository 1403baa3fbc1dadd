"""Schema evolution: the name-level compatibility diff and the minor that defines each name.

Two jobs, both read from flatc's binary schema (regen.read_bfbs), so ids,
types and defaults are flatc's own:

- `diff(old, new)` lists every edit of `new` that breaks SPEC.md §8 against
  the released schema `old`: a table, field, enum value or union member
  removed or renamed, a field id, type or default changed, `(required)` added,
  a deprecation undone, a struct changed, a new field that is not appended,
  a `pt2f_*` attribute of a field or enum value changed (a string class made
  stricter or looser, an item size).
  `flatc --conform` checks the binary layout only and lets renames through,
  but JSON, the canonical dump and the generated code are keyed by names.
- `minors(history, working, version)` says which minor of the current major
  first defined each table field, enum value and union member: the first
  version under schema/history/ that contains it, or `version` (the working
  schema's own) for what no release has yet. regen.py emits it for the three
  readers, whose canonical dump of a file renders only what the file's own
  minor defines (SPEC.md §6).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

_VERSION_LINE = re.compile(r"^///\s+(\d+)\.(\d+) \(\d{4}-\d\d-\d\d\)", re.M)


def schema_version(fbs_text: str) -> tuple[int, int]:
    """The newest `major.minor (date)` line of the schema's version history comment."""
    found = [(int(a), int(b)) for a, b in _VERSION_LINE.findall(fbs_text.split("namespace", 1)[0])]
    if not found:
        raise SystemExit("regen: the schema's header comment has no `///   X.Y (YYYY-MM-DD)` version line")
    return max(found)


def history_versions(history: Path) -> list[tuple[tuple[int, int], Path]]:
    """Released schemas, oldest first: ((major, minor), path of pt2format.fbs)."""
    out = []
    for p in history.iterdir():
        if p.is_dir() and re.fullmatch(r"\d+\.\d+", p.name) and (p / "pt2format.fbs").is_file():
            out.append((tuple(int(x) for x in p.name.split(".")), p / "pt2format.fbs"))
    return sorted(out)


# ---------------------------------------------------------------------------
# A name-level view of a schema
# ---------------------------------------------------------------------------

def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _type_text(s, t) -> str:
    """A field type in words that do not depend on object/enum indexes: 'int32', '[table Node]', 'enum DType:int8'."""
    from codegen import constants as R

    def one(base, index):
        if base in R.SCALAR_NAMES:
            name = R.SCALAR_NAMES[base]
            return f"enum {_short(s.enums[index].name)}:{name}" if index >= 0 and base != R.UTYPE else name
        if base == R.STRING:
            return "string"
        if base == R.OBJ:
            o = s.objects[index]
            return f"{'struct' if o.is_struct else 'table'} {o.short}"
        if base == R.UNION:
            return f"union {_short(s.enums[index].name)}"
        return f"base type {base}"

    if t.base == R.UTYPE:
        return f"union type {_short(s.enums[t.index].name)}" if t.index >= 0 else "union type"
    if t.base in (R.VECTOR, R.VECTOR64):
        return f"[{one(t.element, t.index)}]" + ("64" if t.base == R.VECTOR64 else "")
    return one(t.base, t.index)


def _default_text(f) -> str:
    from codegen import constants as R

    if f.type.base in (R.FLOAT, R.DOUBLE):
        return "0x%016x" % struct.unpack("<Q", struct.pack("<d", f.default_real))[0]
    return str(f.default_integer)


def _attributes(x) -> dict:
    """The project's own attributes of a field or enum value (`pt2f_string`, `pt2f_itemsize`, any later
    `pt2f_*`): each decides whether a reader accepts a file, so each is part of the contract."""
    return {k: v for k, v in sorted(x.attributes.items()) if k.startswith("pt2f_")}


def _string_class_change(where: str, old: str | None, new: str | None) -> str:
    """Why changing a released field's string class breaks SPEC.md §8.1, in the direction it breaks."""
    from pt2format._strings import class_admits

    head = f"{where}: string class changed {old!r} -> {new!r}"
    if old and new and class_admits(old, new) and not class_admits(new, old):
        return (head + ": tightened, so readers refuse valid files written before (a released field's class "
                "never changes, SPEC.md §8.1)")
    if old and new and class_admits(new, old) and not class_admits(old, new):
        return (head + ": loosened, so readers of the release refuse files that use the new strings (a released "
                "field's class never changes after the first release; the one re-cut was before it, "
                "SPEC.md §8.1)")
    return head + " (a released field's class never changes, SPEC.md §8.1)"


def _attribute_changes(where: str, before: dict, after: dict, known: set) -> list[str]:
    """Changes of the attributes the release used (`known`); an attribute the release did not have at all
    states what it left implicit (1.1's `pt2f_itemsize` states 1.0's sizes) and is checked from then on."""
    out = []
    for key in sorted((set(before) | set(after)) & known):
        if before.get(key) == after.get(key):
            continue
        if key == "pt2f_string":
            out.append(_string_class_change(where, before.get(key), after.get(key)))
        else:
            out.append(f"{where}: attribute {key} changed {before.get(key)!r} -> {after.get(key)!r} (what a "
                       "reader accepts never changes for a released name, SPEC.md §8.1)")
    return out


def _attribute_keys(view: dict) -> set:
    """Every `pt2f_*` attribute a schema's name view uses on some field or enum value."""
    keys = set()
    for what, v in view.items():
        if what.startswith(("table ", "struct ")):
            for f in v["fields"].values():
                keys |= set(f["attributes"])
        elif what.startswith("enum "):
            for attrs in v["attributes"].values():
                keys |= set(attrs)
    return keys


def names(s) -> dict:
    """{'table X': {...}, 'enum E': {...}, 'union U': {...}} with everything the diff compares."""
    out = {}
    for o in s.objects:
        fields = {f.name: {"id": f.id, "type": _type_text(s, f.type), "default": _default_text(f),
                           "required": f.required, "deprecated": f.deprecated, "optional": f.optional,
                           "offset": f.offset, "attributes": _attributes(f)}
                  for f in o.fields}
        out[f"{'struct' if o.is_struct else 'table'} {o.short}"] = {"fields": fields, "size": o.bytesize,
                                                                     "align": o.minalign}
    for e in s.enums:
        if e.is_union:
            members = {v.value: (v.name, s.objects[v.union_type.index].short if v.value else "NONE") for v in e.values}
            out[f"union {e.short}"] = {"members": members}
        else:
            out[f"enum {e.short}"] = {"values": {v.name: v.value for v in e.values},
                                      "attributes": {v.name: _attributes(v) for v in e.values},
                                      "underlying": _type_text(s, e.underlying)}
    out["root"] = s.root.short
    out["file_identifier"] = s.file_ident
    return out


# ---------------------------------------------------------------------------
# The diff
# ---------------------------------------------------------------------------

def diff(old, new) -> list[str]:
    """Every incompatible edit from schema `old` (released) to `new`; empty when `new` only adds."""
    a, b = names(old), names(new)
    known = _attribute_keys(a)
    problems = []
    for key in ("root", "file_identifier"):
        if a[key] != b[key]:
            problems.append(f"{key} changed: {a[key]!r} -> {b[key]!r}")
    for what, before in a.items():
        if what in ("root", "file_identifier"):
            continue
        after = b.get(what)
        if after is None:
            kind, name = what.split(" ", 1)
            other = [w for w in b if w not in ("root", "file_identifier") and w.split(" ", 1)[1] == name]
            problems.append(f"{what}: removed" + (f" (now {other[0]})" if other else " (renamed or deleted)"))
            continue
        if what.startswith("struct "):
            if _layout(before) != _layout(after):
                problems.append(f"{what}: a struct never changes (fields, types, offsets or size differ)")
            for name, f in before["fields"].items():  # its fields' attributes follow the tables' rule
                if name in after["fields"]:
                    problems += _attribute_changes(f"{what}.{name}", f["attributes"],
                                                   after["fields"][name]["attributes"], known)
        elif what.startswith("table "):
            problems += _diff_table(what, before["fields"], after["fields"], known)
        elif what.startswith("enum "):
            problems += _diff_enum(what, before, after, known)
        else:
            problems += _diff_union(what, before["members"], after["members"])
    return problems


def _layout(struct: dict) -> dict:
    """A struct's view without its fields' `pt2f_*` attributes: what its bytes are."""
    return {**struct, "fields": {n: {k: v for k, v in f.items() if k != "attributes"}
                                 for n, f in struct["fields"].items()}}


def _diff_table(what, before, after, known) -> list[str]:
    out = []
    by_id = {f["id"]: n for n, f in after.items()}
    for name, f in before.items():
        g = after.get(name)
        if g is None:
            now = by_id.get(f["id"])
            now = now if now not in before else None
            out.append(f"{what}.{name}: " + (f"renamed to {now!r} (id {f['id']})" if now else "deleted"))
            continue
        if g["id"] != f["id"]:
            out.append(f"{what}.{name}: id changed {f['id']} -> {g['id']}")
        if g["type"] != f["type"]:
            out.append(f"{what}.{name}: type changed {f['type']} -> {g['type']}")
        if g["default"] != f["default"] or g["optional"] != f["optional"]:
            out.append(f"{what}.{name}: default changed {f['default']} -> {g['default']}")
        if g["required"] and not f["required"]:
            out.append(f"{what}.{name}: (required) added (files without the field become invalid)")
        if f["deprecated"] and not g["deprecated"]:
            out.append(f"{what}.{name}: deprecation undone")
        out += _attribute_changes(f"{what}.{name}", f["attributes"], g["attributes"], known)
    top = max((f["id"] for f in before.values()), default=-1)
    for name, g in after.items():
        if name in before:
            continue
        if g["id"] <= top:
            out.append(f"{what}.{name}: new field id {g['id']} is not after the released ids (<= {top})")
        if g["required"]:
            out.append(f"{what}.{name}: a new field cannot be (required) (older files do not have it)")
    return out


def _diff_enum(what, before, after, known) -> list[str]:
    out = []
    if before["underlying"] != after["underlying"]:
        out.append(f"{what}: underlying type changed {before['underlying']} -> {after['underlying']}")
    new_by_value = {v: n for n, v in after["values"].items()}
    old_values = set(before["values"].values())
    for name, value in before["values"].items():
        if name not in after["values"]:
            now = new_by_value.get(value)
            now = now if now not in before["values"] else None
            out.append(f"{what}.{name}: " + (f"renamed to {now!r} (value {value})" if now else "deleted"))
        elif after["values"][name] != value:
            out.append(f"{what}.{name}: value changed {value} -> {after['values'][name]}")
        else:
            out += _attribute_changes(f"{what}.{name}", before["attributes"][name], after["attributes"][name],
                                      known)
    for name, value in after["values"].items():
        if name not in before["values"] and value in old_values:
            out.append(f"{what}.{name}: new value {value} reuses a released value")
    return out


def _diff_union(what, before, after) -> list[str]:
    out = []
    for index, (name, table) in before.items():
        now = after.get(index)
        if now is None:
            out.append(f"{what}.{name}: member {index} deleted")
        elif now[0] != name:
            out.append(f"{what}.{name}: member {index} renamed to {now[0]!r}")
        elif now[1] != table:
            out.append(f"{what}.{name}: member {index} now holds table {now[1]}, not {table}")
    return out


# ---------------------------------------------------------------------------
# Which minor defines what
# ---------------------------------------------------------------------------

def _defined(s) -> dict:
    """{('field', Table, name) | ('value', Enum, int) | ('member', Union, index): True} of a schema."""
    out = {}
    for o in s.objects:
        if not o.is_struct:
            for f in o.fields:
                out[("field", o.short, f.name)] = True
    for e in s.enums:
        for v in e.values:
            out[("member" if e.is_union else "value", e.short, v.value)] = True
    return out


def minors(history: list, working, version: tuple[int, int]) -> dict:
    """{('field'|'value'|'member', owner, key): minor} for names of major `version[0]` defined after X.0.

    `history` is [((major, minor), FSchema)] oldest first; `working` the schema
    being generated, whose version is `version`. Names of the first minor of
    the major (X.0) are left out: a reader treats a missing entry as minor 0.
    """
    first = {}
    for v, s in [*[(v, s) for v, s in history if v[0] == version[0] and v < version], (version, working)]:
        for k in _defined(s):
            first.setdefault(k, v[1])
    live = _defined(working)
    return {k: m for k, m in sorted(first.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2])))
            if m > 0 and k in live}
