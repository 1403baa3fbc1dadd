"""The fixed code of the generated modules, as string.Template files (`$name` placeholders).

The emitters write what differs per table; what does not (module preambles,
the readers' bounds-checking closures, the writer's builder closures) is
kept here as plain Python text, readable and diffable as code.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

_DIR = Path(__file__).resolve().parent


def render(name: str, **values) -> str:
    """The template `name` (a file of this directory) with `values` substituted."""
    return Template((_DIR / name).read_text()).substitute(values)
