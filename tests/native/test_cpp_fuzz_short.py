"""CI's short libFuzzer run of the C++ reader (scripts/fuzz_cpp.sh); longer runs are manual."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUZZ_SECONDS = int(os.environ.get("PT2F_FUZZ_SECONDS", "20"))


@pytest.mark.native
@pytest.mark.corpus
@pytest.mark.xdist_group("cpp_fuzz")
def test_libfuzzer_short_run_finds_nothing():
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "fuzz_cpp.sh"), str(FUZZ_SECONDS)],
                          capture_output=True, text=True, timeout=1200, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    m = re.search(r"fuzz_cpp.sh: (\d+) executions in \d+s without a finding", proc.stdout)
    assert m, proc.stdout
    # A fuzzer that ran nothing proves nothing.
    assert int(m.group(1)) > 1000
