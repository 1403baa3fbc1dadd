"""User metadata (str -> str) and extra files (name -> bytes): checked, stored, and handed back.

`metadata` matches safetensors' `metadata`: short strings for people and
tools, stored in `Package.metadata` (in the program section), sorted by key;
loaders never interpret it. `extra_files` matches torch.export.save's: named
blobs whose bytes go to the data section as storages (so a large one costs
nothing until it is asked for), listed in `Package.extra_files` by name.

Names are bounded and plain so that no reader is tempted to treat them as
paths or markup: 1 to 255 bytes of UTF-8, no NUL or other control
characters. The same rules are checked on write (TypeError/ValueError for the
caller's mistake) and on read (ValidationError naming the entry).
"""

from __future__ import annotations

from collections.abc import Mapping

from pt2format._generated import limits as _limits
from pt2format._generated import model as m
from pt2format.errors import ValidationError

MAX_NAME_BYTES = _limits.MAX_EXTRA_FILE_NAME_BYTES
#: Metadata is kept in the program section, which every load decodes: keep it small.
MAX_METADATA_BYTES = _limits.MAX_EXTRA_METADATA_BYTES


def _name_problem(name) -> str | None:
    if not isinstance(name, str):
        return f"must be a str, got {type(name).__name__}"
    try:
        n = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8 (lone surrogate)"
    if not 1 <= n <= MAX_NAME_BYTES:
        return f"must be 1 to {MAX_NAME_BYTES} bytes of UTF-8, got {n}"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "must not contain NUL or other control characters"
    return None


def check_extra_files(package) -> None:
    """Validate `Package.extra_files`: names well-formed (sorted and unique: pt2f_keys; storage indices: pt2f_index)."""
    entries = getattr(package, "extra_files", None) or []
    for i, entry in enumerate(entries):
        if entry is None:
            raise ValidationError("extra file entry is missing", path=f"extra_files[{i}]")
        problem = _name_problem(entry.name)
        if problem is not None:
            raise ValidationError(f"extra file name {problem}", path=f"extra_files[{i}].name",
                                  got=repr(entry.name)[:80])


def _as_bytes(name: str, value):
    if isinstance(value, str):
        return memoryview(value.encode("utf-8"))  # torch.export.save accepts str too, stored as UTF-8
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"extra_files[{name!r}] must be bytes-like or str, got {type(value).__name__}") from None
    if not view.c_contiguous:
        raise ValueError(f"extra_files[{name!r}] must be a contiguous buffer")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def attach(package, payloads: list, *, extra_files: Mapping | None, metadata: Mapping | None) -> list:
    """Put `metadata` and `extra_files` into `package`; returns payloads with the extra files appended.

    Raises TypeError/ValueError (the caller's argument is wrong) before
    anything is written.
    """
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping str -> str, got {type(metadata).__name__}")
        total = 0
        for k, v in metadata.items():
            problem = _name_problem(k)
            if problem is not None:
                raise ValueError(f"metadata key {k!r} {problem}")
            if not isinstance(v, str):
                raise TypeError(f"metadata[{k!r}] must be a str (as in safetensors), got {type(v).__name__}")
            try:
                total += len(k.encode("utf-8")) + len(v.encode("utf-8"))
            except UnicodeEncodeError:
                raise ValueError(f"metadata[{k!r}] is not valid UTF-8 (lone surrogate)") from None
        if total > MAX_METADATA_BYTES:
            raise ValueError(f"metadata holds {total} bytes; at most {MAX_METADATA_BYTES} (use extra_files for "
                             "large content)")
        package.metadata = [m.StringEntry(key=k, value=metadata[k]) for k in sorted(metadata)]
    payloads = list(payloads)
    if extra_files:
        if not isinstance(extra_files, Mapping):
            raise TypeError(f"extra_files must be a mapping name -> bytes, got {type(extra_files).__name__}")
        entries = []
        for name in sorted(extra_files):
            problem = _name_problem(name)
            if problem is not None:
                raise ValueError(f"extra file name {name!r} {problem}")
            view = _as_bytes(name, extra_files[name])
            entries.append(m.ExtraFile(name=name, storage=len(package.storages)))
            package.storages.append(m.Storage())
            payloads.append(view)
        package.extra_files = entries
    return payloads


def metadata_dict(package) -> dict:
    """`Package.metadata` as a dict str -> str."""
    return {e.key: e.value if e.value is not None else "" for e in package.metadata}


def extra_file_view(package_file, name: str) -> memoryview:
    """The bytes of extra file `name`: a read-only view into the file's data (no copy)."""
    for e in getattr(package_file.package, "extra_files", None) or []:
        if e.name == name:
            return package_file.storage_view(e.storage)
    raise KeyError(name)


def extra_files_dict(package_file) -> dict:
    """Every extra file, name -> bytes (copied out of the file)."""
    return {e.name: bytes(package_file.storage_view(e.storage))
            for e in getattr(package_file.package, "extra_files", None) or []}
