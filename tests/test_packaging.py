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
