"""Optional dependencies: a missing one is a MissingDependencyError naming the extra that installs it.

The core (read, open with framework="np", validate, the CLI's inspect,
validate, dump, view and .pt2f-to-.pt2f convert) needs neither torch nor
numpy. Each entry point that needs one asks here first, so the user reads
the command that installs it instead of a bare ModuleNotFoundError from deep
inside the loader. The command depends on how pt2format was installed
(`install_hint`): the package is on no public index yet, so
``pip install 'pt2format[torch]'`` is the hint only where pip's records say
it came from one.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import shlex
from pathlib import Path
from urllib.parse import unquote, urlparse

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
        raise MissingDependencyError(f"{what} needs {module}, which is not installed: {install_hint(extra)}",
                                     extra=extra, module=module) from e


def install_hint(extra: str, dist=None, package_dir: Path | None = None) -> str:
    """The command that installs `extra` for this installation of pt2format.

    - run from a checkout (an editable install, or the checkout on
      ``sys.path``): the extra from that checkout, through its
      constraints.txt (which pins torch's CPU build);
    - installed from a directory (``pip install /path/to/checkout``): the
      same, from the directory pip's records name;
    - installed from a wheel or sdist file: the extra's own requirements
      (from the package's metadata), which pip installs anywhere;
    - otherwise (an index): ``pip install 'pt2format[extra]'``.
    """
    root = (package_dir or Path(__file__).resolve().parent).parent
    if (root / "pyproject.toml").is_file() and (root / "constraints.txt").is_file():
        return _from_checkout(str(root), extra, editable=True)
    if dist is None:
        try:
            dist = importlib.metadata.distribution("pt2format")
        except importlib.metadata.PackageNotFoundError:
            return f"pip install 'pt2format[{extra}]'"
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        direct = None
    if isinstance(direct, dict) and "dir_info" in direct:
        path = unquote(urlparse(direct.get("url", "")).path)
        return _from_checkout(path, extra, editable=bool((direct.get("dir_info") or {}).get("editable")))
    if isinstance(direct, dict):  # a wheel or sdist file (archive_info), or a VCS URL
        wanted = [r.split(";")[0].strip() for r in (dist.requires or [])
                  if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", r)]
        if wanted:
            return "pip install " + " ".join(shlex.quote(r) for r in wanted)
    return f"pip install 'pt2format[{extra}]'"


def _from_checkout(root: str, extra: str, *, editable: bool) -> str:
    constraints = shlex.quote(f"{root}/constraints.txt")
    return f"pip install -c {constraints} {'-e ' if editable else ''}{shlex.quote(f'{root}[{extra}]')}"
