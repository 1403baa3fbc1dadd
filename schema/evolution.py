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


def _rule_string_class(where: str, old: str | None, new: str | None) -> list[str]:
    """`pt2f_string`: never changes on a released name, and SPEC.md §8.1 says what to do instead.

    The classes are ordered (`pt2format._strings.class_admits`), so the report says
    which way the edit breaks: a stricter class makes new readers refuse valid
    older files; a looser one lets new writers produce files that readers of the
    release refuse. The rule for loosening (SPEC.md §8.1, "a new field, never a
    looser class"): strings a class refuses are admitted by a new field (with its
    own class) added by a minor, which older readers ignore.
    """
    from pt2format._strings import class_admits

    head = f"{where}: string class changed {old!r} -> {new!r}"
    if old and new and class_admits(old, new) and not class_admits(new, old):
        return [head + ": tightened, so readers refuse valid files written before (a released field's class "
                "never changes, SPEC.md §8.1)"]
    if old and new and class_admits(new, old) and not class_admits(old, new):
        return [head + ": loosened, so readers of the release refuse files that use the new strings; admit "
                "them with a new field instead (SPEC.md §8.1, \"a new field, never a looser class\")"]
    return [head + " (a released field's class never changes, SPEC.md §8.1)"]


def _rule_equal(where: str, old, new, key: str = "") -> list[str]:
    return [f"{where}: attribute {key} changed {old!r} -> {new!r} (what a reader accepts never changes for a "
            "released name, SPEC.md §8.1)"]


def _rule_limits(where: str, old, new) -> list[str]:
    """Every bound the release lists keeps its value; a bound it does not list may be added.

    A new bound names a limit the released readers already had without the table
    spelling it (`max_json_depth` and `max_msgpack_depth`, added after 1.1, are the
    parsers' container depths, each reader's own constant before), or one only
    readers of a new minor apply; which of the two is for review, as ATTRIBUTES.md says."""
    from codegen.limits import parse_limits

    before, after = ({} if text is None else parse_limits(text) for text in (old, new))
    out = []
    for name, (value, spelled) in before.items():
        now = after.get(name)
        if now is None or now[0] != value:
            out.append(f"{where}: pt2f_limits bound {name} changed {spelled!r} -> {now and now[1]!r} (a released "
                       "bound never changes, SPEC.md §8.1)")
    return out


# The attribute contract (SPEC.md §8.5): one line per `pt2f_*` attribute kind, the rule its value follows
# on a released name. rule(where, old, new) -> problems; it is called only when the value changed (added,
# removed or edited). An attribute kind not listed here fails on any change: adding a kind is adding a line.
ATTRIBUTE_RULES = {
    # string class (SPEC.md §9): ordered classes; both directions fail, loosening names its §8.1 rule
    "pt2f_string": _rule_string_class,
    # bytes per element of a ScalarType value: equal
    "pt2f_itemsize": lambda where, old, new: _rule_equal(where, old, new, "pt2f_itemsize"),
    # index range a reader checks (schema/ATTRIBUTES.md): adding or narrowing one makes released files
    # unreadable, widening or removing one lets new writers make files released readers refuse: equal
    "pt2f_index": lambda where, old, new: _rule_equal(where, old, new, "pt2f_index"),
    # a field every valid file has: adding it refuses released files without it, removing it lets new
    # files omit what released readers require: equal
    "pt2f_required": lambda where, old, new: _rule_equal(where, old, new, "pt2f_required"),
    # the root table's bounds (SPEC.md §10): lowering one refuses released files, raising one makes
    # released readers refuse new files: each released bound equal; a new bound may be added (see _rule_limits)
    "pt2f_limits": lambda where, old, new: _rule_limits(where, old, new),
    # sorted or unique keys of a vector of tables: adding it or tightening "unique" to "sorted" refuses released
    # files, loosening or removing it lets new writers make files released readers refuse: equal. Check-only
    # attributes of a kind a release did not use state what its readers already checked by hand (1.1's readers
    # checked every pt2f_keys rule), so they are compared from the first release that has the kind (see
    # _attribute_changes); adding one to a released field that no released reader checked is a new rule and
    # needs a new minor's reader, which the diff cannot see: ATTRIBUTES.md says so where the kind is described.
    "pt2f_keys": lambda where, old, new: _rule_equal(where, old, new, "pt2f_keys"),
    # what a set field holds (a union member, a declared or non-zero enum value): adding or tightening it refuses
    # released files, loosening or removing it lets new writers make files released readers refuse: equal.
    # Compared from the first release with the kind, as pt2f_keys (1.1's readers checked each by hand).
    "pt2f_value": lambda where, old, new: _rule_equal(where, old, new, "pt2f_value"),
    # a table a writer may share (SPEC.md §10): every reader charges a shared table at each reference, so no file
    # changes verdict whether it is set or not: free
    "pt2f_shared": lambda where, old, new: [],
    # the minor that first defined a name (schema/ATTRIBUTES.md): adding it to a released name is fine (regen
    # checks it says the release that first had the name), changing or removing it later breaks
    "pt2f_since": lambda where, old, new: [] if old is None else [
        f"{where}: attribute pt2f_since changed {old!r} -> {new!r} (the minor that first defined a released name "
        "never changes: it is the first release under schema/history/ that has it, SPEC.md §8.5)"],
}


def _rule_unlisted(key: str):
    def rule(where, old, new):
        return [f"{where}: attribute {key} changed {old!r} -> {new!r}, and evolution.ATTRIBUTE_RULES has no "
                "compatibility rule for it, so any change fails (SPEC.md §8.5)"]
    return rule


def _attribute_changes(where: str, before: dict, after: dict, known: set) -> list[str]:
    """Changes of the attribute kinds the release used (`known`), each judged by its ATTRIBUTE_RULES line.

    A kind the release did not use at all states what the release left implicit
    (1.1's `pt2f_itemsize` states 1.0's sizes) and is checked from the release
    that first has it (SPEC.md §8.5)."""
    out = []
    for key in sorted((set(before) | set(after)) & known):
        if before.get(key) != after.get(key):
            out += ATTRIBUTE_RULES.get(key, _rule_unlisted(key))(where, before.get(key), after.get(key))
    return out


def _attribute_keys(view: dict) -> set:
    """Every `pt2f_*` attribute a schema's name view uses on some field or enum value."""
    keys = set()
    for what, v in view.items():
        if what.startswith(("table ", "struct ")):
            keys |= set(v.get("attributes", {}))
            for f in v["fields"].values():
                keys |= set(f["attributes"])
        elif what.startswith(("enum ", "union ")):
            keys |= set(v.get("own_attributes", {}))
            for attrs in v.get("attributes", {}).values():
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
                                                                     "align": o.minalign,
                                                                     "attributes": _attributes(o)}
    for e in s.enums:
        if e.is_union:
            members = {v.value: (v.name, s.objects[v.union_type.index].short if v.value else "NONE") for v in e.values}
            out[f"union {e.short}"] = {"members": members, "own_attributes": _attributes(e),
                                       "attributes": {v.value: _attributes(v) for v in e.values}}
        else:
            out[f"enum {e.short}"] = {"values": {v.name: v.value for v in e.values},
                                      "attributes": {v.name: _attributes(v) for v in e.values},
                                      "underlying": _type_text(s, e.underlying), "own_attributes": _attributes(e)}
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
            problems += _attribute_changes(what, before.get("attributes", {}), after.get("attributes", {}), known)
            problems += _diff_table(what, before["fields"], after["fields"], known)
        else:  # an enum or a union: its own attributes, then its values or members with theirs
            problems += _attribute_changes(what, before["own_attributes"], after["own_attributes"], known)
            problems += (_diff_enum if what.startswith("enum ") else _diff_union)(what, before, after, known)
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


def _diff_union(what, before, after, known) -> list[str]:
    out = []
    for index, (name, table) in before["members"].items():
        now = after["members"].get(index)
        if now is None:
            out.append(f"{what}.{name}: member {index} deleted")
            continue
        if now[0] != name:
            out.append(f"{what}.{name}: member {index} renamed to {now[0]!r}")
        elif now[1] != table:
            out.append(f"{what}.{name}: member {index} now holds table {now[1]}, not {table}")
        out += _attribute_changes(f"{what}.{name}", before["attributes"][index], after["attributes"][index], known)
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


def _since_value(where: str, text, version: tuple[int, int], problems: list) -> int | None:
    """The minor a `pt2f_since: "X.Y"` value names, None when absent; malformed values go to `problems`."""
    if text is None:
        return None
    m = re.fullmatch(r"(\d+)\.(\d+)", str(text))
    if not m or int(m[1]) != version[0] or not 0 < int(m[2]) <= version[1]:
        problems.append(f"{where}: pt2f_since {text!r} is not a minor after {version[0]}.0 and up to the schema's "
                        f"{version[0]}.{version[1]} (absent means {version[0]}.0)")
        return None
    return int(m[2])


def declared_minors(s, version: tuple[int, int]) -> tuple[dict, dict, list[str]]:
    """What the `pt2f_since` attributes of schema `s` say: (names, owners, problems).

    `names` has the shape of `minors()` ({('field'|'value'|'member', owner, key): minor}, X.0's left
    out); `owners` is {('table'|'struct'|'enum'|'union', name): minor} for every declaration. A name
    without the attribute takes its table's, enum's or union's, and a declaration without it is X.0's;
    a union field's `_type` companion takes the union field's. `problems` lists malformed values and
    names that claim to be older than their declaration.
    """
    from codegen.constants import UTYPE

    problems, names, owners = [], {}, {}
    for o in s.objects:
        kind = "struct" if o.is_struct else "table"
        own = _since_value(f"{kind} {o.short}", o.attributes.get("pt2f_since"), version, problems) or 0
        owners[(kind, o.short)] = own
        if o.is_struct:
            continue
        by_name = {f.name: f for f in o.fields}
        for f in o.fields:
            source = f
            if UTYPE in (f.type.base, f.type.element) and f.name[:-5] in by_name:
                source = by_name[f.name[:-5]]  # the hidden member index of a union field
            m = _since_value(f"table {o.short}.{f.name}", source.attributes.get("pt2f_since"), version, problems)
            names[("field", o.short, f.name)] = own if m is None else m
    for e in s.enums:
        kind = "union" if e.is_union else "enum"
        own = _since_value(f"{kind} {e.short}", e.attributes.get("pt2f_since"), version, problems) or 0
        owners[(kind, e.short)] = own
        for v in e.values:
            m = _since_value(f"{kind} {e.short}.{v.name}", v.attributes.get("pt2f_since"), version, problems)
            names[("member" if e.is_union else "value", e.short, v.value)] = own if m is None else m
    for (kind, owner, key), m in names.items():
        decl = owners.get(("table", owner), owners.get(("enum", owner), owners.get(("union", owner), 0)))
        if m < decl:
            problems.append(f"{owner}.{key}: pt2f_since {version[0]}.{m} is older than its declaration's "
                            f"{version[0]}.{decl}")
    table = {k: m for k, m in sorted(names.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))) if m > 0}
    return table, owners, problems


def _declarations(s) -> set:
    return ({("struct" if o.is_struct else "table", o.short) for o in s.objects}
            | {("union" if e.is_union else "enum", e.short) for e in s.enums})


def check_since(history: list, working, version: tuple[int, int]) -> tuple[dict, list[str]]:
    """The minor table from the `pt2f_since` attributes, and where they disagree with schema/history/.

    A name or declaration a release of the major has must say the minor of its first release; one no
    release has must say the working version's minor (the unreleased minor of the version line). The
    table returned equals `minors(history, working, version)` when the problems are empty.
    """
    table, owners, problems = declared_minors(working, version)
    truth = minors(history, working, version)
    releases = [(v, _since_keys(s)) for v, s in history if v[0] == version[0] and v <= version]

    def advice(what: str, said: int, true: int) -> str:
        first = next((v for v, keys in releases if what in keys), None)
        origin = (f"its first release is {first[0]}.{first[1]} (schema/history/)" if first else
                  f"no release under schema/history/ has it, so it is the working version {version[0]}.{version[1]}'s")
        fix = f'(pt2f_since: "{version[0]}.{true}")' if true else f"no pt2f_since (absent means {version[0]}.0)"
        return f"{what}: pt2f_since says {version[0]}.{said}, but {origin}: write {fix}"

    for key in sorted(set(table) | set(truth), key=str):
        if table.get(key, 0) != truth.get(key, 0):
            problems.append(advice(_since_label(key), table.get(key, 0), truth.get(key, 0)))
    first_decl = {}
    for v, s in [*[(v, s) for v, s in history if v[0] == version[0] and v < version], (version, working)]:
        for d in _declarations(s):
            first_decl.setdefault(d, v[1])
    for d, said in sorted(owners.items()):
        if said != first_decl[d]:
            problems.append(advice(f"{d[0]} {d[1]}", said, first_decl[d]))
    return table, problems


def _since_label(key) -> str:
    kind, owner, name = key
    return f"{owner}.{name}" if kind == "field" else f"{owner} value {name}" if kind == "value" else \
        f"{owner} member {name}"


def _since_keys(s) -> set:
    """The labels `check_since` reports, of every name and declaration of schema `s`."""
    return {_since_label(k) for k in _defined(s)} | {f"{k} {n}" for k, n in _declarations(s)}


# ---------------------------------------------------------------------------
# Release order and the container table
# ---------------------------------------------------------------------------

def check_release_order(history: list, working, version: tuple[int, int]) -> list[str]:
    """Why the working schema's version line and schema/history/ disagree (empty when they agree).

    The minor table credits every name no release has to the working version, so
    the line must be exactly one minor past the newest release of its major (or a
    new major's X.0), or equal to the newest release while the schema adds nothing
    to it. Anything else credits names to the wrong minor, and readers refuse valid
    files (a 1.2 line over a history without 1.1 makes 1.1's names "minor 2").
    """
    same_major = [(v, s) for v, s in history if v[0] == version[0]]
    newest = max((v for v, _ in history), default=None)
    label = f"{version[0]}.{version[1]}"
    if newest is not None and version < newest:
        return [f"the schema's version line says {label}, older than the newest release "
                f"{newest[0]}.{newest[1]} in schema/history/"]
    if not same_major:
        return [] if version[1] == 0 else [f"the schema's version line says {label}, but schema/history/ has no "
                                           f"{version[0]}.{version[1] - 1}: release it first (schema/release.py)"]
    last_v, last_s = same_major[-1]
    if version == last_v:
        added = sorted(set(_defined(working)) - set(_defined(last_s)), key=str)
        if added:
            return [f"the schema adds names to the released {label} ({', '.join(map(str, added[:5]))}"
                    f"{' ...' if len(added) > 5 else ''}): add a `/// {version[0]}.{version[1] + 1} (date)` "
                    "version line first"]
        return []
    if version[1] != last_v[1] + 1:
        missing = f"{version[0]}.{version[1] - 1}"
        return [f"the schema's version line says {label}, but the newest release in schema/history/ is "
                f"{last_v[0]}.{last_v[1]}: release {missing} first (python schema/release.py {missing}), or the "
                f"names {missing} added are credited to minor {version[1]}"]
    return []


def diff_container(old, new) -> list[str]:
    """Incompatible edits of the container table (codegen.container.Table) against a release's: an entry
    removed, renamed, renumbered, or its `since`, minimum alignment changed (SPEC.md §8.3-8.4)."""
    out = []
    for what, before, after in (("feature bit", old.features, new.features),
                                ("section kind", old.section_kinds, new.section_kinds)):
        now = {e.value: e for e in after}
        for e in before:
            g = now.get(e.value)
            if g is None:
                out.append(f"{what} {e.value} ({e.name}): removed (never freed or reused)")
            elif (g.name, g.since, g.min_alignment) != (e.name, e.since, e.min_alignment):
                out.append(f"{what} {e.value}: changed {e.name} since {e.since} align {e.min_alignment} -> "
                           f"{g.name} since {g.since} align {g.min_alignment}")
    return out


def _main(argv=None) -> int:
    """Print the working schema's diff against every release of its major, and what it adds."""
    import argparse
    import sys
    import tempfile

    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here.parent), str(here)]
    from codegen import container
    from codegen.bfbs import build_bfbs

    ap = argparse.ArgumentParser(description="The name-level compatibility diff of schema/pt2format.fbs against "
                                 "schema/history/ (SPEC.md §8.5); exit status 1 when anything breaks §8.1.")
    ap.add_argument("--fbs", type=Path, default=here / "pt2format.fbs", help="the schema to check")
    ap.add_argument("--history", type=Path, default=here / "history", help="the frozen releases")
    args = ap.parse_args(argv)
    version = schema_version(args.fbs.read_text())
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "w").mkdir()
        working = build_bfbs(Path(d) / "w", args.fbs)
        table = container.load(container.table_path(args.fbs))
        history = []
        for v, path in history_versions(args.history):
            (Path(d) / path.parent.name).mkdir()
            history.append((v, build_bfbs(Path(d) / path.parent.name, path)))
        print(f"working schema {version[0]}.{version[1]} ({args.fbs}); releases: "
              + (", ".join(f"{v[0]}.{v[1]}" for v, _ in history) or "none"))
        problems = check_release_order(history, working, version)
        for v, s in history:
            if v[0] != version[0]:
                continue
            found = diff(s, working)
            old_table = container.table_path(args.history / f"{v[0]}.{v[1]}" / "pt2format.fbs")
            if old_table.exists():
                found += diff_container(container.load(old_table), table)
            print(f"against {v[0]}.{v[1]}: " + ("compatible" if not found else f"{len(found)} problem(s)"))
            problems += [f"against {v[0]}.{v[1]}: {p}" for p in found]
        added = [k for k, m in minors(history, working, version).items() if m == version[1]]
        newest = max((v for v, _ in history if v[0] == version[0]), default=None)
        if newest != version:
            bits = [f"feature bit {e.value} {e.name}" for e in table.features if e.since == version]
            kinds = [f"section kind {e.value} {e.name}" for e in table.section_kinds if e.since == version]
            print(f"{version[0]}.{version[1]} adds {len(added)} name(s), {len(bits)} feature bit(s), "
                  f"{len(kinds)} section kind(s):")
            for kind, owner, key in added:
                print(f"  {kind} {owner}.{key}")
            for line in bits + kinds:
                print(f"  {line}")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(_main())
