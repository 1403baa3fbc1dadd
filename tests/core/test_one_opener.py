"""Every user-given path is opened by pt2format._source (open_regular / read_regular / open_output), nowhere else.

The one opener refuses FIFOs, devices and directories without blocking. This
test reads the source of pt2format/, exporter/ and loaders/ and lists every
call that opens, maps or loads a file; each must be in ALLOWED with the
reason it is not a user path (or the descriptor it maps came from the one
opener). A new direct `open(path)` fails here, and so does an entry that no
longer matches the code (so the list stays true).
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pt2format", "exporter", "loaders")

#: Calls that open, map or load a file by path (or map a descriptor).
OPENING = {"open", "io.open", "os.open", "os.fdopen", "*.open", "*.read_bytes", "*.read_text", "*.write_bytes",
           "*.write_text", "mmap", "*.mmap", "*.memmap", "*.fromfile", "torch.load", "torch.export.load", "*.ZipFile",
           "np.load", "numpy.load", "*.safe_open", "safe_open"}

#: (file, call) -> (count, why it is not a direct open of a user path).
ALLOWED = {
    ("pt2format/_source.py", "os.open"): (2, "the one opener: open_regular and open_output"),
    ("pt2format/_source.py", "os.fdopen"): (2, "the one opener wraps its checked descriptor"),
    ("pt2format/_container/reader.py", "_mmap.mmap"): (1, "maps the descriptor open_regular returned"),
    ("pt2format/_external.py", "mmap.mmap"): (2, "maps descriptors open_regular returned"),
    ("loaders/_weights.py", "mmap.mmap"): (1, "maps the descriptor open_regular returned"),
    ("pt2format/_container/writer.py", "os.open"): (2, "a fresh temp file (O_EXCL) and the directory to fsync"),
    ("pt2format/_container/page_cache.py", "open"): (2, "/proc/meminfo and /proc/self/maps, not user paths"),
    ("pt2format/_container/page_cache.py", "os.open"): (1, "the file a save is replacing, for posix_fadvise only: "
                                                           "O_NOFOLLOW | O_NONBLOCK, nothing read, checked to be "
                                                           "the regular file lstat saw"),
    ("pt2format/_ranked_write.py", "os.open"): (1, "a multi-rank save's partial shard: a fresh name holding the "
                                                    "save's random id, O_NOFOLLOW, checked to be a regular file"),
    ("pt2format/_codecs/json.py", "_SCHEMA_PATH.read_text"): (1, "the JSON Schema shipped inside the package"),
    ("pt2format/_deps.py", "dist.read_text"): (1, "the installed distribution's own direct_url.json (PEP 610), read "
                                                   "to tell a checkout from a wheel for install hints"),
    ("pt2format/_view.py", "webbrowser.open"): (1, "opens a URL in the browser, not a file"),
    ("loaders/_verifier.py", "open"): (1, "torch's own torch/_export/verifier.py, hashed to tell which torch "
                                          "verifier the pre-check stands for; not a user path"),
    ("pt2format/_interop.py", "torch.export.load"): (1, "from_torch: the explicit torch path, on a file object "
                                                        "from open_regular"),
    ("pt2format/_interop.py", "zipfile.ZipFile"): (1, "reads the file object from open_regular"),
    ("pt2format/_torch_archive.py", "zipfile.ZipFile"): (1, "reads bytes already read or mapped"),
}


def _name(func) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = func.value
        parts = [func.attr]
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            return ".".join([base.id, *reversed(parts)])
        return "*." + func.attr
    return "*"


def _matches(name: str) -> bool:
    if name in OPENING:
        return True
    last = name.rsplit(".", 1)[-1]
    return "." in name and f"*.{last}" in OPENING


def _opening_calls() -> collections.Counter:
    found = collections.Counter()
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/_generated/" in rel or "/cpp/" in rel or "/ts/" in rel:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if isinstance(node, ast.Call):
                    name = _name(node.func)
                    if _matches(name) and name not in ("pt2format.open",):
                        found[(rel, name)] += 1
    return found


def test_every_file_open_goes_through_the_one_opener():
    found = _opening_calls()
    new = {k: n for k, n in found.items() if k not in ALLOWED or n > ALLOWED[k][0]}
    assert not new, ("direct opens of a path outside pt2format._source; use open_regular / read_regular / "
                     f"open_output (or add to ALLOWED with the reason it is not a user path): {new}")
    stale = {k: v[0] for k, v in ALLOWED.items() if found.get(k, 0) != v[0]}
    assert not stale, f"ALLOWED entries that no longer match the code (update the counts): {stale}"


def test_the_scan_sees_a_direct_open(tmp_path):
    """The scanner itself: each form of direct open is reported."""
    src = ("import os, mmap, pathlib, torch\n"
           "open(p)\nos.open(p, 0)\npathlib.Path(p).read_bytes()\nmmap.mmap(fd, 0)\ntorch.load(p)\n"
           "pathlib.Path(p).open()\nprint(p)\n")
    names = [_name(n.func) for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)]
    flagged = [n for n in names if _matches(n)]
    assert sorted(flagged) == sorted(["open", "os.open", "*.read_bytes", "mmap.mmap", "torch.load", "*.open"])
