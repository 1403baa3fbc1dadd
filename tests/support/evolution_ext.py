"""A test-only minor 1.1 of the schema, a Python package generated from it, and files it writes.

`extension_fbs` derives the 1.1 schema from the working one: a string field
appended to the root table and a double field to `Node`, a value appended to
the enum of `NamedArgument`'s enum field and a member (a new table) to the
union of its union field; the enum and union are found through the generated
FIELDS tables, not by name. `scratch_package` copies `pt2format/` and
regenerates its `_generated/` from that schema with the one generator
(`schema/regen.py --fbs --out`). `run_scratch` runs jobs (write a variant,
dump a file) in a child interpreter that imports the scratch copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pt2format._container.header import KNOWN_FEATURES

ROOT = Path(__file__).resolve().parents[2]
FBS = ROOT / "schema" / "pt2format.fbs"
JOB = Path(__file__).resolve().parent / "evolution_scratch_job.py"

NOTE = "written by the test-only 1.1"
OPTIONAL_KIND = 0x7E01
OPTIONAL_PAYLOAD = b"an optional section of a kind 1.0 does not know\n"
# The next unallocated bit (SPEC.md section 8.3): one past every bit this reader knows.
FEATURE_BIT = 1 << KNOWN_FEATURES.bit_length()
NEW_TABLE = "EvolutionTestArgument"


def named_argument_refs() -> tuple[str, str, str, str]:
    """(enum field, its enum, union field, its union) of NamedArgument, from the generated model."""
    from pt2format._generated import model as m

    enum_f = next(f for f in m.NamedArgument.FIELDS if f[2] == "enum")
    union_f = next(f for f in m.NamedArgument.FIELDS if f[2] == "union")
    return enum_f[0], enum_f[4], union_f[0], union_f[4]


def new_enum_value() -> int:
    """The value 1.1 appends to NamedArgument's enum: one past the largest released value."""
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


def extension_fbs() -> str:
    """The working schema plus what the test-only minor 1.1 adds (SPEC.md section 8.1)."""
    text = FBS.read_text()
    versions = list(re.finditer(r"^///\s+\d+\.\d+ \(\d{4}-\d\d-\d\d\).*\n", text.split("namespace", 1)[0], re.M))
    assert versions, "no version history line in the schema header"
    at = versions[-1].end()
    text = text[:at] + "///   1.1 (2026-11-24) test-only extension (tests/support/evolution_ext.py).\n" + text[at:]
    root = re.search(r"^root_type (\w+);", text, re.M).group(1)
    _, enum, _, union = named_argument_refs()
    text = _append(text, "table", root, "  /// A note (test-only 1.1).\n  evolution_test_note: string (pt2f_string: \"free_text\");\n")
    text = _append(text, "table", "Node", "  /// A weight (test-only 1.1).\n  evolution_test_weight: double = 1.5;\n")
    text = _append(text, "enum", enum, f"  /// A kind (test-only 1.1).\n  EVOLUTION_TEST = {new_enum_value()},\n")
    text = _append(text, "union", union, f"  /// A member (test-only 1.1).\n  {NEW_TABLE},\n")
    return text + f"\n/// A new argument (test-only 1.1).\ntable {NEW_TABLE} {{\n  /// A note.\n  note: string (pt2f_string: \"free_text\");\n}}\n"


def scratch_package(tmp: Path) -> Path:
    """A copy of pt2format/ with _generated/ regenerated from the 1.1 schema; returns its root."""
    root = tmp / "scratch"
    shutil.copytree(ROOT / "pt2format", root / "pt2format", ignore=shutil.ignore_patterns("__pycache__"))
    fbs = tmp / "ext" / "pt2format.fbs"
    fbs.parent.mkdir(parents=True)
    fbs.write_text(extension_fbs())
    r = subprocess.run([sys.executable, str(ROOT / "schema" / "regen.py"), "--fbs", str(fbs), "--out", str(root)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"regen.py --fbs failed:\n{r.stdout}\n{r.stderr}"
    return root


def run_scratch(root: Path, jobs: list[dict]) -> list[dict]:
    """Run jobs in a child interpreter importing the scratch package (never the repo's)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    spec = json.dumps({"jobs": jobs, "refs": named_argument_refs(), "enum_value": new_enum_value(),
                       "note": NOTE, "feature": FEATURE_BIT, "new_table": NEW_TABLE})
    r = subprocess.run([sys.executable, str(JOB)], input=spec, capture_output=True, text=True, cwd=root,
                       env=env, timeout=600)
    assert r.returncode == 0, f"scratch job failed:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout)


def with_optional_section(src: Path, dst: Path) -> None:
    """`src` laid out again with one more section: OPTIONAL_KIND, flag OPTIONAL, after the others."""
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
    entries.append(SectionEntry(OPTIONAL_KIND, 0, 16, start, len(OPTIONAL_PAYLOAD), ChecksumKind.CRC32,
                                crc32(OPTIONAL_PAYLOAD), SECTION_OPTIONAL))
    body.append((start, OPTIONAL_PAYLOAD))
    end = start + len(OPTIONAL_PAYLOAD)
    out = bytearray(pack_header(Header(h.format_major, h.format_minor, h.required_features, end, tuple(entries))))
    for at, payload in body:
        out += bytes(at - len(out)) + payload
    dst.write_bytes(bytes(out))
