"""scripts/demo.py: the files it names exist after it ends, and its figures compare like with like.

It printed a path inside a temporary directory deleted at exit, and
pt2format's first load with imports beside torch's warm load without them.
Slow (an export and two fresh processes that load a dynamic program): behind --corpus, as CI runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.corpus


def test_demo_keeps_what_it_names_and_times_both_loads_alike(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), "--out", str(out)], capture_output=True,
                          text=True, timeout=900, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("OK"), proc.stdout[-2000:] + proc.stderr[-3000:]
    for name in re.findall(r"(\S+\.pt2f?)\b", proc.stdout):  # every file it names is there after it ended
        if "/" in name:
            assert Path(name).is_file(), name
    assert (out / "model.pt2f").is_file() and (out / "model.pt2").is_file()
    loads = [ln for ln in proc.stdout.splitlines() if re.match(r"(pt2format|torch\.export) load ", ln)]
    assert len(loads) == 2 and all(re.search(r"ms first, +[\d.]+ ms warm", ln) for ln in loads), proc.stdout
    assert "imports included" not in proc.stdout and "no fsync" in proc.stdout
