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
then safe to share (nothing in it is evaluated on load). torch's loader runs
only here, when the caller asks for it by name; no reader picks it because
of what a file's bytes look like. Every way it can fail ends in a
`TorchArchiveError` naming torch as the source, torch's exception kept as
its `__cause__`.
"""

from __future__ import annotations

import io
import os
import zipfile

from pt2format import _options
from pt2format._container.header import MAGIC as PT2F_MAGIC
from pt2format._source import fs_path, is_buffer, is_pathlike, open_regular
from pt2format._torch_archive import ZIP_MAGIC
from pt2format.errors import TorchArchiveError

#: At most this much of torch's message goes into ours (tracebacks and tensor dumps can be long).
_MAX_CAUSE_CHARS = 500


def _archive_file(src):
    """(binary file object, name for errors, whether we opened it) for a path, bytes or file object."""
    if is_pathlike(src):
        path = fs_path(src)
        return open_regular(path), path, True  # never a FIFO, device or directory
    if is_buffer(src):
        return io.BytesIO(bytes(src)), "<bytes>", True
    if hasattr(src, "read") and hasattr(src, "seek"):
        name = getattr(src, "name", None)
        return src, name if isinstance(name, str) else "<stream>", False
    raise TypeError(f"expected a path, bytes or a seekable binary file object; got {type(src).__name__}")


def _torch_extra_names(f, name: str) -> list:
    """Names of the user extra files in a torch archive (entries under `<archive>/extra/`); checks it is a zip."""
    start = f.tell()
    head = f.read(len(PT2F_MAGIC))
    f.seek(start)
    if head[:len(ZIP_MAGIC)] != ZIP_MAGIC:
        kind = "a .pt2f file already (read it with pt2format.read or load)" if head == PT2F_MAGIC else "not a zip"
        raise TorchArchiveError(f"not a torch.export archive: {kind}", file=name, offset=0,
                                expected=ZIP_MAGIC.hex(" "), got=bytes(head[:4]).hex(" "))
    try:
        with zipfile.ZipFile(f) as z:
            names = []
            for n in z.namelist():
                parts = n.split("/")
                if len(parts) == 3 and parts[1] == "extra" and parts[2]:
                    names.append(parts[2])
            return sorted(set(names))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise TorchArchiveError(f"not a readable torch.export archive (a damaged zip): {type(e).__name__}: {e}",
                                file=name) from e
    finally:
        f.seek(start)


def _torch_failed(e: BaseException, name: str) -> TorchArchiveError:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    cause = text[0] if text else type(e).__name__
    if len(cause) > _MAX_CAUSE_CHARS:
        cause = cause[:_MAX_CAUSE_CHARS] + "..."
    return TorchArchiveError(f"torch.export.load could not read this archive (the error is torch's): {cause}",
                             file=name, section="torch.export.load")


@_options.FROM_TORCH.implements
def from_torch(src, dst, *, encoding, fsync, progress, metadata) -> None:
    """Convert a torch.export `.pt2` archive (path, bytes or binary file object) to a `.pt2f` file at `dst`.

    The program is loaded with `torch.export.load` (so it is exactly as safe
    as that call on `src`, and no safer: torch parses its JSON and sympy
    strings) and saved with `pt2format.save`, extra files included. `dst`
    is a path or a writable binary file object. A source that is no zip, a
    damaged zip, or any exception of torch's loader is a TorchArchiveError.
    A `dst` path ending in `.pt2` (torch's extension) is refused: the output
    is a `.pt2f` file, which torch.export.load would then reject.
    """
    from pt2format._deps import require

    if is_pathlike(dst) and os.fspath(dst).lower().endswith(".pt2"):
        raise ValueError(f"from_torch writes a .pt2f file, not a torch archive: {os.fspath(dst)!r} ends in .pt2 "
                         "(name it .pt2f)")
    torch = require("torch", "converting a torch .pt2 archive")

    import pt2format

    f, name, owned = _archive_file(src)
    try:
        names = _torch_extra_names(f, name)
        extra = {n: "" for n in names}
        try:
            ep = torch.export.load(f, extra_files=extra)
        except Exception as e:  # noqa: BLE001 - whatever torch raises, the caller gets one typed error
            raise _torch_failed(e, name) from e
    finally:
        if owned:
            f.close()
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TorchArchiveError("torch.export.load returned no ExportedProgram", file=name,
                                section="torch.export.load", got=type(ep).__name__)
    files = {k: (v.encode("utf-8") if isinstance(v, str) else bytes(v)) for k, v in extra.items()}
    pt2format.save(ep, dst, encoding=encoding, fsync=fsync, progress=progress, extra_files=files or None,
                   metadata=metadata)


@_options.TO_TORCH.implements
def to_torch(src, dst, *, program, allow_subclasses) -> None:
    """Convert program `program` of a `.pt2f` file (default: the only one, or "forward") to a torch `.pt2`.

    The program is rebuilt with `pt2format.load` and written with
    `torch.export.save`; extra files are passed on (as UTF-8 text when they
    decode, which torch requires). A torch archive holds one program, so a
    multi-program file needs `program=`. `allow_subclasses` is passed to
    `pt2format.load`: the tensor subclasses whose saved tensors may be rebuilt.
    """
    from pt2format._deps import require

    torch = require("torch", "converting to a torch .pt2 archive")

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
    if is_pathlike(dst):
        from pt2format._source import open_output

        with open_output(dst, "wb") as out:  # never a FIFO, device or directory
            torch.export.save(ep, out, extra_files=text or None)
    else:
        torch.export.save(ep, dst, extra_files=text or None)
