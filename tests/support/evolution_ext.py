"""The next minor, released the way a maintainer would, in a scratch clone; files it writes.

`release_next_minor` copies the checkout's schema, package and generated
files into a scratch directory, releases the working minor there if it is not
released yet (schema/release.py), then makes the next minor N with one of each
addition SPEC.md §8.1 allows, found without naming fields that may change:

- a string field appended to the root table and a double field to `Node`;
- a value appended to the enum of `NamedArgument`'s enum field and a member
  (a new table) to the union of its union field (found through FIELDS);
- a feature bit and an OPTIONAL section kind in `container.toml`;

and releases N with the same command. Nothing here names a version: it is
always "the working one" and "the one after", so the test never needs
rewriting at the next release. `run_scratch` runs jobs (write a variant, dump
a file) in a child interpreter that imports the clone's package.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FBS = ROOT / "schema" / "pt2format.fbs"
JOB = Path(__file__).resolve().parent / "evolution_scratch_job.py"
sys.path[:0] = [str(ROOT / "schema")]

import evolution  # noqa: E402

NOTE = "written by the test-only next minor"
OPTIONAL_PAYLOAD = b"an optional section of a kind the release does not know\n"
NEW_TABLE = "EvolutionTestArgument"
DATE = "2026-01-01"
# What the clone needs: regen.py writes every generated file of the checkout, release.py the pages.
_COPY = ("schema", "pt2format", "docs/versions.md", "loaders/cpp/generated", "loaders/ts/src/generated")


@dataclass(frozen=True)
class NextMinor:
    root: Path  # the scratch clone
    previous: tuple[int, int]  # the working version of the checkout (its readers are "the release")
    version: tuple[int, int]  # the test-only next minor
    feature_bit: int  # mask
    optional_kind: int
    log: str  # what release.py printed

    @property
    def label(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def named_argument_refs() -> tuple[str, str, str, str]:
    """(enum field, its enum, union field, its union) of NamedArgument, from the generated model."""
    from pt2format._generated import model as m

    enum_f = next(f for f in m.NamedArgument.FIELDS if f[2] == "enum")
    union_f = next(f for f in m.NamedArgument.FIELDS if f[2] == "union")
    return enum_f[0], enum_f[4], union_f[0], union_f[4]


def new_enum_value() -> int:
    """The value the next minor appends to NamedArgument's enum: one past the largest released value."""
    from pt2format._generated import model as m

    _, enum, _, _ = named_argument_refs()
    return max(int(v) for v in m.ENUMS[enum]) + 1


def _block(text: str, kind: str, name: str) -> re.Match:
    m = re.search(rf"^{kind} {name}\b[^{{\n]*\{{\n(.*?)^\}}", text, re.M | re.S)
    assert m, f"no {kind} {name} in the schema"
    return m


def _append(text: str, kind: str, name: str, line: str) -> str:
    m = _block(text, kind, name)
    body = m.group(1)
    if kind in ("enum", "union"):
        last = [l for l in body.splitlines() if l.strip() and not l.strip().startswith("//")][-1]
        if not last.rstrip().endswith(","):
            body = body.rstrip("\n") + ",\n"
    return text[:m.start(1)] + body + line + text[m.end(1):]


def extension_fbs(text: str, version: tuple[int, int]) -> str:
    """`text` plus a `version` line and what the test-only minor adds (SPEC.md §8.1)."""
    versions = list(re.finditer(r"^///\s+\d+\.\d+ \(\d{4}-\d\d-\d\d\).*\n", text.split("namespace", 1)[0], re.M))
    assert versions, "no version history line in the schema header"
    at = versions[-1].end()
    text = (text[:at] + f"///   {version[0]}.{version[1]} ({DATE}) test-only extension "
            "(tests/support/evolution_ext.py).\n" + text[at:])
    root = re.search(r"^root_type (\w+);", text, re.M).group(1)
    _, enum, _, union = named_argument_refs()
    since = f'pt2f_since: "{version[0]}.{version[1]}"'  # every name a minor adds says so (schema/ATTRIBUTES.md)
    text = _append(text, "table", root,
                   f"  /// A note (test-only).\n  evolution_test_note: string (pt2f_string: \"free_text\", {since});\n")
    text = _append(text, "table", "Node", f"  /// A weight (test-only).\n  evolution_test_weight: double = 1.5 ({since});\n")
    text = _append(text, "enum", enum, f"  /// A kind (test-only).\n  EVOLUTION_TEST = {new_enum_value()} ({since}),\n")
    text = _append(text, "union", union, f"  /// A member (test-only).\n  {NEW_TABLE} ({since}),\n")
    return text + (f"\n/// A new argument (test-only).\ntable {NEW_TABLE} ({since}) {{\n  /// A note.\n"
                   "  note: string (pt2f_string: \"free_text\");\n}\n")


def scratch_clone(tmp: Path) -> Path:
    """A copy of what release.py and regen.py read and write, with no build products."""
    root = tmp / "clone"
    for rel in _COPY:
        src, dst = ROOT / rel, root / rel
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return root


def run_release(root: Path, version: tuple[int, int], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "schema" / "release.py"), f"{version[0]}.{version[1]}",
                           "--no-golden", "--date", DATE, *extra], capture_output=True, text=True, cwd=root,
                          timeout=600)


def release_next_minor(tmp: Path) -> NextMinor:
    """The clone with the working minor released (if it was not) and the next minor made and released."""
    root = scratch_clone(tmp)
    fbs = root / "schema" / "pt2format.fbs"
    current = evolution.schema_version(fbs.read_text())
    log = []
    if not (root / "schema" / "history" / f"{current[0]}.{current[1]}").exists():
        r = run_release(root, current)
        assert r.returncode == 0, f"release.py {current} failed:\n{r.stdout}{r.stderr}"
        log.append(r.stdout)
    nxt = (current[0], current[1] + 1)
    fbs.write_text(extension_fbs(fbs.read_text(), nxt))
    table_path = root / "schema" / "container.toml"
    table = table_path.read_text()
    bits = [int(b) for b in re.findall(r"^bit = (\d+)$", table, re.M)]
    kinds = [int(k) for k in re.findall(r"^value = (\d+)$", table, re.M)]
    bit, kind = max(bits) + 1, max(kinds) + 1
    table += (f'\n[[feature]]\nbit = {bit}\nname = "EVOLUTION_TEST"\nsince = "{nxt[0]}.{nxt[1]}"\n'
              'doc = "test-only feature"\n'
              f'\n[[section_kind]]\nvalue = {kind}\nname = "EVOLUTION_TEST"\nsince = "{nxt[0]}.{nxt[1]}"\n'
              'min_alignment = 16\ndoc = "test-only optional section"\n')
    table_path.write_text(table)
    changelog = root / "schema" / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    at = text.index("\n## ")
    changelog.write_text(text[:at] + f"\n## {nxt[0]}.{nxt[1]} (unreleased)\n\n- test-only extension.\n" + text[at:],
                         encoding="utf-8")
    r = run_release(root, nxt)
    assert r.returncode == 0, f"release.py {nxt} failed:\n{r.stdout}{r.stderr}"
    log.append(r.stdout)
    return NextMinor(root, current, nxt, 1 << bit, kind, "".join(log))


def run_scratch(nm: NextMinor, jobs: list[dict]) -> list[dict]:
    """Run jobs in a child interpreter importing the clone's package (never the checkout's)."""
    env = dict(os.environ, PYTHONPATH=str(nm.root))
    spec = json.dumps({"jobs": jobs, "refs": named_argument_refs(), "enum_value": new_enum_value(),
                       "note": NOTE, "feature": nm.feature_bit, "new_table": NEW_TABLE,
                       "version": list(nm.version)})
    r = subprocess.run([sys.executable, str(JOB)], input=spec, capture_output=True, text=True, cwd=nm.root,
                       env=env, timeout=600)
    assert r.returncode == 0, f"scratch job failed:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout)


def with_optional_section(src: Path, dst: Path, kind: int) -> None:
    """`src` laid out again with one more section: `kind`, flag OPTIONAL, after the others."""
    from pt2format._container.align import align_up
    from pt2format._container.crc import crc32
    from pt2format._container.header import (
        SECTION_OPTIONAL, ChecksumKind, Header, SectionEntry, header_length, pack_header, unpack_header,
    )

    data = src.read_bytes()
    h = unpack_header(data)
    cursor = header_length(len(h.sections) + 1)
    entries, body = [], []
    for s in h.sections:
        start = align_up(cursor, s.alignment)
        entries.append(SectionEntry(s.kind, s.encoding, s.alignment, start, s.length, s.checksum_kind, s.checksum,
                                    s.flags))
        body.append((start, data[s.offset:s.end]))
        cursor = start + s.length
    start = align_up(cursor, 16)
    entries.append(SectionEntry(kind, 0, 16, start, len(OPTIONAL_PAYLOAD), ChecksumKind.CRC32,
                                crc32(OPTIONAL_PAYLOAD), SECTION_OPTIONAL))
    body.append((start, OPTIONAL_PAYLOAD))
    end = start + len(OPTIONAL_PAYLOAD)
    out = bytearray(pack_header(Header(h.format_major, h.format_minor, h.required_features, end, tuple(entries))))
    for at, payload in body:
        out += bytes(at - len(out)) + payload
    dst.write_bytes(bytes(out))
