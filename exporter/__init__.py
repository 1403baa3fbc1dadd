"""pt2format.exporter: torch.export.ExportedProgram -> pt2format schema objects and data (imports torch).

`save_programs` writes a file; `export_package` does the conversion in memory
and returns (Package, storage payloads); `export_program` converts one
program into shared tensor/operator tables.

The names are imported on first use (PEP 562 `__getattr__`): the loader
shares small tables with the exporter (`_enums`, `_operators`, `_origins`),
and importing those must not pull in the whole exporter and sympy with it,
which would cost a cold `load` about a second.
"""

from __future__ import annotations

import importlib

_LAZY = {"export_package": "._program", "export_program": "._program", "save_programs": "._save",
         "save_weights": "._save"}

__all__ = ["export_program", "export_package", "save_programs", "save_weights"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
