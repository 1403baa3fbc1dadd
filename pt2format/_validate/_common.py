"""The error helpers every part of the validator raises through (paths are built only on failure)."""

from __future__ import annotations

from pt2format.errors import Pt2FormatError, ValidationError


def _fail(message: str, path: str | None = None, **kw) -> ValidationError:
    return ValidationError(message, path=path, **kw)


def _wrap(err: Pt2FormatError, prefix: str) -> Pt2FormatError:
    return err.with_context(path_prefix=prefix)
