"""Recognises a torch.export `.pt2` archive (a zip in torch's layout) without running anything in it.

Only the zip's central directory is read (entry names); no member is opened
or parsed. Used to turn "bad magic" into an error that names the file's real
kind and the command that converts it.
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


def is_torch_archive(view, path: str | None = None) -> bool:
    """True when the bytes start like a zip and its entry names follow torch.export's archive layout."""
    if bytes(view[:4]) != ZIP_MAGIC:
        return False
    try:
        src = path if path is not None else io.BytesIO(view)
        with zipfile.ZipFile(src) as z:
            for i, info in enumerate(z.infolist()):
                if i >= _MAX_ENTRIES:
                    return False
                if _TORCH_ENTRY.search(info.filename):
                    return True
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    return False
