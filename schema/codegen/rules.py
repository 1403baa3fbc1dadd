"""The checks of the schema's mechanical rules: `pt2f_index`, `pt2f_required`, `pt2f_keys` and `pt2f_value`.

A field `f: uint (pt2f_index: "Program.sym_exprs")` must be smaller than the
length of that vector of the enclosing Program; `... or -1` also allows -1,
`... from 1` allows 0 (none) to the length (1-based). Each reader gets one
generated walk, `check_field_rules(package)`, that visits only the tables from
which a rule can be reached (the fixed point strings.py uses too) and raises
a ValidationError whose path names the field, e.g.
`programs[0].graph.nodes[3].metadata.unbacked_bindings[0].symbol`. Paths are
built only on failure: Python adds prefixes as the error unwinds, C++ and
TypeScript keep a chain of frames on the stack.

A `pt2f_required` table or string field that is absent is a ValidationError
"required field is missing" naming it; a table's presence checks come before
its value, index and key checks. `pt2f_keys: "name sorted|unique"` on a vector
of tables checks the elements' names in the parent's walk (a sorted vector by
code point, as Python compares str); `pt2f_value` checks that a union field
holds a member or an enum field a declared / non-zero value.

Ranges that depend on where the value sits (a tensor reference in a subclass
context, a part that must name an earlier row, a SymExpr symbol only for
SYMBOL nodes) stay with the hand-written graph rules of each validator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen.constants import INT_RANGES, UTYPE

_RULE = re.compile(r"(\w+)\.(\w+)(?: (or -1|from 1))?")
_KEYS = re.compile(r"(\w+) (sorted|unique)")
_VALUE_MODES = {"member", "declared", "nonzero", "declared nonzero"}


@dataclass(frozen=True)
class ValueRule:
    """`pt2f_value`: "member" -- a union field holds a member; "declared" / "nonzero" / "declared nonzero" -- an
    enum field holds one of its enum's values / not 0 (UNSPECIFIED) / both."""
    field: str
    mode: str
    allowed: tuple = ()  # enum values a "declared" field may hold, 0 left out for "declared nonzero"

    @property
    def declared(self) -> bool:
        return "declared" in self.mode

    def message(self) -> str:
        if self.mode == "member":
            return "union value is missing"
        if self.mode == "nonzero":
            return f"{self.field} is UNSPECIFIED"
        return f"unknown {self.field}" if self.mode == "declared" else f"unknown or unspecified {self.field}"

    def expected(self) -> str:
        v = self.allowed
        if len(v) == 2:
            return f"{v[0]} or {v[1]}"
        if self.contiguous():
            return f"{v[0]} to {v[-1]}"
        return ", ".join(map(str, v))

    def contiguous(self) -> bool:
        return list(self.allowed) == list(range(self.allowed[0], self.allowed[-1] + 1))


@dataclass(frozen=True)
class Keys:
    """`field: [Elem] (pt2f_keys: "key sorted|unique")`: the elements' `key` strings strictly increase by code point
    (sorted; an absent key is a missing required field) or never repeat (unique; absent keys are not compared)."""
    field: str
    elem: str  # the element table
    key: str  # its string field
    mode: str  # "sorted" | "unique"

    def message(self) -> str:
        words = re.sub(r"(?<!^)(?=[A-Z])", " ", self.elem).lower()
        if self.mode == "sorted":
            plural = words[:-1] + "ies" if words.endswith("y") else words + "s"
            return f"{plural} must be sorted by {self.key}, {self.key}s unique"
        return f"{words} {self.key}s must be unique"


@dataclass(frozen=True)
class Rule:
    field: str
    shape: str  # "scalar" | "vector" (of integers)
    owner: str  # the table whose vector is indexed: Package or Program
    target: str  # that vector's field name
    mode: str  # "" | "or -1" | "from 1"

    @property
    def var(self) -> str:
        return f"{self.owner}_{self.target}"

    @property
    def noun(self) -> str:
        return self.target.rstrip("s").replace("_", " ")


class IndexRules:
    """The rules of one schema and the tables a walk must visit to reach them."""

    def __init__(self, schema, m):
        self.m = m
        self.tables = {o.short: o for o in schema.objects if not o.is_struct}
        self.structs = {o.short: o for o in schema.objects if o.is_struct}
        self.root = schema.root.short
        self.rules: dict[str, list[Rule]] = {}
        self.required: dict[str, list[str]] = {}
        self.keys: dict[str, list[Keys]] = {}
        self.values: dict[str, list[ValueRule]] = {}
        enums = {e.short: e for e in schema.enums}
        for o in schema.objects:
            for f in o.fields:
                if "pt2f_value" in f.attributes and not f.deprecated:
                    self.values.setdefault(o.short, []).append(self._value(o, f, enums))
                if "pt2f_keys" in f.attributes and not f.deprecated:
                    self.keys.setdefault(o.short, []).append(self._keys(o, f))
                if "pt2f_required" in f.attributes and not f.deprecated:
                    if o.is_struct or m.field_spec(f)[0] not in ("string", "table"):
                        raise SystemExit(f"regen: {o.short}.{f.name}: pt2f_required needs a string or table field "
                                         "of a table")
                    self.required.setdefault(o.short, []).append(f.name)
                text = f.attributes.get("pt2f_index")
                if text is None or f.deprecated:
                    continue
                mt = _RULE.fullmatch(text)
                kind, elem, _, _ = m.field_spec(f)
                if mt is None or kind not in ("scalar", "vector") or (kind == "scalar" and elem not in INT_RANGES) or (kind == "vector" and elem not in INT_RANGES):
                    raise SystemExit(f"regen: {o.short}.{f.name}: pt2f_index {text!r} needs an integer field or vector "
                                     "and 'Table.field[ or -1| from 1]'")
                owner, target, mode = mt.group(1), mt.group(2), mt.group(3) or ""
                if owner not in self.tables or target not in {g.name for g in self.tables[owner].fields}:
                    raise SystemExit(f"regen: {o.short}.{f.name}: pt2f_index names unknown {owner}.{target}")
                self.rules.setdefault(o.short, []).append(Rule(f.name, "vector" if kind == "vector" else "scalar",
                                                               owner, target, mode))
        self.vars = sorted({r.var for rs in self.rules.values() for r in rs})
        self.sets = {}  # table -> [(var, field)] lengths recorded on entering it
        for rs in self.rules.values():
            for r in rs:
                self.sets.setdefault(r.owner, set()).add((r.var, r.target))
        self.sets = {k: sorted(v) for k, v in self.sets.items()}
        self.reach = self._reach()

    def _value(self, o, f, enums) -> ValueRule:
        mode = f.attributes["pt2f_value"]
        kind, _, ref, _ = self.m.field_spec(f)
        where = f"regen: {o.short}.{f.name}: pt2f_value {mode!r}"
        if o.is_struct or mode not in _VALUE_MODES or (kind == "union") != (mode == "member") or kind not in ("union", "enum"):
            raise SystemExit(f"{where} needs a union field and 'member', or an enum field and 'declared', 'nonzero' "
                             "or 'declared nonzero'")
        if kind == "union":
            return ValueRule(f.name, mode)
        values = sorted(v.value for v in enums[ref].values)
        if mode == "declared nonzero":
            values = [v for v in values if v != 0]
        if not values or (mode != "declared" and 0 not in {v.value for v in enums[ref].values}):
            raise SystemExit(f"{where}: {ref} needs a value 0 (UNSPECIFIED) for 'nonzero'")
        return ValueRule(f.name, mode, tuple(values))

    def _keys(self, o, f) -> Keys:
        text = f.attributes["pt2f_keys"]
        mt = _KEYS.fullmatch(text)
        kind, elem, ref, _ = self.m.field_spec(f)
        where = f"regen: {o.short}.{f.name}: pt2f_keys {text!r}"
        if o.is_struct or mt is None or kind != "vector" or elem != "table":
            raise SystemExit(f"{where} needs a vector of tables and 'key sorted|unique'")
        key = next((g for g in self.tables[ref].fields if g.name == mt.group(1) and not g.deprecated), None)
        if key is None or self.m.field_spec(key)[0] != "string":
            raise SystemExit(f"{where}: {ref}.{mt.group(1)} is not a string field")
        return Keys(f.name, ref, key.name, mt.group(2))

    def struct_fields(self, o):
        """(field, struct name, is_vector) for struct-typed fields whose struct has rules."""
        for f in o.fields:
            if f.deprecated or f.type.base == UTYPE:
                continue
            kind, elem, ref, _ = self.m.field_spec(f)
            if ref in self.structs and ref in self.rules and (kind == "struct" or (kind == "vector" and elem == "struct")):
                yield f, ref, kind == "vector"

    def children(self, o):
        """(field, [member tables], is_vector, is_union) for table-typed fields."""
        for f in o.fields:
            if f.deprecated or f.type.base == UTYPE:
                continue
            kind, elem, ref, _ = self.m.field_spec(f)
            if kind == "table" or (kind == "vector" and elem == "table"):
                yield f, [ref], kind == "vector", False
            elif kind == "union":
                yield f, self.m.unions()[ref], False, True

    def _reach(self) -> set:
        reach = {n for n, o in self.tables.items()
                 if n in self.rules or n in self.required or n in self.keys or n in self.values or any(self.struct_fields(o)) or n in self.sets}
        changed = True
        while changed:
            changed = False
            for n, o in self.tables.items():
                if n not in reach and any(r in reach for _, refs, _, _ in self.children(o) for r in refs):
                    reach.add(n)
                    changed = True
        return reach

    def table_rules(self, o) -> list[Rule]:
        return self.rules.get(o.short, [])


# ---------------------------------------------------------------------------
# Python


def _py_check(r: Rule, value: str, path: str, indent: str) -> str:
    """Statements raising when `value` breaks rule `r`; `path` is a Python expression."""
    n = f"x.{r.var}"
    if r.mode == "or -1":
        cond, expected = f"{value} != -1 and not 0 <= {value} < {n}", f'f"-1 or < {{{n}}}"'
    elif r.mode == "from 1":
        cond, expected = f"{value} > {n}", f'f"<= {{{n}}}"'
    else:
        cond, expected = f"{value} >= {n}", f'f"< {{{n}}}"'
    return (f"{indent}if {cond}:\n{indent}    raise _bad({r.noun!r}, {path}, {expected}, {value})\n")


def _py_keys(k: Keys) -> str:
    """Statements checking the keys of vector `o.<field>`; the path is built only on failure."""
    path = f'f"{k.field}[{{i}}].{k.key}"'
    out = [f"    {'prev = None' if k.mode == 'sorted' else 'seen = set()'}\n",
           f"    for i, c in enumerate(o.{k.field}):\n        if c is None:\n            continue\n"
           f"        v = c.{k.key}\n"]
    if k.mode == "sorted":
        out.append(f"        if v is None:\n            raise _missing({path})\n"
                   f"        if prev is not None and not prev < v:\n"
                   f"            raise ValidationError({k.message()!r}, path={path}, expected=f\"a {k.key} after {{prev!r}}\",\n"
                   f"                                  got=repr(v))\n        prev = v\n")
    else:
        out.append(f"        if v is None:\n            continue\n        if v in seen:\n"
                   f"            raise ValidationError({k.message()!r}, path={path}, got=repr(v))\n        seen.add(v)\n")
    return "".join(out)


def _py_value(v: ValueRule, value: str, path: str, indent: str) -> str:
    """Statements raising when `value` (an expression) breaks pt2f_value rule `v`."""
    if v.mode == "member":
        return f"{indent}if {value} is None:\n{indent}    raise ValidationError({v.message()!r}, path={path})\n"
    if v.mode == "nonzero":
        return f"{indent}if {value} == 0:\n{indent}    raise ValidationError({v.message()!r}, path={path})\n"
    return (f"{indent}if {value} not in {set(v.allowed)!r}:\n{indent}    raise ValidationError({v.message()!r}, "
            f"path={path}, expected={v.expected()!r}, got={value})\n")


def _only_union(ir: IndexRules, name: str) -> str | None:
    """The union field of table `name` when checking it is only dispatching that union (no rules of its own but
    that union's "member" rule, which the dispatching loop checks)."""
    o = ir.tables[name]
    if ir.rules.get(name) or ir.required.get(name) or ir.keys.get(name) or name in ir.sets or any(ir.struct_fields(o)):
        return None
    live = [(f, is_union) for f, refs, _, is_union in ir.children(o) if any(r in ir.reach for r in refs)]
    u = live[0][0].name if len(live) == 1 and live[0][1] else None
    if any(v.mode != "member" or v.field != u for v in ir.values.get(name, [])):
        return None
    return u


def gen_python(schema, m, header: str) -> str:
    ir = IndexRules(schema, m)
    out = [header, '"""Index-range, presence and key checks from the schema\'s pt2f_index, pt2f_required and pt2f_keys attributes (schema/codegen/rules.py)."""\n\n',
           "from pt2format.errors import Pt2FormatError as _E\nfrom pt2format.errors import ValidationError\n\n\n",
           "class _Ctx:\n    __slots__ = (" + "".join(f"{v!r}, " for v in ir.vars) + "'checked', )\n\n\n",
           "def _missing(path):\n    return ValidationError(\"required field is missing\", path=path)\n\n\n"
           "def _bad(noun, path, expected, got):\n"
           "    return ValidationError(f\"{noun} index out of range\", path=path, expected=expected, got=got)\n"]
    for name in sorted(ir.reach):
        o = ir.tables[name]
        body = [f"    if o.{f} is None:\n        raise _missing({f!r})\n" for f in ir.required.get(name, [])]
        body += [_py_value(v, f"o.{v.field}", repr(v.field), "    ") for v in ir.values.get(name, [])]
        for var, target in ir.sets.get(name, []):
            body.append(f"    x.{var} = len(o.{target})\n")
        if ir.sets.get(name):  # what was checked under other lengths is checked again
            body.append("    x.checked = set()\n")
        for r in ir.table_rules(o):
            if r.shape == "scalar":
                body.append(_py_check(r, f"o.{r.field}", repr(r.field), "    "))
            else:
                body.append(f"    for i, v in enumerate(o.{r.field}):\n")
                body.append(_py_check(r, "v", f'f"{r.field}[{{i}}]"', "        "))
        body += [_py_keys(k) for k in ir.keys.get(name, [])]
        for f, ref, is_vector in ir.struct_fields(o):
            for r in ir.rules[ref]:
                if is_vector:
                    body.append(f"    for i, s in enumerate(o.{f.name}):\n")
                    body.append(_py_check(r, f"s.{r.field}", f'f"{f.name}[{{i}}].{r.field}"', "        "))
                else:
                    body.append(f"    s = o.{f.name}\n    if s is not None:\n")
                    body.append(_py_check(r, f"s.{r.field}", repr(f"{f.name}.{r.field}"), "        "))
        for f, refs, is_vector, is_union in ir.children(o):
            live = [r for r in refs if r in ir.reach]
            if not live:
                continue
            if is_union:
                body.append(f"    c = _U_{name}_{f.name}.get(type(o.{f.name}))\n    if c is not None:\n"
                            f"        try:\n            c(o.{f.name}, x)\n        except _E as e:\n"
                            f"            raise e.with_context(path_prefix={f.name!r})\n")
            elif is_vector and (u := _only_union(ir, live[0])) is not None:
                # An element that is just a union (Argument, NamedArgument): dispatch here, one call fewer each.
                body.append(f"    for i, c in enumerate(o.{f.name}):\n        if c is None:\n            continue\n")
                body += [_py_value(v, f"c.{u}", f'f"{f.name}[{{i}}].{u}"', "        ") for v in ir.values.get(live[0], [])]
                body.append(f"        k = _U_{live[0]}_{u}.get(type(c.{u}))\n        if k is not None:\n"
                            f"            try:\n                k(c.{u}, x)\n            except _E as e:\n"
                            f"                raise e.with_context(path_prefix=f\"{f.name}[{{i}}].{u}\")\n")
            elif is_vector:
                body.append(f"    for i, c in enumerate(o.{f.name}):\n        if c is None:\n            continue\n"
                            f"        try:\n            c_{live[0]}(c, x)\n"
                            f"        except _E as e:\n            raise e.with_context(path_prefix=f\"{f.name}[{{i}}]\")\n")
            else:
                body.append(f"    if o.{f.name} is not None:\n        try:\n            c_{live[0]}(o.{f.name}, x)\n"
                            f"        except _E as e:\n            raise e.with_context(path_prefix={f.name!r})\n")
        if body and "pt2f_shared" in o.attributes:
            # A shared object (one per offset, SPEC.md §10) is checked once under one program's lengths.
            body = ["    if id(o) in x.checked:\n        return\n", *body, "    x.checked.add(id(o))\n"]
        out.append(f"\n\ndef c_{name}(o, x):\n" + ("".join(body) or "    pass\n"))
    unions = []
    for name in sorted(ir.reach):
        for f, refs, _, is_union in ir.children(ir.tables[name]):
            live = [r for r in refs if r in ir.reach]
            if is_union and live:
                unions.append(f"_U_{name}_{f.name} = {{" + ", ".join(f"_m.{r}: c_{r}" for r in live) + "}\n")
    out.append("\n\nfrom pt2format._generated import model as _m  # noqa: E402\n\n" + "".join(unions))
    out.append(f"\n\ndef check_field_rules(root) -> None:\n"
               f"    \"\"\"Raise ValidationError on the first pt2f_required field absent or pt2f_index field out of range.\"\"\"\n"
               f"    x = _Ctx()\n    x.checked = set()  # id of each shared object checked (kept alive by the tree)\n"
               f"    c_{ir.root}(root, x)\n")
    return "".join(out)


# ---------------------------------------------------------------------------
# C++


def _cxx_check(r: Rule, value: str, frame: str, leaf: str, index: str | None) -> str:
    n = f"x.{r.var}"
    if r.mode == "or -1":
        cond = f"{value} != -1 && ({value} < 0 || uint64_t({value}) >= {n})"
        expected = f'"-1 or < " + std::to_string({n})'
    elif r.mode == "from 1":
        cond, expected = f"uint64_t({value}) > {n}", f'"<= " + std::to_string({n})'
    else:
        cond, expected = f"uint64_t({value}) >= {n}", f'"< " + std::to_string({n})'
    idx = index if index is not None else "-1"
    return (f"if ({cond}) bad(\"{r.noun}\", {frame}, \"{leaf}\", {idx}, {expected}, std::to_string({value}));")


def _cxx_keys(k: Keys) -> str:
    """Statements checking the keys of vector `o-><field>()`; string views compare bytes (UTF-8: code point order)."""
    out = [f"  if (const auto *v = o->{k.field}()) {{\n",
           "    std::string_view prev;\n    bool have = false;\n" if k.mode == "sorted" else
           "    std::unordered_set<std::string_view> seen;\n",
           "    for (uint32_t i = 0; i < v->size(); ++i) {\n      const auto *c = v->Get(i);\n      if (!c) continue;\n"
           f"      const auto *s = c->{k.key}();\n"]
    if k.mode == "sorted":
        out.append(f"      if (!s) key_missing(f, \"{k.field}\", i, \"{k.key}\");\n"
                   "      const std::string_view key(s->c_str(), s->size());\n"
                   f"      if (have && !(prev < key))\n        key_fail(f, \"{k.field}\", i, \"{k.key}\", \"{k.message()}\",\n"
                   f"                 \"a {k.key} after '\" + std::string(prev) + \"'\", key);\n"
                   "      prev = key;\n      have = true;\n")
    else:
        out.append("      if (!s) continue;\n      const std::string_view key(s->c_str(), s->size());\n"
                   f"      if (!seen.insert(key).second) key_fail(f, \"{k.field}\", i, \"{k.key}\", \"{k.message()}\", \"\", key);\n")
    out.append("    }\n  }\n")
    return "".join(out)


def _cxx_value(v: ValueRule) -> str:
    if v.mode == "member":
        return (f"  if (uint32_t(o->{v.field}_type()) == 0 || !o->{v.field}()) "
                f"value_fail(f, \"{v.field}\", \"{v.message()}\", \"\", \"\");\n")
    if v.mode == "nonzero":
        return f"  if (uint32_t(o->{v.field}()) == 0) value_fail(f, \"{v.field}\", \"{v.message()}\", \"\", \"\");\n"
    a = v.allowed
    if v.contiguous():  # k is unsigned: a range from 0 has no lower test (-Wtype-limits)
        cond = f"k > {a[-1]}" if a[0] == 0 else f"k < {a[0]} || k > {a[-1]}"
    else:
        cond = " && ".join(f"k != {x}" for x in a)
    return (f"  {{\n    const uint32_t k = uint32_t(o->{v.field}());\n    if ({cond})\n"
            f"      value_fail(f, \"{v.field}\", \"{v.message()}\", \"{v.expected()}\", std::to_string(k));\n  }}\n")


def gen_cpp(schema, m, header: str) -> str:
    ir = IndexRules(schema, m)
    out = [header, "// Index-range, presence and key checks from the schema's pt2f_index, pt2f_required and pt2f_keys\n"
           "// attributes (schema/codegen/rules.py).\n#pragma once\n\n#include <cstdint>\n#include <string>\n#include <string_view>\n#include <unordered_set>\n\n#include \"pt2f/error.h\"\n"
           "#include \"pt2format_generated.h\"\n\nnamespace pt2f::rules {\n\n"
           "/// One step of the path to the table being checked; the path string is built only on failure.\n"
           "struct Frame {\n  const Frame *parent;\n  const char *field;\n  int64_t index;  // -1: not a vector element\n};\n\n"
           "inline std::string path_of(const Frame *f) {\n  std::string out;\n"
           "  for (; f; f = f->parent) {\n    std::string step = f->field;\n"
           "    if (f->index >= 0) step += \"[\" + std::to_string(f->index) + \"]\";\n"
           "    out = out.empty() ? step : step + \".\" + out;\n  }\n  return out;\n}\n\n"
           "struct Ctx {\n" + "".join(f"  uint64_t {v} = 0;\n" for v in ir.vars) + "};\n\n"
           "[[noreturn]] inline void bad(const char *noun, const Frame *f, const char *field, int64_t index,\n"
           "                             const std::string &expected, const std::string &got) {\n"
           "  const Frame leaf{f, field, index};\n  Error::Where w;\n  w.section = \"program\";\n"
           "  w.path = path_of(&leaf);\n  w.expected = expected;\n  w.got = got;\n"
           "  throw Error(ErrorKind::Validation, std::string(noun) + \" index out of range\", w);\n}\n\n"
           "[[noreturn]] inline void missing(const Frame *f, const char *field) {\n"
           "  const Frame leaf{f, field, -1};\n  Error::Where w;\n  w.section = \"program\";\n  w.path = path_of(&leaf);\n"
           "  throw Error(ErrorKind::Validation, \"required field is missing\", w);\n}\n\n"
           "[[noreturn]] inline void key_missing(const Frame *f, const char *field, uint32_t i, const char *key) {\n"
           "  const Frame elem{f, field, int64_t(i)};\n  missing(&elem, key);\n}\n\n"
           "[[noreturn]] inline void key_fail(const Frame *f, const char *field, uint32_t i, const char *key,\n"
           "                                  const char *message, const std::string &expected, std::string_view got) {\n"
           "  const Frame elem{f, field, int64_t(i)};\n  const Frame leaf{&elem, key, -1};\n  Error::Where w;\n"
           "  w.section = \"program\";\n  w.path = path_of(&leaf);\n  w.expected = expected;\n"
           "  w.got = \"'\" + std::string(got) + \"'\";\n  throw Error(ErrorKind::Validation, message, w);\n}\n\n"
           "[[noreturn]] inline void value_fail(const Frame *f, const char *field, const char *message,\n"
           "                                    const std::string &expected, const std::string &got) {\n"
           "  const Frame leaf{f, field, -1};\n  Error::Where w;\n  w.section = \"program\";\n  w.path = path_of(&leaf);\n"
           "  w.expected = expected;\n  w.got = got;\n  throw Error(ErrorKind::Validation, message, w);\n}\n\n"]
    names = sorted(ir.reach)
    out += [f"inline void check_{n}(const pt2format::{n} *o, Ctx &x, const Frame *f);\n" for n in names]
    for name in names:
        o = ir.tables[name]
        body = [f"  if (!o->{f}()) missing(f, \"{f}\");\n" for f in ir.required.get(name, [])]
        body += [_cxx_value(v) for v in ir.values.get(name, [])]
        for var, target in ir.sets.get(name, []):
            body.append(f"  x.{var} = o->{target}() ? o->{target}()->size() : 0;\n")
        for r in ir.table_rules(o):
            if r.shape == "scalar":
                body.append("  " + _cxx_check(r, f"o->{r.field}()", "f", r.field, None) + "\n")
            else:
                body.append(f"  if (const auto *v = o->{r.field}())\n    for (uint32_t i = 0; i < v->size(); ++i) "
                            + _cxx_check(r, "v->Get(i)", "f", r.field, "i") + "\n")
        body += [_cxx_keys(k) for k in ir.keys.get(name, [])]
        for f, ref, is_vector in ir.struct_fields(o):
            for r in ir.rules[ref]:
                if is_vector:
                    body.append(f"  if (const auto *v = o->{f.name}())\n    for (uint32_t i = 0; i < v->size(); ++i) {{\n"
                                f"      const Frame sf{{f, \"{f.name}\", int64_t(i)}};\n"
                                f"      {_cxx_check(r, f'v->Get(i)->{r.field}()', '&sf', r.field, None)}\n    }}\n")
                else:
                    body.append(f"  if (const auto *s = o->{f.name}()) {{\n      const Frame sf{{f, \"{f.name}\", -1}};\n"
                                f"      {_cxx_check(r, f's->{r.field}()', '&sf', r.field, None)}\n  }}\n")
        for f, refs, is_vector, is_union in ir.children(o):
            live = [r for r in refs if r in ir.reach]
            if not live:
                continue
            if is_union:
                body.append(f"  {{\n    const Frame cf{{f, \"{f.name}\", -1}};\n")
                for r in live:
                    body.append(f"    if (const auto *c = o->{f.name}_as_{r}()) check_{r}(c, x, &cf);\n")
                body.append("  }\n")
            elif is_vector:
                body.append(f"  if (const auto *v = o->{f.name}())\n    for (uint32_t i = 0; i < v->size(); ++i) {{\n"
                            f"      const Frame cf{{f, \"{f.name}\", int64_t(i)}};\n"
                            f"      check_{live[0]}(v->Get(i), x, &cf);\n    }}\n")
            else:
                body.append(f"  if (const auto *c = o->{f.name}()) {{\n    const Frame cf{{f, \"{f.name}\", -1}};\n"
                            f"    check_{live[0]}(c, x, &cf);\n  }}\n")
        out.append(f"\ninline void check_{name}(const pt2format::{name} *o, Ctx &x, const Frame *f) {{\n"
                   "  (void)x;\n  (void)f;\n" + "".join(body) + "}\n")
    out.append(f"\n/// Throws a Validation error on the first pt2f_index field out of its range.\n"
               f"inline void check_field_rules(const pt2format::{ir.root} *root) {{\n  Ctx x;\n"
               f"  check_{ir.root}(root, x, nullptr);\n}}\n\n}}  // namespace pt2f::rules\n")
    return "".join(out)


# ---------------------------------------------------------------------------
# TypeScript


def _ts_check(r: Rule, value: str, frame: str, leaf: str, index: str) -> str:
    n = f"x.{r.var}"
    if r.mode == "or -1":
        cond, expected = f"{value} !== -1 && ({value} < 0 || {value} >= {n})", f"`-1 or < ${{{n}}}`"
    elif r.mode == "from 1":
        cond, expected = f"{value} > {n}", f"`<= ${{{n}}}`"
    else:
        cond, expected = f"{value} >= {n}", f"`< ${{{n}}}`"
    return f"if ({cond}) bad('{r.noun}', {frame}, '{leaf}', {index}, {expected}, {value});"


def _ts_keys(k: Keys) -> str:
    """Statements checking the keys of vector `o['<field>']`, in code point order as Python compares str."""
    out = [f"  {{\n    const cs = tables(o['{k.field}']);\n",
           "    let prev: string | null = null;\n" if k.mode == "sorted" else "    const seen = new Set<string>();\n",
           "    for (let i = 0; i < cs.length; i++) {\n      const c = cs[i] ?? null;\n      if (c === null) continue;\n"
           f"      const s = (c['{k.key}'] ?? null) as string | null;\n"]
    elem = f"{{ parent: f, field: '{k.field}', index: i }}"
    if k.mode == "sorted":
        out.append(f"      if (s === null) missing({elem}, '{k.key}');\n"
                   f"      if (prev !== null && !cpLess(prev, s)) keyFail({elem}, '{k.key}', '{k.message()}', "
                   f"`a {k.key} after ${{JSON.stringify(prev)}}`, s);\n      prev = s;\n")
    else:
        out.append(f"      if (s === null) continue;\n"
                   f"      if (seen.has(s)) keyFail({elem}, '{k.key}', '{k.message()}', undefined, s);\n      seen.add(s);\n")
    out.append("    }\n  }\n")
    return "".join(out)


def _ts_value(v: ValueRule) -> str:
    if v.mode == "member":
        return f"  if (o['{v.field}'] === null || o['{v.field}'] === undefined) valueFail(f, '{v.field}', '{v.message()}');\n"
    if v.mode == "nonzero":
        return f"  if (n(o['{v.field}']) === 0) valueFail(f, '{v.field}', '{v.message()}');\n"
    a = v.allowed
    cond = f"k < {a[0]} || k > {a[-1]}" if v.contiguous() else " && ".join(f"k !== {x}" for x in a)
    return (f"  {{\n    const k = n(o['{v.field}']);\n    if ({cond}) valueFail(f, '{v.field}', '{v.message()}', "
            f"'{v.expected()}', k);\n  }}\n")


def gen_ts(schema, m, header: str) -> str:
    ir = IndexRules(schema, m)
    out = [header, "// Index-range, presence and key checks from the schema's pt2f_index, pt2f_required and pt2f_keys\n"
           "// attributes (schema/codegen/rules.py).\n// Self-contained (src/generated compiles on its own): the caller passes how to fail and how to name a\n"
           "// union member.\n\ntype TTable = { [field: string]: unknown };\ntype TValue = unknown;\n"
           "/** Throws the reader's ValidationError. */\n"
           "export type Fail = (message: string, path: string, expected?: string, got?: number | string) => never;\n"
           "/** The table name of a decoded union member. */\nexport type MemberName = (o: TTable) => string;\n\n"
           "let fail: Fail;\nlet memberName: MemberName;\n\n"
           "/** One step of the path to the table being checked; the path string is built only on failure. */\n"
           "interface Frame { readonly parent: Frame | null; readonly field: string; readonly index: number }\n\n"
           "function pathOf(f: Frame | null): string {\n  const steps: string[] = [];\n"
           "  for (; f !== null; f = f.parent) steps.push(f.index >= 0 ? `${f.field}[${f.index}]` : f.field);\n"
           "  return steps.reverse().join('.');\n}\n\n"
           "interface Ctx {\n" + "".join(f"  {v}: number;\n" for v in ir.vars) + "}\n\n"
           "function bad(noun: string, f: Frame | null, field: string, index: number, expected: string, got: number): never {\n"
           "  const path = pathOf({ parent: f, field, index });\n"
           "  return fail(`${noun} index out of range`, path, expected, got);\n}\n\n"
           "function missing(f: Frame | null, field: string): never {\n"
           "  return fail('required field is missing', pathOf({ parent: f, field, index: -1 }));\n}\n\n"
           "function valueFail(f: Frame | null, field: string, message: string, expected?: string, got?: number): never {\n"
           "  return fail(message, pathOf({ parent: f, field, index: -1 }), expected, got);\n}\n\n"
           "function keyFail(f: Frame, field: string, message: string, expected: string | undefined, got: string): never {\n"
           "  return fail(message, pathOf({ parent: f, field, index: -1 }), expected, JSON.stringify(got));\n}\n\n"
           "/** Code point order (= UTF-8 byte order), as Python compares str. */\n"
           "function cpLess(a: string, b: string): boolean {\n  const k = Math.min(a.length, b.length);\n"
           "  for (let i = 0; i < k; i++) {\n    const p = a.codePointAt(i)!;\n    const q = b.codePointAt(i)!;\n"
           "    if (p !== q) return p < q;\n    if (p > 0xffff) i++;\n  }\n  return a.length < b.length;\n}\n\n"
           "const n = (v: TValue | undefined): number => Number((v ?? 0) as number | bigint);\n"
           "const len = (v: TValue | undefined): number => ((v ?? []) as TValue[]).length;\n"
           "const tables = (v: TValue | undefined): TTable[] => (v ?? []) as TTable[];\n"]
    names = sorted(ir.reach)
    for name in names:
        o = ir.tables[name]
        body = [f"  if (o['{f}'] === null || o['{f}'] === undefined) missing(f, '{f}');\n" for f in ir.required.get(name, [])]
        body += [_ts_value(v) for v in ir.values.get(name, [])]
        for var, target in ir.sets.get(name, []):
            body.append(f"  x.{var} = len(o['{target}']);\n")
        for r in ir.table_rules(o):
            if r.shape == "scalar":
                body.append(f"  {{\n    const v = n(o['{r.field}']);\n    {_ts_check(r, 'v', 'f', r.field, '-1')}\n  }}\n")
            else:
                body.append(f"  {{\n    const vs = (o['{r.field}'] ?? []) as TValue[];\n"
                            f"    for (let i = 0; i < vs.length; i++) {{\n      const v = n(vs[i]);\n"
                            f"      {_ts_check(r, 'v', 'f', r.field, 'i')}\n    }}\n  }}\n")
        body += [_ts_keys(k) for k in ir.keys.get(name, [])]
        for f, ref, is_vector in ir.struct_fields(o):
            for r in ir.rules[ref]:
                if is_vector:
                    body.append(f"  {{\n    const ss = tables(o['{f.name}']);\n    for (let i = 0; i < ss.length; i++) {{\n"
                                f"      const v = n(ss[i]!['{r.field}']);\n"
                                f"      {_ts_check(r, 'v', f'{{ parent: f, field: {f.name!r}, index: i }}', r.field, '-1')}\n"
                                "    }\n  }\n")
                else:
                    body.append(f"  {{\n    const s = (o['{f.name}'] ?? null) as TTable | null;\n    if (s !== null) {{\n"
                                f"      const v = n(s['{r.field}']);\n"
                                f"      {_ts_check(r, 'v', f'{{ parent: f, field: {f.name!r}, index: -1 }}', r.field, '-1')}\n"
                                "    }\n  }\n")
        for f, refs, is_vector, is_union in ir.children(o):
            live = [r for r in refs if r in ir.reach]
            if not live:
                continue
            if is_union:
                body.append(f"  {{\n    const c = (o['{f.name}'] ?? null) as TTable | null;\n"
                            f"    if (c !== null) {{\n      const k = U_{name}_{f.name}[memberName(c)];\n"
                            f"      if (k !== undefined) k(c, x, {{ parent: f, field: '{f.name}', index: -1 }});\n    }}\n  }}\n")
            elif is_vector:
                body.append(f"  {{\n    const cs = tables(o['{f.name}']);\n"
                            f"    for (let i = 0; i < cs.length; i++) {{\n      const c = cs[i] ?? null;\n"
                            f"      if (c !== null) check{live[0]}(c, x, {{ parent: f, field: '{f.name}', index: i }});\n    }}\n  }}\n")
            else:
                body.append(f"  {{\n    const c = (o['{f.name}'] ?? null) as TTable | null;\n"
                            f"    if (c !== null) check{live[0]}(c, x, {{ parent: f, field: '{f.name}', index: -1 }});\n  }}\n")
        out.append(f"\nfunction check{name}(o: TTable, x: Ctx, f: Frame | null): void {{\n" + "".join(body) + "}\n")
    for name in names:
        for f, refs, _, is_union in ir.children(ir.tables[name]):
            live = [r for r in refs if r in ir.reach]
            if is_union and live:
                out.append(f"\nconst U_{name}_{f.name}: Record<string, (o: TTable, x: Ctx, f: Frame) => void> = {{ "
                           + ", ".join(f"{r}: check{r}" for r in live) + " };\n")
    init = ", ".join(f"{v}: 0" for v in ir.vars)
    out.append(f"\n/** Fails on the first pt2f_required field absent or pt2f_index field out of its range. */\n"
               f"export function checkFieldRules(root: TTable, onFail: Fail, member: MemberName): void {{\n"
               f"  fail = onFail;\n  memberName = member;\n  check{ir.root}(root, {{ {init} }}, null);\n}}\n")
    return "".join(out)
