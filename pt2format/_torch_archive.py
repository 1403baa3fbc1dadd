"""Recognises a torch.export `.pt2` archive (a zip in torch's layout) without running anything in it.

Only the zip's central directory is read (entry names), from bytes already
read or mapped; no member is opened or parsed, and nothing is handed to
torch. Used to turn "bad magic" into an error that names the file's real
kind and how to convert it on purpose: torch's own loader runs only when the
user asks for it by name (`from_torch`, `convert --from-torch` or a `.pt2`
source), never because of what the bytes look like.
"""

from __future__ import annotations

import io
import re
import zipfile

ZIP_MAGIC = b"PK\x03\x04"
#: Entry names torch.export.save writes: `<archive>/archive_format`, `<archive>/models/<name>.json`, and
#: the older single-program layout's `serialized_exported_program.json`.
_TORCH_ENTRY = re.compile(r"(^|/)(archive_format|\.data/version|models/[^/]+\.json|"
                          r"serialized_exported_program\.json)$")
#: Entries looked at, at most: the answer is in the first few, and a hostile zip may list millions.
_MAX_ENTRIES = 10_000

#: What a reader says about a torch archive it was given as a `.pt2f` file.
FOREIGN_ARCHIVE_HINT = (
    "this is a torch.export archive (a zip written by torch.export.save), not a .pt2f file\n"
    "  pt2format never hands a file to torch because of its content. To convert it on purpose\n"
    "  (torch.export.load parses it: as safe as torch itself, so convert only archives you would load\n"
    "  with torch), name it:\n"
    "    pt2format convert model.pt2 model.pt2f         (a source name ending in .pt2)\n"
    "    pt2format convert --from-torch FILE OUT.pt2f   (any name)\n"
    "    pt2format.from_torch(FILE, OUT)                (Python)")


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a buffer, so zipfile reads a mapped file without copying it."""

    def __init__(self, view):
        self._view = memoryview(view).cast("B") if memoryview(view).format != "B" else memoryview(view)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b) -> int:
        chunk = self._view[self._pos:self._pos + len(b)]
        n = len(chunk)
        memoryview(b)[:n] = chunk
        self._pos += n
        return n


def is_torch_archive(view) -> bool:
    """True when the bytes start like a zip and its entry names follow torch.export's archive layout."""
    if bytes(view[:4]) != ZIP_MAGIC:
        return False
    try:
        with zipfile.ZipFile(io.BufferedReader(_ViewFile(view))) as z:
            for i, info in enumerate(z.infolist()):
                if i >= _MAX_ENTRIES:
                    return False
                if _TORCH_ENTRY.search(info.filename):
                    return True
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    return False
