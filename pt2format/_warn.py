"""Warnings reported at the user's line: the first frame outside pt2format and torch."""

from __future__ import annotations

import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
# pt2format's own code (pt2format/, and exporter/ and loaders/ in a source checkout) and the libraries
# our frames call through; a warning raised under them belongs to whoever called pt2format.
_INTERNAL = tuple(os.path.join(d, "") for d in (_HERE, os.path.join(_REPO, "loaders"), os.path.join(_REPO, "exporter")))
_LIBRARIES = (os.sep + "torch" + os.sep, os.sep + "contextlib.py", os.sep + "functools.py")


def _internal(filename: str) -> bool:
    filename = os.path.abspath(filename) if filename and not filename.startswith("<") else filename
    return filename.startswith(_INTERNAL) or any(part in filename for part in _LIBRARIES)


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """`warnings.warn(message, category)` attributed to the first frame outside pt2format and torch."""
    frame = sys._getframe(0)
    level = 1
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
