"""The viewer's layout rules for deep models, unit-tested in Node (no browser; a few seconds).

`loaders/ts/viewer/test/*.test.ts` run under Node's test runner through
`tools/unit-test.mjs` (esbuild bundles each test with the sources it imports):
on a synthetic GPT-2-shaped program of 12 and 48 blocks, a value read by
every block is drawn as one edge with its count, the chain of blocks is
straight, and the opening view and "fit" keep every block's title at 11 px or
more, with no two titles overlapping. The browser tests (test_viewer.py)
measure the same on pages of real exported models.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import native_util_ts as U
import viewer_driver as D

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]


def test_layout_rules_for_deep_models():
    why = U.missing_toolchain()
    if why:
        pytest.skip(why)
    U.build()  # installs the viewer's node_modules (esbuild) when missing
    r = subprocess.run(["node", str(D.VIEWER / "tools" / "unit-test.mjs"), "--test-reporter=tap"], cwd=D.VIEWER,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)$", r.stdout, re.M).group(1))
    failed = int(re.search(r"^# fail (\d+)$", r.stdout, re.M).group(1))
    assert failed == 0 and passed >= 13, r.stdout[-3000:]
