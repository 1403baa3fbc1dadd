"""pt2format: a serialization-first exchange format for torch.export programs.

`save`, `load`, `load_module`, `save_weights`, `attach_weights`,
`from_torch` and `to_torch` need torch (they live in pt2format.exporter and
pt2format.loaders and are imported on first use; without torch they raise
MissingDependencyError with the command that installs the `torch` extra);
`read`, `open` (with `framework="np"`, which needs numpy: the `numpy`
extra) and `validate` work on the schema objects alone,
so `import pt2format` never imports torch.

Every function that takes a file accepts a path (``str`` or
``os.PathLike``), and also a binary file object or, for reading, a
bytes-like object. Paths are memory-mapped (zero-copy); bytes and file
objects are read into memory, without mmap. ``mmap=False`` (on ``read``,
``load``, ``load_module``, ``open``, ``validate`` and ``attach_weights``)
reads a path into memory too, for files another process may truncate or
rewrite while they are in use (see SECURITY.md: a mapped file that shrinks
ends the process with SIGBUS).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, Union

from pt2format._deps import require as _require
from pt2format.errors import (
    ChecksumError,
    EncodingError,
    ExportError,
    FallbackWarning,
    FormatError,
    OpsetWarning,
    HeaderError,
    LimitError,
    LoadError,
    ProgramNotFoundError,
    MissingDependencyError,
    Pt2FormatError,
    SegmentError,
    StaleShardError,
    StringClassError,
    TorchArchiveError,
    UnsupportedFeatureError,
    ValidationError,
    VersionError,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only; importing pt2format never imports torch
    import torch.export

    from pt2format._api import PackageFile
    from pt2format._open import LazyFile

# The schema version this package reads and writes: the newest `X.Y (date)` line of the
# schema's header comment, emitted by schema/regen.py.
from pt2format._generated.minors import SCHEMA_VERSION as FORMAT_VERSION  # noqa: E402
from pt2format import _options  # noqa: E402
__version__ = "0.1.0"

#: What every reading function accepts: a path, a bytes-like object, or a binary file object.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
#: What `save` accepts: a path or a writable binary file object.
Target = Union[str, "os.PathLike[str]", IO[bytes]]


def _require_torch(what: str) -> None:
    _require("torch", what)


@_options.SAVE.public
def save(programs: torch.export.ExportedProgram | Mapping[str, torch.export.ExportedProgram], f: Target,
         **options) -> None:
    """Save one ExportedProgram, or several sharing their weights, to a `.pt2f` file.

    Args:
        programs: an ``ExportedProgram`` (saved as program ``"forward"``) or a
            dict name -> ``ExportedProgram``. Storages are deduplicated across
            programs, so shared (tied) weights are stored once.
        f: a path, or a writable binary file object. A path is written
            atomically (temporary file, fsync, rename): an existing file is
            replaced only by a complete one. A symlink is written through to
            its target, and an existing file keeps its permission bits. A file
            object receives exactly the bytes the file would hold, from its
            current position (not atomically).

    Raises:
        ExportError: a program cannot be expressed in the schema.
        TypeError, ValueError: an argument has the wrong type or value.
        OSError: the file cannot be written (the error names ``f``).
    """
    _require_torch("pt2format.save")
    from pt2format.exporter import save_programs

    save_programs(programs, f, **options)


@_options.LOAD.public
def load(f: Source, **options) -> torch.export.ExportedProgram:
    """Load a ``torch.export.ExportedProgram`` from a `.pt2f` file.

    Args:
        f: a path (memory-mapped: weights are zero-copy views of the file,
            copy-on-write, so writes never reach it), a bytes-like object or a
            binary file object (read into memory, no mmap).

    Returns:
        The rebuilt ``ExportedProgram``.

    Raises:
        FormatError: the bytes are not a valid `.pt2f` file (a torch `.pt2`
            archive is named as such, with the command that converts it).
        VersionError: the file needs a newer reader.
        ValidationError: the program breaks an invariant of the format.
        LoadError: the program cannot be rebuilt with this torch (for example
            an unknown operator), or ``program`` names no program.

    Warns:
        FallbackWarning: a pytree class named in the file is not importable;
            a stand-in class with its name and fields (or, when none fits, a
            generic container) is used (reported at the caller's line).
        OpsetWarning: the file's ``aten`` operator version is newer than this
            torch's.
    """
    _require_torch("pt2format.load")
    from pt2format.loaders import load_program

    return load_program(f, **options)


@_options.LOAD_MODULE.public
def load_module(f: Source, **options) -> torch.nn.Module:
    """The callable, unlifted module of a program: what ``load(f, ...).module()`` returns, built directly.

    No ExportedProgram is rebuilt and none of ``module()``'s passes runs:
    the graph comes from the file without fake values, parameters and
    buffers are views of a private map of the file (a buffer the program
    mutates changes in this process only), and inputs are checked before the
    graph runs as torch's guards would check them (sizes, ranges of dynamic
    and derived dims, constants, the inputs' pytree structure), from
    validated values: nothing from the file is compiled or parsed. Outputs,
    mutated buffers and rejected inputs match ``ExportedProgram.module()``
    bit for bit on the conformance corpus (tests/loaders/test_load_module.py).

    A program the fast path does not build (effect tokens, symbolic float or
    bool inputs, no example inputs or root call signature) falls back to
    ``load(f, ...).module()``; the module's ``pt2format_fallback`` attribute
    names the reason (None on the fast path).

    Args:
        f: as for ``load``.
    """
    _require_torch("pt2format.load_module")
    from pt2format.loaders import load_module as _load_module

    return _load_module(f, **options)


@_options.SAVE_WEIGHTS.public
def save_weights(weights: torch.export.ExportedProgram | Mapping[str, Any], path: Target, **options) -> None:
    """Save weights only (no program): an ExportedProgram's state, a dict name -> tensor, or a dict of such sets.

    The file is read back by `attach_weights(ep, path)` or
    `load(program_file, ...)` followed by `attach_weights`.

    Args:
        weights: an ``ExportedProgram`` (its state), a dict name -> tensor, or
            a dict set name -> either.
        path: as ``f`` of ``save``.
    """
    _require_torch("pt2format.save_weights")
    from pt2format.exporter import save_weights as _save_weights

    _save_weights(weights, path, **options)


@_options.ATTACH_WEIGHTS.public
def attach_weights(ep: torch.export.ExportedProgram, source: Source | Mapping[str, torch.Tensor],
                   **options) -> torch.export.ExportedProgram:
    """Give `ep` (for example from `load(path, weights=False)`) the weights of `source`; returns `ep`.

    Every state entry must be present with the same dtype and shape, else a
    LoadError lists the differences and `ep` is not changed.

    Args:
        ep: the ``ExportedProgram`` whose state is replaced.
        source: a `.pt2f` file (its program's state, or weight set
            ``weight_set``; a weights-only file's only set), a safetensors
            file, or a dict name -> tensor.
    """
    _require_torch("pt2format.attach_weights")
    from pt2format.loaders import attach_weights as _attach

    return _attach(ep, source, **options)


@_options.READ.public
def read(f: Source, **options) -> PackageFile:
    """Open a `.pt2f` file without torch: the decoded ``Package`` tree plus zero-copy access to its data.

    Args:
        f: a path (memory-mapped), a bytes-like object or a binary file
            object (read into memory, no mmap).

    Returns:
        A ``pt2format.PackageFile``: ``.package`` is the
        ``pt2format.schema.Package`` tree; ``.storage_view(i)`` the bytes of
        storage ``i``. Use it as a context manager.
    """
    from pt2format._api import read as _read

    return _read(f, **options)


@_options.OPEN.public
def open(f: Source, **options) -> LazyFile:  # noqa: A001 - safetensors' name
    """Open a `.pt2f` file lazily, like safetensors' ``safe_open``: nothing is built until asked for.

    ::

        with pt2format.open("model.pt2f") as f:
            f.programs()                 # ["forward"]
            f.signature("forward")       # pt2format.schema.GraphSignature
            f.keys()                     # state entry names
            w = f.get_tensor("linear.weight")   # zero-copy torch tensor ("np": numpy array)
            rows = f.get_slice("linear.weight")[0:512, :]   # reads only those rows' bytes
            f.metadata(), f.extra_files()

    Args:
        f: a path (memory-mapped), a bytes-like object or a binary file object.

    Returns:
        A ``pt2format.LazyFile``.
    """
    from pt2format._open import LazyFile

    return LazyFile(f, **options, torch_state=_torch_state)


def _torch_state(package, storage_view):
    """The torch tensors of an open file (`framework="pt"`), built by the loaders on first use."""
    _require_torch("pt2format.open(framework='pt').get_tensor")
    from pt2format.loaders import StateLoader

    return StateLoader(package, storage_view)


@_options.VALIDATE.public
def validate(f: Source, **options) -> None:
    """Check everything: header, program, schema, references, shard files and every data checksum.

    Raises the first problem as a ``Pt2FormatError`` naming the file, section,
    offset or field path; returns None when the file is sound.

    Args:
        f: as for ``read``.
    """
    from pt2format._api import validate as _validate

    _validate(f, **options)


@_options.FROM_TORCH.public
def from_torch(f: Source, dst: Target, **options) -> None:
    """Convert a torch.export ``.pt2`` archive to a `.pt2f` file (extra files included).

    The archive is read with ``torch.export.load``, which parses torch's JSON
    and sympy strings: this is as safe as ``torch.export.load`` on that file,
    and no safer. Convert only archives you would load with torch. This is
    the only function that hands a file to torch's loader; ``read``,
    ``load``, ``open`` and ``convert`` refuse a torch archive instead.

    Args:
        f: the ``.pt2`` archive: a path, bytes or a binary file object.
        dst: the `.pt2f` file to write: a path or a writable binary file object.

    Raises:
        TorchArchiveError: ``f`` is not a zip, is a damaged one, or
            ``torch.export.load`` raised (its exception is the ``__cause__``).
        FormatError: a path that is not a regular file (FIFO, device, ...).
    """
    _require_torch("pt2format.from_torch")
    from pt2format._interop import from_torch as _from_torch

    _from_torch(f, dst, **options)


@_options.TO_TORCH.public
def to_torch(f: Source, dst: Target, **options) -> None:
    """Convert one program of a `.pt2f` file to a torch.export ``.pt2`` archive (``torch.export.save``).

    Extra files must be UTF-8 text, as torch requires; metadata is dropped.

    Args:
        f: the `.pt2f` file, as for ``load``.
        dst: the ``.pt2`` archive to write (``torch.export.save``'s ``f``).
    """
    _require_torch("pt2format.to_torch")
    from pt2format._interop import to_torch as _to_torch

    _to_torch(f, dst, **options)


def __getattr__(name: str):
    # The handle classes and the schema module are public but imported on first use (keeps import light).
    if name == "LazyFile":
        from pt2format._open import LazyFile

        return LazyFile
    if name == "PackageFile":
        from pt2format._api import PackageFile

        return PackageFile
    if name in ("schema", "dcp"):  # pt2format.dcp imports torch.distributed: only when asked for
        import importlib

        if name == "dcp":
            _require_torch("pt2format.dcp")
        return importlib.import_module(f"pt2format.{name}")
    raise AttributeError(f"module 'pt2format' has no attribute {name!r}")


__all__ = [
    "save", "load", "load_module", "read", "open", "validate", "from_torch", "to_torch", "save_weights", "attach_weights",
    "FORMAT_VERSION", "__version__", "LazyFile", "PackageFile", "FallbackWarning", "OpsetWarning",
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError",
    "EncodingError", "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "StringClassError",
    "ExportError", "LoadError", "ProgramNotFoundError", "TorchArchiveError", "MissingDependencyError",
]
