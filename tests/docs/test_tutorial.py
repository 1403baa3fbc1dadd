"""docs/tutorial.md runs as written: its Python blocks in one interpreter, its shell blocks in between.

The tutorial's own asserts compare what pt2format gives back with torch's
(the exported program's outputs, `torch.export.load` of the converted
archive, the model's weights), so this test fails when a step stops
working or stops matching torch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "tutorial.md"


def blocks() -> list[tuple[str, str]]:
    """(language, code) of every fenced ``python`` or ``bash`` block, in order."""
    return re.findall(r"^```(python|bash)\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.M | re.S)


def script() -> str:
    """One Python script: Python blocks as they are, shell blocks through the shell (stopping on failure)."""
    out = ["import subprocess as _sp\n"]
    for lang, code in blocks():
        if lang == "python":
            out.append(code)
        else:
            out.append(f"_sp.run({code!r}, shell=True, check=True, executable='/bin/bash')\n")
    return "\n".join(out)


def test_tutorial_covers_every_step():
    text = "\n".join(code for _, code in blocks())
    for call in ("torch.export.export", "pt2format.save(", "pt2format inspect", "pt2format view",
                 "pt2format.load(", "pt2format.load_module(", "pt2format convert", "pt2format.save_weights(",
                 "pt2format.attach_weights("):
        assert call in text, call


@pytest.mark.timeout(600)
def test_tutorial_runs_as_written(tmp_path):
    from pt2format import _view

    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    try:
        _view.template_path()
    except _view.ViewerNotBuiltError:  # the page itself is tested in tests/native/test_viewer.py
        stand_in = tmp_path / "viewer.html"
        stand_in.write_text(f"<html><body>{_view.MARKER}</body></html>", encoding="utf-8")
        env[_view.TEMPLATE_ENV] = str(stand_in)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "tutorial.py").write_text(script(), encoding="utf-8")
    r = subprocess.run([sys.executable, str(tmp_path / "tutorial.py")], cwd=work, env=env, capture_output=True,
                       text=True, timeout=540)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert "OK" in r.stdout  # pt2format validate
    for name in ("tiny.pt2f", "tiny.html", "tiny.pt2", "tiny.json.pt2f", "tiny.weights.pt2f"):
        assert (work / name).is_file(), name


def test_the_symbol_the_prose_names_is_torchs(tmp_path):
    """The tutorial calls the dynamic dimension by the symbol torch gives it (the file, the viewer and torch's own
    printout say it), not by the Dim's Python name."""
    import re

    first = blocks()[0][1]
    scope: dict = {}
    exec(compile(first, "tutorial", "exec"), scope)  # noqa: S102 - the tutorial's own first block
    (symbol,) = [str(s) for s in scope["ep"].range_constraints]
    prose = PAGE.read_text(encoding="utf-8")
    said = re.search(r"torch's symbol for it, `(\w+)` in this run", prose)
    assert said and said.group(1) == symbol, (said and said.group(1), symbol)
