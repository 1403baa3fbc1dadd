"""The PEP 517 backend: setuptools, plus the viewer page in every wheel.

`pt2format view` embeds a file into one HTML page (TypeScript reader and
viewer, built by scripts/build_ts.sh). A wheel must carry that page, since an
installed package has no checkout to build it in: build_py runs
scripts/build_ts.sh (it does nothing when the page is up to date) and copies
loaders/ts/viewer/dist/viewer.html to pt2format/_viewer/viewer.html in the
wheel. The page is never committed (it is generated), and an editable install
reads it from the checkout, so `pip install -e .` builds nothing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools.build_meta import *  # noqa: F401,F403 - the backend's hooks, unchanged
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "loaders" / "ts" / "viewer" / "dist" / "viewer.html"
#: Where pt2format._view looks for the page inside an installed package.
PACKAGED = Path("pt2format") / "_viewer" / "viewer.html"


class build_py(_build_py):  # noqa: N801 - setuptools' command name
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        subprocess.run(["bash", str(ROOT / "scripts" / "build_ts.sh"), "--no-browser"], check=True, cwd=ROOT)
        if not PAGE.is_file():
            raise RuntimeError(f"scripts/build_ts.sh left no viewer page at {PAGE.relative_to(ROOT)}")
        dest = Path(self.build_lib) / PACKAGED
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PAGE, dest)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if not getattr(self, "editable_mode", False):
            outputs.append(str(Path(self.build_lib) / PACKAGED))
        return outputs

