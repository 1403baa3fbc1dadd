"""Emits, for the three readers, which minor of this major defines each field, enum value and union member
(the schema's `pt2f_since` attributes, checked against schema/history/)."""

from __future__ import annotations

import json
from pathlib import Path

from codegen.bfbs import FSchema, build_bfbs
from codegen.paths import HISTORY
from codegen.schema_view import header_line

def schema_minors(tmp: Path, s: FSchema, fbs: Path) -> tuple[tuple[int, int], dict]:
    """The working schema's version and which minor defines each of its names: its `pt2f_since`
    attributes, refused where they disagree with schema/history/ (schema/evolution.py check_since)."""
    import evolution  # schema/evolution.py (schema/ is on sys.path: regen.py runs from it)

    version = evolution.schema_version(fbs.read_text())
    history = []
    for v, path in evolution.history_versions(HISTORY):
        d = tmp / "history" / f"{v[0]}.{v[1]}"
        d.mkdir(parents=True)
        history.append((v, build_bfbs(d, path)))
    problems = evolution.check_release_order(history, s, version)
    if problems:  # the minor table would credit names to the wrong minor (SPEC.md §8.5)
        raise SystemExit("regen: " + "\n".join(problems))
    table, problems = evolution.check_since(history, s, version)
    if problems:  # the schema's pt2f_since attributes say another minor than the releases do
        raise SystemExit("regen: the pt2f_since attributes disagree with schema/history/ (schema/ATTRIBUTES.md):\n  "
                         + "\n  ".join(problems))
    return version, table


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


