"""The PEP 517 backend: setuptools, plus the viewer page in every wheel that can have one.

`pt2format view` embeds a file into one HTML page (TypeScript reader and
viewer, built by scripts/build_ts.sh with Node.js and npm). An installed
package has no checkout to build it in, so build_py puts the page into the
package (pt2format/_viewer/viewer.html), taken from:

1. a build made now, when `npm` is on PATH (scripts/build_ts.sh; it does
   nothing when the page is up to date);
2. else a page already built: the checkout's loaders/ts/viewer/dist/, or the
   copy an sdist carries (sdist below puts it there).

Without Node and without a built page the package installs without it: the
core (read, validate, inspect, dump, convert, load with torch) needs no Node,
and `pt2format view` then says how to get the page. The page is never
committed (it is generated), and an editable install reads it from the
checkout, so `pip install -e .` builds nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools.build_meta import *  # noqa: F401,F403 - the backend's hooks, unchanged
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.sdist import sdist as _sdist

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "loaders" / "ts" / "viewer" / "dist" / "viewer.html"
#: Where pt2format._view looks for the page inside an installed package (and where an sdist carries it).
PACKAGED = Path("pt2format") / "_viewer" / "viewer.html"


def viewer_page() -> Path | None:
    """The page to package: built now if npm is on PATH, else one built before; None when there is none."""
    build_ts = ROOT / "scripts" / "build_ts.sh"
    if shutil.which("npm") and build_ts.is_file() and (ROOT / "loaders" / "ts" / "package.json").is_file():
        proc = subprocess.run(["bash", str(build_ts), "--no-browser"], cwd=ROOT)
        if proc.returncode != 0:
            print("pt2format build: scripts/build_ts.sh failed (above); packaging a page built before, if any",
                  file=sys.stderr)
    for page in (PAGE, ROOT / PACKAGED):
        if page.is_file():
            return page
    print("pt2format build: no viewer page (no npm on PATH, none built before): installing without it; "
          "`pt2format view` says how to add it", file=sys.stderr)
    return None


class build_py(_build_py):  # noqa: N801 - setuptools' command name
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        page = viewer_page()
        self._packaged = []
        if page is not None:
            dest = Path(self.build_lib) / PACKAGED
            dest.parent.mkdir(parents=True, exist_ok=True)
            if page.resolve() != dest.resolve():
                shutil.copyfile(page, dest)
            self._packaged = [str(dest)]

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + list(getattr(self, "_packaged", []))


class sdist(_sdist):  # noqa: N801 - setuptools' command name
    """An sdist carries the built page (when there is one), so installing it needs no Node either."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        page = viewer_page()
        if page is not None:
            dest = Path(base_dir) / PACKAGED
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page, dest)
