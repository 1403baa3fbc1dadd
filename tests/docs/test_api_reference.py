"""Every public name (`pt2format.__all__`) has an entry in the API reference, docs/api.rst (issue 25).

A cheap check of the source (no Sphinx run); tests/docs/test_docs_build.py
checks that the built page has an anchor for each.
"""

from __future__ import annotations

import re
from pathlib import Path

import pt2format

API = Path(__file__).resolve().parents[2] / "docs" / "api.rst"


def documented() -> set:
    text = API.read_text(encoding="utf-8")
    return set(re.findall(r"^\.\. auto(?:function|class|exception|data)::\s+pt2format\.(\w+)\s*$", text, re.M))


def test_every_public_name_is_documented():
    missing = [n for n in pt2format.__all__ if n not in documented()]
    assert not missing, f"in pt2format.__all__ but not in docs/api.rst: {missing}"


def test_api_reference_documents_nothing_that_is_not_public():
    extra = sorted(documented() - set(pt2format.__all__))
    assert not extra, f"docs/api.rst documents names missing from pt2format.__all__: {extra}"
