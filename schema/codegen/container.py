"""Emits the container's feature bits and section kinds (schema/container.toml) for the three readers.

The table beside the schema is the one place these numbers are written; every
reader imports the generated constants, so no reader can know a bit another
does not (tests/schema/test_container_table.py compares what each reader
compiled in against the table).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from codegen.schema_view import header_line

_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_VERSION = re.compile(r"(\d+)\.(\d+)\Z")


@dataclass(frozen=True)
class Entry:
    """One feature bit (`value` is the bit number) or section kind."""

    value: int
    name: str
    since: tuple[int, int]
    doc: str
    min_alignment: int = 0

    @property
    def camel(self) -> str:
        return "".join(w.capitalize() for w in self.name.split("_"))


@dataclass(frozen=True)
class Table:
    features: tuple[Entry, ...]
    section_kinds: tuple[Entry, ...]

    @property
    def known_features(self) -> int:
        return sum(1 << f.value for f in self.features)


def table_path(fbs: Path) -> Path:
    """The container table of a schema: `container.toml` beside its `pt2format.fbs`."""
    return fbs.parent / "container.toml"


def load(path: Path) -> Table:
    """The table at `path`, with its own rules checked (names, numbering, versions); SystemExit names the entry."""
    raw = tomllib.loads(path.read_text())

    def entries(key: str, number: str) -> tuple[Entry, ...]:
        out = []
        for i, row in enumerate(raw.get(key, [])):
            where = f"{path.name}: {key}[{i}]"
            v = _VERSION.match(str(row.get("since", "")))
            if not isinstance(row.get(number), int) or not _NAME.match(str(row.get("name", ""))) or not v:
                raise SystemExit(f"{where}: needs an integer {number}, an UPPER_CASE name and since = \"X.Y\"")
            out.append(Entry(row[number], row["name"], (int(v[1]), int(v[2])), str(row.get("doc", "")),
                             int(row.get("min_alignment", 0))))
        for attr in ("value", "name"):
            seen = [getattr(e, attr) for e in out]
            if len(set(seen)) != len(seen):
                raise SystemExit(f"{path.name}: two {key} entries share a {attr}")
        return tuple(sorted(out, key=lambda e: e.value))

    t = Table(entries("feature", "bit"), entries("section_kind", "value"))
    if [f.value for f in t.features] != list(range(len(t.features))) or any(f.value > 63 for f in t.features):
        raise SystemExit(f"{path.name}: feature bits are allocated in order from 0, none skipped (SPEC.md §8.3)")
    if [k.value for k in t.section_kinds] != list(range(1, len(t.section_kinds) + 1)):
        raise SystemExit(f"{path.name}: section kinds are numbered in order from 1 (SPEC.md §8.4)")
    for k in t.section_kinds:
        if k.min_alignment < 8 or k.min_alignment & (k.min_alignment - 1):
            raise SystemExit(f"{path.name}: section kind {k.name}: min_alignment is a power of two >= 8")
    return t


def check_since(t: Table, version: tuple[int, int], released: "Table | None" = None) -> None:
    """No entry is newer than the schema that carries it, and an entry the newest release's table
    (`released`) does not have is the working version's (its `since` is where it was added)."""
    old = set() if released is None else {(e.name, e.value) for e in (*released.features, *released.section_kinds)}
    for e in (*t.features, *t.section_kinds):
        if e.since > version:
            raise SystemExit(f"container.toml: {e.name} since {e.since[0]}.{e.since[1]} is newer than the schema "
                             f"({version[0]}.{version[1]})")
        if released is not None and (e.name, e.value) not in old and e.since != version:
            raise SystemExit(f"container.toml: {e.name} is not in the newest release, so it is since "
                             f"{version[0]}.{version[1]}, not {e.since[0]}.{e.since[1]}")


def gen_python(t: Table, flatc: str) -> str:
    out = [header_line("#", flatc),
           '"""Feature bits and section kinds of the container, from schema/container.toml (SPEC.md §3, §8.3)."""\n\n']
    for f in t.features:
        out.append(f"FEATURE_{f.name} = 1 << {f.value}  # since {f.since[0]}.{f.since[1]}: {f.doc}\n")
    out.append(f"KNOWN_FEATURES = 0x{t.known_features:x}\n")
    out.append("# {bit mask: (name, (major, minor) that allocated it)}\n")
    out.append("FEATURES = {\n" + "".join(f"    1 << {f.value}: ({f.name!r}, {f.since!r}),\n" for f in t.features)
               + "}\n\n")
    out.append("# {name: value} of every section kind; SECTION_KIND_SINCE and SECTION_MIN_ALIGNMENT by value.\n")
    out.append("SECTION_KINDS = {" + ", ".join(f"{k.name!r}: {k.value}" for k in t.section_kinds) + "}\n")
    out.append("SECTION_KIND_SINCE = {" + ", ".join(f"{k.value}: {k.since!r}" for k in t.section_kinds) + "}\n")
    out.append("SECTION_MIN_ALIGNMENT = {" + ", ".join(f"{k.value}: {k.min_alignment}" for k in t.section_kinds)
               + "}\n")
    return "".join(out)


def gen_cpp(t: Table, flatc: str) -> str:
    out = [header_line("//", flatc),
           "// Feature bits and section kinds of the container, from schema/container.toml\n"
           "// (SPEC.md §3, §8.3). container.h includes this; no reader spells these numbers.\n"
           "#pragma once\n\n#include <cstdint>\n\nnamespace pt2f {\n\n"]
    for f in t.features:
        out.append(f"/// since {f.since[0]}.{f.since[1]}: {f.doc}\n"
                   f"constexpr uint64_t kFeature{f.camel} = uint64_t(1) << {f.value};\n")
    out.append(f"/// Package.required_features bits this reader implements.\n"
               f"constexpr uint64_t kKnownFeatures = 0x{t.known_features:x};\n\n")
    out.append("enum class SectionKind : uint16_t { "
               + ", ".join(f"{k.camel} = {k.value}" for k in t.section_kinds) + " };\n\n")
    out.append("struct ContainerEntry {\n  const char *name;\n  uint64_t value;  // bit number or kind\n"
               "  uint16_t since_major, since_minor;\n  uint32_t min_alignment;  // section kinds only\n};\n\n")
    for title, rows in (("kFeatureTable", t.features), ("kSectionKindTable", t.section_kinds)):
        out.append(f"inline constexpr ContainerEntry {title}[] = {{\n")
        for e in rows:
            out.append(f'    {{"{e.name}", {e.value}, {e.since[0]}, {e.since[1]}, {e.min_alignment}}},\n')
        out.append("};\n")
    out.append("\n/// The minimum alignment of a section of `kind`; 8 for a kind this reader does not know.\n"
               "inline uint32_t section_min_alignment(uint16_t kind) {\n"
               "  for (const ContainerEntry &e : kSectionKindTable)\n"
               "    if (e.value == kind) return e.min_alignment;\n  return 8;\n}\n\n}  // namespace pt2f\n")
    return "".join(out)


def gen_ts(t: Table, flatc: str) -> str:
    out = [header_line("//", flatc),
           "/** Feature bits and section kinds of the container, from schema/container.toml (SPEC.md 3, 8.3). */\n"]
    for f in t.features:
        out.append(f"/** since {f.since[0]}.{f.since[1]}: {f.doc} */\n"
                   f"export const FEATURE_{f.name} = {1 << f.value}n;\n")
    out.append(f"export const KNOWN_FEATURES = {t.known_features}n;\n")
    rows = {f.name: {"bit": f.value, "since": list(f.since)} for f in t.features}
    out.append(f"export const FEATURES: Readonly<Record<string, {{ bit: number; since: number[] }}>> = "
               f"{json.dumps(rows)};\n")
    out.append("export const SectionKind = { " + ", ".join(f"{k.name}: {k.value}" for k in t.section_kinds)
               + " } as const;\n")
    kinds = {str(k.value): {"name": k.name, "since": list(k.since), "minAlignment": k.min_alignment}
             for k in t.section_kinds}
    out.append("export const SECTION_KINDS: Readonly<Record<string, { name: string; since: number[]; "
               f"minAlignment: number }}>> = {json.dumps(kinds)};\n")
    return "".join(out)


def spec_feature_rows(t: Table) -> str:
    """The §8.3 table of SPEC.md."""
    return ("| bit | name | feature | since |\n|---|---|---|---|\n"
            + "".join(f"| {f.value} | `{f.name}` | {f.doc} | {f.since[0]}.{f.since[1]} |\n" for f in t.features))


def spec_kind_rows(t: Table) -> str:
    """The §8.4 table of SPEC.md."""
    return ("| kind | name | minimum alignment | holds | since |\n|---|---|---|---|---|\n"
            + "".join(f"| {k.value} | `{k.name}` | {k.min_alignment} | {k.doc} | {k.since[0]}.{k.since[1]} |\n"
                      for k in t.section_kinds))
