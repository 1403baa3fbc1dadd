"""The exception hierarchy: one root, split by what the caller can do.

Every error names where it happened (file, section, offset, field path) and
what was expected; the same facts are attributes so tools need not parse
messages. Errors about bad bytes or broken invariants also subclass
ValueError, as msgpack's do, so generic handlers keep working.
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


class VersionError(Pt2FormatError):
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


class ExportError(Pt2FormatError):
    """An ExportedProgram cannot be converted to the schema."""


class LoadError(Pt2FormatError):
    """A decoded program cannot be rebuilt as a torch ExportedProgram."""


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
    """The file was written by a torch whose operator set is newer than this one's.

    `Program.opsets` records the `aten` operator version of the producing torch
    (torch's own serializer keeps it as `opset_version` but never compares it).
    Operators whose schema changed since may fail to load or behave differently;
    the program still loads. Reported at the caller's line.
    """


__all__ = [
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError",
    "EncodingError", "LimitError", "TorchArchiveError", "VersionError", "UnsupportedFeatureError", "ValidationError",
    "StringClassError",
    "ExportError", "LoadError", "FallbackWarning", "OpsetWarning",
]
