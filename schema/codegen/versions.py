"""Writes the format version and the container tables into the hand-written pages that state them.

One version number, from one source: the newest `X.Y (date)` line of the
schema's header comment (schema/evolution.py). The SPEC title and the
supported-versions page carry it, and SPEC.md §8.3/§8.4 carry the tables of
schema/container.toml; regen.py rewrites exactly those lines and blocks and
`regen.py --check` fails when they drift. Everything else in the pages is prose.
"""

from __future__ import annotations

import re

from codegen import container
from codegen.paths import ROOT

_TITLE = re.compile(r"\A# The `\.pt2f` file format, version \d+\.\d+\n")
_VERSIONS_ROW = re.compile(r"^\| file format \| \d+\.\d+ ", re.M)


def _one(pattern: re.Pattern, text: str, new: str, where: str) -> str:
    out, n = pattern.subn(new, text, count=1)
    if n != 1:
        raise SystemExit(f"regen: {where} lost the line regen.py writes the format version into ({pattern.pattern})")
    return out


def _block(text: str, name: str, body: str, where: str) -> str:
    pat = re.compile(rf"(<!-- BEGIN generated {name} -->\n)(.*?)(<!-- END generated {name} -->)", re.S)
    out, n = pat.subn(lambda mt: mt.group(1) + body + mt.group(3), text, count=1)
    if n != 1:
        raise SystemExit(f"regen: {where} lost its generated {name} block")
    return out


def spec(version: tuple[int, int], table: container.Table) -> str:
    path = ROOT / "schema" / "SPEC.md"
    text = path.read_text(encoding="utf-8")
    text = _one(_TITLE, text, f"# The `.pt2f` file format, version {version[0]}.{version[1]}\n", "SPEC.md")
    text = _block(text, "feature-bits", container.spec_feature_rows(table), "SPEC.md")
    return _block(text, "section-kinds", container.spec_kind_rows(table), "SPEC.md")


def versions_page(version: tuple[int, int]) -> str:
    path = ROOT / "docs" / "versions.md"
    text = path.read_text(encoding="utf-8")
    return _one(_VERSIONS_ROW, text, f"| file format | {version[0]}.{version[1]} ", "docs/versions.md")
