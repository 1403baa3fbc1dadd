"""benchmarks/bench_torch.py runs end to end (--quick sizes) and prints its comparison table.

No timing is asserted: speed is for the benchmark's reader, not for tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(300)
def test_bench_torch_quick_prints_table(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_torch.py"), "--quick",
                           "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| model | nodes | format |"))
    rows = [line.split(" | ") for line in lines[header + 2:] if line.startswith("| ")]
    seen = {(r[0].lstrip("| "), r[2]) for r in rows}
    for model in ("gpt2", "deep", "big"):
        for fmt in ("torch", "pt2f-flatbuffers", "pt2f-msgpack", "pt2f-json"):
            assert (model, fmt) in seen, (model, fmt, proc.stdout)
    torch_rows = [r for r in rows if r[2] == "torch"]
    assert all(r[3] != "–" for r in torch_rows), proc.stdout  # torch's own numbers are always there


@pytest.mark.timeout(300)
def test_bench_shards_smoke_prints_table_and_cleans_up(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_shards.py"), "--gb", "0.02",
                           "--dir", str(tmp_path)], capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "variant" not in line]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [
        "torch.export (1 file)", "pt2format, 1 file", "pt2format, 4 shards"]
    assert os.listdir(tmp_path) == []  # the scratch files are gone
