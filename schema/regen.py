"""Regenerate every artifact derived from schema/pt2format.fbs.

One command (`python schema/regen.py`) writes the Python model classes, the
JSON Schema, the C++ header, the TypeScript module and the field tables of
the spec; `--check` regenerates into memory and exits 1 when any checked-in
file differs (the drift test runs it). The Python classes are generated from
flatc's binary schema (`--bfbs`), read by schema/codegen/bfbs.py,
so field ids, defaults and doc comments come from flatc itself.

It also emits, for the three readers, which minor defines each field, enum
value and union member (schema/evolution.py, from schema/history/), which
their canonical dump needs (SPEC.md sections 6 and 8). `--fbs X --out DIR`
generates the Python package files of another schema under a copy of the
package at DIR, through the same code (the evolution test's 1.1 schema).

The generator itself is the package schema/codegen/ (its targets.py lists every
output); this script is its command line.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the pt2format package of this checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the codegen package beside this script

from codegen.bfbs import build_bfbs, read_bfbs  # noqa: E402,F401 - re-exported for tests and tools
from codegen.constants import *  # noqa: E402,F401,F403 - base types etc., re-exported
from codegen.paths import FBS, HISTORY, ROOT  # noqa: E402,F401
from codegen.targets import GENERATED_DIRS, generate_all  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if any generated file is stale")
    ap.add_argument("--fbs", type=Path, help="generate the Python package files of this schema instead (with --out)")
    ap.add_argument("--out", type=Path, help="root of a copy of the package to write them under")
    args = ap.parse_args(argv)
    if args.fbs or args.out:
        if not (args.fbs and args.out) or args.check:
            ap.error("--fbs and --out go together, without --check")
        for path, text in generate_all(args.fbs.resolve(), args.out.resolve(), python_only=True).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return 0
    files = generate_all()
    if args.check:
        stale = []
        for path, text in files.items():
            old = path.read_text() if path.exists() else None
            if old != text:
                stale.append(path)
                if old is not None:
                    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), str(path), "regenerated", lineterm="", n=1)
                    print("\n".join(list(diff)[:40]))
        for d in GENERATED_DIRS:
            existing = {p for p in (ROOT / d).rglob("*.ts")} if (ROOT / d).exists() else set()
            stale += sorted(existing - set(files))
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if stale else 0
    for d in GENERATED_DIRS:
        if (ROOT / d).exists():
            shutil.rmtree(ROOT / d)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
