"""pt2format._deps: a missing optional dependency names the command that installs it, for this kind of install."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

import pytest

from pt2format import _deps

ROOT = Path(__file__).resolve().parents[2]
#: A package directory outside any checkout, as in site-packages.
SITE = Path("/nonexistent/site-packages/pt2format")


class _Dist:
    """What importlib.metadata gives for an installed pt2format: pip's direct_url.json and Requires-Dist."""

    def __init__(self, direct_url, requires):
        self._direct, self.requires = direct_url, requires

    def read_text(self, name):
        assert name == "direct_url.json"
        return None if self._direct is None else json.dumps(self._direct)


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requires_dist():
    """Requires-Dist as pip writes it from pyproject.toml: the core, then each extra's with its marker."""
    project = _pyproject()
    return project["dependencies"] + [f'{r}; extra == "{extra}"'
                                      for extra, reqs in project["optional-dependencies"].items() for r in reqs]


@pytest.mark.parametrize("extra", ["torch", "numpy"])
def test_from_a_wheel_the_hint_installs_the_extras_own_requirements(extra):
    """No index has pt2format: from a wheel file the hint names the extra's requirements, which pip finds anywhere."""
    dist = _Dist({"url": "file:///x/pt2format-0.1.0-py3-none-any.whl", "archive_info": {}}, _requires_dist())
    hint = _deps.install_hint(extra, dist, SITE)
    assert hint == "pip install " + " ".join(shlex.quote(r) for r in _pyproject()["optional-dependencies"][extra])
    assert "pt2format[" not in hint


def test_from_a_checkout_the_hint_installs_its_extra_through_its_constraints():
    hint = _deps.install_hint("torch")  # this test runs from the checkout
    assert shlex.split(hint) == ["pip", "install", "-c", f"{ROOT}/constraints.txt", "-e", f"{ROOT}[torch]"]


@pytest.mark.parametrize("editable", [True, False])
def test_installed_from_a_directory_the_hint_names_that_directory(editable, tmp_path):
    checkout = tmp_path / "my checkout"
    dist = _Dist({"url": checkout.as_uri(), "dir_info": {"editable": editable}}, _requires_dist())
    words = shlex.split(_deps.install_hint("torch", dist, SITE))
    assert words == ["pip", "install", "-c", f"{checkout}/constraints.txt"] + ["-e"] * editable + [
        f"{checkout}[torch]"]


def test_from_an_index_the_hint_names_the_extra():
    assert _deps.install_hint("torch", _Dist(None, _requires_dist()), SITE) == "pip install 'pt2format[torch]'"

