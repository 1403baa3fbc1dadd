"""The cross-reader invalid-file corpus (`conformance/invalid/`): its manifest and one verdict function per reader.

A *reader column* is a function `verdict(path) -> str` returning the exact
`pt2format.errors` class name the reader refused the file with, or `"OK"` when
it accepted it (read, validated, data checksums verified, dumped). Each
native reader maps its own error kinds to those names. To add a reader,
write its verdict function and a parametrized test over `entries()` in
`tests/conformance/test_invalid_corpus.py`; the expected class is
`entry["error"]`.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INVALID_DIR = ROOT / "conformance" / "invalid"
MANIFEST = INVALID_DIR / "MANIFEST.json"
OK = "OK"


def entries() -> list:
    """Manifest entries, in file order: {"file", "rule", "encoding", "error", "description"}."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]


def entry_id(entry) -> str:
    return entry["file"].removesuffix(".pt2f")


def python_verdict(path) -> str:
    """pt2format.validate: header, layout, decode, string classes, invariants, data checksums."""
    import pt2format
    from pt2format.errors import Pt2FormatError

    try:
        pt2format.validate(path)
    except Pt2FormatError as e:
        return type(e).__name__
    return OK


def cpp_verdict(build_dir, path) -> str:
    """`pt2f-dump --error-class FILE`: one line on stdout, the class name or OK."""
    import native_util_cpp as U

    r = U.run(build_dir / "pt2f-dump", "--error-class", path)
    out = r.stdout.decode("utf-8", "replace").strip()
    if r.returncode not in (U.EXIT_OK, U.EXIT_BAD_FILE, U.EXIT_VERSION) or "\n" in out or "Sanitizer" in r.stderr:
        return f"<crash: exit {r.returncode}: {r.stderr.strip()[-300:]}>"
    return out


def ts_verdicts(paths) -> dict:
    """The TypeScript reader's verdict for each path, in one Node process (`tools/dump-batch.mjs --verify-data`:
    read, validate, every data checksum, dump). A non-Pt2fError escaping the reader is reported as a crash."""
    import native_util_ts as U

    out = {}
    for r in U.dump_batch(paths, verify_data=True):
        if r["ok"]:
            out[r["file"]] = OK
        elif r["error"] == "internal":
            out[r["file"]] = f"<crash: {r['message'][:300]}>"
        else:
            out[r["file"]] = r["error"]
    return out
