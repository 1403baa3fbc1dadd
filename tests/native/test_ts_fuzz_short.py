"""CI's short pass of the TypeScript reader's mutation-loop fuzzer (scripts/fuzz_ts.sh); longer runs are manual."""

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
@pytest.mark.xdist_group("ts_fuzz")
def test_ts_fuzz_short_run_finds_nothing(tmp_path):
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "fuzz_ts.sh"), str(FUZZ_SECONDS)], capture_output=True,
                          text=True, timeout=1200,
                          env={**os.environ, "PYTHON": sys.executable, "PT2F_BUILD_ROOT": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    m = re.search(r"fuzz_ts.sh: (\d+) executions in \d+s", proc.stdout)
    assert m, proc.stdout
    assert int(m.group(1)) > 1000  # a fuzzer that ran nothing proves nothing

