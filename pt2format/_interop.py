"""Conversions between torch.export's `.pt2` archives and `.pt2f` files, both ways (needs torch).

`from_torch` reads a `.pt2` with `torch.export.load` and writes it with
`pt2format.save`; `to_torch` loads a `.pt2f` with `pt2format.load` and writes
it with `torch.export.save`. Extra files travel both ways (torch hands them
out as text, pt2format as bytes; UTF-8 in between); pt2format's `metadata`
has no place in a torch archive and is not carried over.

Safety: reading a `.pt2` goes through torch's own loader, which parses
torch's JSON and sympy expression strings and unpickles sample inputs. That
is exactly as safe as `torch.export.load` on the same file, and no safer:
convert only files you would load with torch. The `.pt2f` that comes out is
then safe to share (nothing in it is evaluated on load).
"""

from __future__ import annotations

import os

from pt2format._source import is_pathlike

def _rewind(f) -> None:
    if not is_pathlike(f) and hasattr(f, "seek"):
        f.seek(0)


def _torch_extra_names(src) -> list:
    """Names of the user extra files in a torch archive (entries under `<archive>/extra/`)."""
    import zipfile

    try:
        with zipfile.ZipFile(os.fspath(src) if is_pathlike(src) else src) as z:
            names = []
            for n in z.namelist():
                parts = n.split("/")
                if len(parts) == 3 and parts[1] == "extra" and parts[2]:
                    names.append(parts[2])
            return sorted(set(names))
    finally:
        _rewind(src)


def from_torch(src, dst, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool | None = None,
               metadata: dict | None = None) -> None:
    """Convert a torch.export `.pt2` archive (path or binary file object) to a `.pt2f` file at `dst`.

    The program is loaded with `torch.export.load` (so it is exactly as safe
    as that call on `src`, and no safer: torch parses its JSON and sympy
    strings) and saved with `pt2format.save`, extra files included. `dst`
    is a path or a writable binary file object.
    """
    import torch

    import pt2format

    names = _torch_extra_names(src)
    extra = {n: "" for n in names}
    ep = torch.export.load(os.fspath(src) if is_pathlike(src) else src, extra_files=extra)
    files = {k: (v.encode("utf-8") if isinstance(v, str) else bytes(v)) for k, v in extra.items()}
    pt2format.save(ep, dst, encoding=encoding, fsync=fsync, progress=progress, extra_files=files or None,
                   metadata=metadata)


def to_torch(src, dst, *, program: str | None = None, allow_subclasses=()) -> None:
    """Convert program `program` of a `.pt2f` file (default: the only one, or "forward") to a torch `.pt2`.

    The program is rebuilt with `pt2format.load` and written with
    `torch.export.save`; extra files are passed on (as UTF-8 text when they
    decode, which torch requires). A torch archive holds one program, so a
    multi-program file needs `program=`. `allow_subclasses` is passed to
    `pt2format.load`: the tensor subclasses whose saved tensors may be rebuilt.
    """
    import torch

    import pt2format

    extra: dict = {}
    ep = pt2format.load(src, program=program, extra_files=extra, allow_subclasses=allow_subclasses)
    text = {}
    for k, v in extra.items():
        try:
            text[k] = v.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"extra file {k!r} is not UTF-8 text, which a torch archive's extra_files must be"
                             ) from None
    torch.export.save(ep, os.fspath(dst) if is_pathlike(dst) else dst, extra_files=text or None)
