"""`Program.opsets`: the operator set a file was written with, against this torch's."""

from __future__ import annotations

import torch

from pt2format._warn import warn_at_caller
from pt2format.errors import OpsetWarning


def check_opsets(program) -> None:
    """Warn when the file's `aten` operator version is newer than this torch's: operator schemas may differ."""
    ours = torch._C._get_max_operator_version()
    for opset in program.opsets:
        if opset.namespace == "aten" and opset.version > ours:
            warn_at_caller(f"program {program.name!r} was written with aten operator version {opset.version}, "
                           f"newer than this torch's {ours} ({torch.__version__}); operators whose schema changed "
                           "since may fail to load or behave differently", OpsetWarning)
