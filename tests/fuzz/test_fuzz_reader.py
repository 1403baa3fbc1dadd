"""The Python reader's fuzz harness: regression inputs replayed, the seeds clean, and CI's short atheris pass.

Longer campaigns are manual (scripts/fuzz_python.sh -runs=1000000). An input
that once escaped as a non-Pt2FormatError goes to tests/fuzz/regressions/ and
is replayed here forever.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "fuzz" / "fuzz_reader.py"
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
FUZZ_SECONDS = int(os.environ.get("PT2F_FUZZ_SECONDS", "20"))


def _env(tmp_path):
    sep = os.pathsep
    return {**os.environ, "PYTHONPATH": sep.join([str(ROOT), str(ROOT / "tests" / "support")]),
            "PT2F_FUZZ_FINDINGS": str(tmp_path / "findings"), "PYTHON": sys.executable}


def _replay(tmp_path, files):
    proc = subprocess.run([sys.executable, str(HARNESS), "--replay", *map(str, files)], capture_output=True,
                          text=True, timeout=600, env=_env(tmp_path))
    return proc, sorted((tmp_path / "findings").glob("*.txt"))


def test_seeds_and_regressions_replay_clean(tmp_path):
    seeds = tmp_path / "seeds"
    subprocess.run([sys.executable, str(HARNESS), "--seeds", str(seeds)], check=True, timeout=300, env=_env(tmp_path))
    files = sorted(seeds.iterdir()) + (sorted(REGRESSIONS.iterdir()) if REGRESSIONS.is_dir() else [])
    assert len(files) >= 3 * len(list((ROOT / "conformance" / "golden").glob("*/*/program.pt2f")))
    proc, findings = _replay(tmp_path, files)
    assert proc.returncode == 0 and not findings, proc.stderr[-3000:] + "".join(f.read_text() for f in findings)


@pytest.mark.corpus
@pytest.mark.xdist_group("py_fuzz")
def test_atheris_short_run_finds_nothing(tmp_path):
    env = {**_env(tmp_path), "PT2F_BUILD_ROOT": str(tmp_path / "build")}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "fuzz_python.sh"), str(FUZZ_SECONDS)], capture_output=True,
                          text=True, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    m = re.search(r"fuzz_python.sh: (\d+) executions without a finding", proc.stdout)
    assert m, proc.stdout
    assert int(m.group(1)) > 100  # a fuzzer that ran nothing proves nothing
