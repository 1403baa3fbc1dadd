"""The exception hierarchy: one root, split by what the caller can do.

Every error names where it happened (file, section, offset, field path) and
what was expected; the same facts are attributes so tools need not parse
messages. Each class also derives from the builtin a caller of the library
it stands in for already catches, so handlers written for those keep working:

- bad bytes or broken invariants (FormatError, ValidationError): ValueError,
  as msgpack's and safetensors' header errors are;
- a program torch cannot rebuild, or a file this reader is too old for
  (LoadError, VersionError), and a program that cannot be written
  (ExportError): RuntimeError, as torch.export.load and torch.export.save
  raise (torch's SerializeError is a RuntimeError);
- a missing optional dependency (MissingDependencyError): ImportError, as
  the failed import itself would be.

docs/api.rst ("Errors and warnings") draws the tree and says why.
"""

from __future__ import annotations


class Pt2FormatError(Exception):
    """Root of every error pt2format raises on purpose."""

    def __init__(self, message: str, *, file=None, section=None, offset=None, path=None, expected=None, got=None):
        self.file = None if file is None else str(file)
        self.section = section
        self.offset = offset
        self.path = path
        self.expected = expected
        self.got = got
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(f"file {self.file!r}")
        if self.section is not None:
            where.append(f"section {self.section!r}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.path:
            where.append(f"at {self.path}")
        msg = self.detail
        if self.expected is not None:
            msg += f" (expected {self.expected}, got {self.got})"
        elif self.got is not None:
            msg += f" (got {self.got})"
        return f"{', '.join(where)}: {msg}" if where else msg

    def with_context(self, *, file=None, section=None, path_prefix=None):
        """Add where-information as the error unwinds; returns self for `raise`."""
        if file is not None and self.file is None:
            self.file = str(file)
        if section is not None and self.section is None:
            self.section = section
        if path_prefix:
            self.path = f"{path_prefix}.{self.path}" if self.path else path_prefix
        self.args = (self._render(),)
        return self

    def __str__(self) -> str:
        return self._render()


class FormatError(Pt2FormatError, ValueError):
    """The bytes are not a well-formed pt2format file."""


class HeaderError(FormatError):
    """Bad magic, header length, header checksum or section table."""


class StaleShardError(HeaderError):
    """A shard file next to the main file belongs to another save (its package id differs)."""


class ChecksumError(FormatError):
    """A section or storage does not match its recorded checksum."""


class SegmentError(FormatError):
    """A section or storage is out of bounds, misaligned or overlapping."""


class EncodingError(FormatError):
    """The program section cannot be decoded in its declared encoding."""


class LimitError(FormatError):
    """A size or nesting depth exceeds a safety limit."""


class TorchArchiveError(FormatError):
    """torch could not read a torch.export `.pt2` archive given for conversion (`from_torch`, `convert --from-torch`).

    Raised from torch's own error (kept as `__cause__`): a damaged zip, a
    missing entry, or any exception `torch.export.load` raised.
    """


class VersionError(Pt2FormatError, RuntimeError):
    """The file needs a newer (or different) reader."""


class UnsupportedFeatureError(VersionError):
    """The file uses a required feature this reader does not know."""


class ValidationError(Pt2FormatError, ValueError):
    """The program decodes but breaks an invariant (types, references, ranges)."""


class StringClassError(ValidationError):
    """A string breaks the grammar of its declared class (identifier, attribute path, ...; SPEC.md §9)."""

    def __init__(self, message: str, *, string_class=None, **where):
        self.string_class = string_class
        super().__init__(message, **where)


class ExportError(Pt2FormatError, RuntimeError):
    """An ExportedProgram cannot be converted to the schema."""


class LoadError(Pt2FormatError, RuntimeError):
    """A decoded program cannot be rebuilt as a torch ExportedProgram."""


class ProgramNotFoundError(LoadError, KeyError):
    """The file holds no program of the name asked for, or several and no ``"forward"`` to default to.

    Also a KeyError, as a mapping lookup by name is (``open(...).program(name)``).
    """


class MissingDependencyError(Pt2FormatError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it.

    `extra` is that extra's name (``"torch"``), `module` the module that
    failed to import. The message ends with the pip command that installs it
    for the way pt2format was installed (a checkout, a wheel, an index).
    """

    def __init__(self, message: str, *, extra: str, module: str, **where):
        self.extra = extra
        self.module = module
        super().__init__(message, **where)
        self.name = module  # ImportError's own attribute: the module that could not be imported


class FallbackWarning(UserWarning):
    """A pytree class named in the file is not importable here; a stand-in class is used in its place.

    The program still loads and runs. The stand-in has the class's name and
    fields and its way of reaching them (namedtuple: index and attribute;
    dataclass: attribute; dict-like classes such as ModelOutput: attribute,
    key and index), so specs print the same and a re-save gives the same
    bytes; when no stand-in fits, a generic container (tuple or dict) is
    used. Import (or register) the class before loading to get the real
    class back. Reported at the caller's line.
    """


class OpsetWarning(UserWarning):
    """The file was written by a newer torch than this one: its operators may differ from this torch's.

    Fired when the writer's torch release (`Package.producer.torch_version`)
    is newer than this torch's, or its `aten` operator version (`Program.opsets`)
    is. Both are compared because the operator version does not move with
    every change: torch 2.12, 2.13 and 2.14 all report aten opset 10, while
    2.14 added, removed and renamed operators. An operator the file uses and
    this torch lacks is then a LoadError naming both torch versions; the
    warning says why before that happens, and a program whose operators all
    exist still loads. A file from an older torch does not warn. Reported at
    the caller's line.
    """


__all__ = [
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError",
    "EncodingError", "LimitError", "TorchArchiveError", "VersionError", "UnsupportedFeatureError", "ValidationError",
    "StringClassError",
    "ExportError", "LoadError", "MissingDependencyError", "FallbackWarning", "OpsetWarning",
]
