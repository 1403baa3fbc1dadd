"""Sphinx configuration for the pt2format documentation (built in CI with warnings as errors)."""

from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)  # the checkout's pt2format, whatever is installed

import pt2format  # noqa: E402

project = "pt2format"
author = "pt2format authors"
copyright = "2026, pt2format authors"
version = release = pt2format.__version__
# The file format version, from the same source as the files written (the schema's newest minor):
# pages write {{ format_version }} (MyST substitution) instead of a number that could go stale.
format_version = "{}.{}".format(*pt2format.FORMAT_VERSION)
myst_enable_extensions = ["substitution"]
myst_substitutions = {"version": release, "format_version": format_version}

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "screenshots", "_static"]
myst_heading_anchors = 4
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# torch is not needed to build this site: `bash scripts/docs.sh` on a fresh clone installs only the
# [docs] extra. The one page that imports it (pt2format.dcp, whose classes subclass DCP's) is documented
# with torch mocked, whether or not torch is installed, so the site is the same either way
# (tests/docs/test_docs_build.py builds it with torch blocked).
autodoc_mock_imports = ["torch"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
html_title = f"pt2format {release}"
# 1340 px: at a 1400 px window the text column holds the docs' longest code lines (about 110
# characters at code_font_size); narrower windows get alabaster's fluid layout, and _static/custom.css
# keeps every code block inside the column (it scrolls sideways instead of overflowing).
html_theme_options = {"description": "torch.export programs, serialization first", "page_width": "1340px",
                      "sidebar_width": "220px", "code_font_size": "0.8em"}
html_static_path = ["_static"]
# Markdown pages pulled in from the repository (SPEC.md, the readers' READMEs) link to files of the
# checkout that are not pages of this site; those links stay plain text instead of failing the build.
suppress_warnings = ["myst.xref_missing"]


def _table_defaults(app, obj, bound_method):
    """Show the defaults an options table gives at import (pt2format/_options.py, `Options.configures`).

    `autodoc_preserve_defaults` copies each default's text from the source, where such a keyword-only
    parameter has none (the table gives it to `__kwdefaults__`): it would show an empty default. Those
    parameters show the value's repr instead, as autodoc does without the option.
    """
    sig = getattr(obj, "__signature__", None)
    kwdefaults = getattr(obj, "__kwdefaults__", None) or {}
    if sig is None or not kwdefaults:
        return
    fixed = []
    for p in sig.parameters.values():
        shown = getattr(p.default, "name", "") if p.default is not p.empty else ""
        if p.name in kwdefaults and shown is None:
            p = p.replace(default=kwdefaults[p.name])
        fixed.append(p)
    obj.__signature__ = sig.replace(parameters=fixed)


def setup(app):
    app.connect("autodoc-before-process-signature", _table_defaults, priority=600)  # after preserve_defaults
