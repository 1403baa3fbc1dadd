"""pyproject.toml as setuptools and pip read it: no deprecation banners, a [torch] extra that keeps a newer torch."""

from __future__ import annotations

import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config():
    """What the build backend sees (its backend-path, scripts/, is on sys.path during a build)."""
    import sys

    from setuptools.config.pyprojecttoml import apply_configuration, read_configuration
    from setuptools.dist import Distribution

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = read_configuration(ROOT / "pyproject.toml")
            apply_configuration(Distribution(), ROOT / "pyproject.toml")  # where the banners came from
    finally:
        sys.path.remove(str(ROOT / "scripts"))
        sys.modules.pop("build_backend", None)
    return config, caught


def test_setuptools_reads_pyproject_without_deprecations():
    """Issue 25, rough edge 8: the `project.license` table printed four deprecation banners on every install."""
    _, caught = _config()
    deprecations = [str(w.message) for w in caught if "deprecat" in w.category.__name__.lower()
                    or "deprecat" in str(w.message).lower()]
    assert deprecations == []


def test_torch_extra_keeps_a_newer_torch():
    """Every torch from the oldest tested one on satisfies the extra, including the ones after this CI's."""
    from packaging.requirements import Requirement

    import torch

    config, _ = _config()
    (req,) = [Requirement(r) for r in config["project"]["optional-dependencies"]["torch"]
              if Requirement(r).name == "torch"]
    this = torch.__version__.split("+")[0]
    major, minor = (int(p) for p in this.split(".")[:2])
    for version in ("2.12.0", "2.14.1", this, f"{major}.{minor + 1}.0", f"{major}.{minor + 5}.0", f"{major + 1}.0.0"):
        assert req.specifier.contains(version), (str(req), version)
    assert not req.specifier.contains("2.11.0")  # the oldest tested torch is the floor (docs/versions.md)


def _backend(monkeypatch, root):
    """scripts/build_backend.py as the build imports it, with its checkout root moved to `root`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_backend_under_test", ROOT / "scripts" / "build_backend.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    monkeypatch.setattr(backend, "ROOT", root)
    monkeypatch.setattr(backend, "PAGE", root / "loaders" / "ts" / "viewer" / "dist" / "viewer.html")
    return backend


def test_without_npm_the_package_builds_without_the_viewer_page(monkeypatch, tmp_path, capsys):
    """Issue 44 item 3: no Node on PATH is no reason to fail an install of the core; nothing is run to build."""
    import shutil
    import subprocess

    backend = _backend(monkeypatch, tmp_path)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "build_ts.sh").write_text("exit 1\n")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError(a)))
    assert backend.viewer_page() is None
    assert "no viewer page" in capsys.readouterr().err
    prebuilt = tmp_path / backend.PACKAGED  # an sdist's copy
    prebuilt.parent.mkdir(parents=True)
    prebuilt.write_text("<html><!--PT2F-EMBED--></html>")
    assert backend.viewer_page() == prebuilt


def test_view_without_a_page_says_how_to_get_one(monkeypatch, tmp_path):
    import pytest

    from pt2format import _view

    monkeypatch.delenv(_view.TEMPLATE_ENV, raising=False)
    monkeypatch.setattr(_view, "_PACKAGED", tmp_path / "site" / "pt2format" / "_viewer" / "viewer.html")
    monkeypatch.setattr(_view, "_BUILT", tmp_path / "site" / "loaders" / "ts" / "viewer" / "dist" / "viewer.html")
    with pytest.raises(_view.ViewerNotBuiltError) as e:  # an installed package built without Node
        _view.template_path()
    assert "npm" in str(e.value) and "bash scripts/build_ts.sh --no-browser" in str(e.value)
    assert f"{_view.TEMPLATE_ENV}=<checkout>/loaders/ts/viewer/dist/viewer.html" in str(e.value)
    (tmp_path / "site" / "loaders" / "ts" / "viewer").mkdir(parents=True)
    (tmp_path / "site" / "loaders" / "ts" / "viewer" / "package.json").write_text("{}")  # a checkout, not built
    with pytest.raises(_view.ViewerNotBuiltError, match="not built in this checkout: run `bash scripts/build_ts.sh"):
        _view.template_path()
