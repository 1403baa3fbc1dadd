"""pt2format.loaders: .pt2f files -> torch.export.ExportedProgram or a runnable module (imports torch).

`load_program` reads a file; `build_program` rebuilds a program from a decoded
`Package` and a storage-view callback, without touching the disk;
`load_module` builds the unlifted, callable module directly (_module.py).
Attributes are imported on first use, so that `load_module` of a static
program never imports sympy (which _program.py needs for symbolic shapes).
"""

import importlib

_WHERE = {"load_program": "._load", "build_program": "._program", "attach_weights": "._weights",
          "read_weights": "._weights", "load_module": "._module", "StateLoader": "._state",
          "dtype_from_schema": "._values"}

__all__ = list(_WHERE)


def __getattr__(name):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value
