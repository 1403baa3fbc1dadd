"""Optional dependencies: a missing one is a MissingDependencyError naming the extra that installs it.

The core (read, open with framework="np", validate, the CLI's inspect,
validate, dump, view and .pt2f-to-.pt2f convert) needs neither torch nor
numpy. Each entry point that needs one asks here first, so the user reads
"install pt2format[torch]" instead of a bare ModuleNotFoundError from deep
inside the loader.
"""

from __future__ import annotations

import importlib

from pt2format.errors import MissingDependencyError

#: module -> the extra of pyproject.toml that installs it
EXTRAS = {"torch": "torch", "numpy": "numpy"}


def require(module: str, what: str):
    """Import `module` (top level) for `what` (e.g. "pt2format.load"), or raise MissingDependencyError."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if e.name != module:
            raise  # `module` is there but broken (a missing shared library, a module it imports): not an extra
        extra = EXTRAS[module]
        raise MissingDependencyError(f"{what} needs {module}, which is not installed: "
                                     f"pip install 'pt2format[{extra}]'", extra=extra, module=module) from e
