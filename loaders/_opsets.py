"""The torch a file was written with, against this one: `Producer.torch_version` and `Program.opsets`.

torch's `aten` operator version does not move with every operator change
(2.12, 2.13 and 2.14 all report 10, while 2.14 added, removed and renamed
operators), so the release that wrote the file is compared too. A file from a
newer torch warns (OpsetWarning); an operator this torch lacks is a LoadError
naming both versions (see `name_torch_versions`).
"""

from __future__ import annotations

import re

import torch

from pt2format._warn import warn_at_caller
from pt2format.errors import LoadError, OpsetWarning

#: A release as torch prints it: "2.14.1", "2.13.0+cpu", "2.15.0a0+git1234", "2.16.0.dev20260101".
_RELEASE = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?")
#: Operator namespaces that torch itself defines: a missing one is a torch version matter, not a missing import.
TORCH_NAMESPACES = frozenset({"aten", "prims", "higher_order"})


def release(version) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a torch version string from a file; None when it does not start like one.

    Matched with a bounded pattern, never evaluated. Pre-releases count as
    their release (2.15.0a0 is 2.15.0): close enough to decide whether to warn.
    """
    if not isinstance(version, str):
        return None
    m = _RELEASE.match(version)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def writer_torch(package) -> str | None:
    """The torch version the file records for its writer (free text, shown as given), or None."""
    producer = getattr(package, "producer", None)
    version = getattr(producer, "torch_version", None)
    return version if isinstance(version, str) and version else None


def check_opsets(program, package=None) -> None:
    """Warn (OpsetWarning) when the file comes from a newer torch release or `aten` operator version."""
    ours = torch._C._get_max_operator_version()
    writer = writer_torch(package) if package is not None else None
    theirs_release, ours_release = release(writer), release(torch.__version__)
    newer_aten = [o.version for o in program.opsets if o.namespace == "aten" and o.version > ours]
    if newer_aten:
        warn_at_caller(f"program {program.name!r} was written with aten operator version {newer_aten[0]}, "
                       f"newer than this torch's {ours} (written by torch {writer or 'unknown'}, read by torch "
                       f"{torch.__version__}); operators whose schema changed since may fail to load or behave "
                       "differently", OpsetWarning)
    elif theirs_release is not None and ours_release is not None and theirs_release > ours_release:
        warn_at_caller(f"program {program.name!r} was written by torch {writer}, newer than this torch "
                       f"({torch.__version__}), with the same aten operator version ({ours}); operators that "
                       "torch added or changed since may be missing here or behave differently", OpsetWarning)


def name_torch_versions(error, package):
    """Add both torch versions to a LoadError about an operator of torch's own namespaces; returns `error`."""
    if isinstance(error, LoadError) and getattr(error, "torch_operator", None) and not getattr(
            error, "versions_named", False):
        writer = writer_torch(package) or "an unrecorded version"
        error.detail += f"; the file was written by torch {writer}"
        error.versions_named = True
        error.args = (error._render(),)
    return error
