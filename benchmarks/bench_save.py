"""Saves of one program, interleaved: pt2format data-first (one pass) vs two-pass, and torch; with and without fsync.

    python benchmarks/bench_save.py FILE.pt2f [REPEAT]

FILE is loaded with pt2format.load (transformers' output types are imported
if available, for GPT-2), then each variant replaces its own file REPEAT
times (default 3), in turn, after `os.sync()` and after the previous save's
old file has been released. "+fsync" for torch adds os.fsync of its file
(torch.export.save never fsyncs). Prints best and median per variant.
"""
import os
import sys
import time

import torch

import pt2format
from pt2format import _api
from pt2format._container.writer import wait_for_released

try:
    import transformers.modeling_outputs  # noqa: F401 - GPT-2's output types, for its pytree spec
except ImportError:
    pass

path = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ep = pt2format.load(path)
d = os.path.dirname(path)
out = {"pt2f": os.path.join(d, "s.pt2f"), "torch": os.path.join(d, "s.pt2")}


def fs(p):
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def save_pt2f(one_pass, fsync):
    _api.DATA_FIRST_MIN_BYTES = 32 << 20 if one_pass else 1 << 62
    pt2format.save(ep, out["pt2f"], progress=False, fsync=fsync)


variants = {
    "pt2f one-pass": lambda: save_pt2f(True, False), "pt2f two-pass": lambda: save_pt2f(False, False),
    "pt2f one-pass+fsync": lambda: save_pt2f(True, True), "pt2f two-pass+fsync": lambda: save_pt2f(False, True),
    "torch": lambda: torch.export.save(ep, out["torch"]),
    "torch+fsync": lambda: (torch.export.save(ep, out["torch"]), fs(out["torch"])),
}
for f in variants.values():
    f()
best = {k: [] for k in variants}
for _ in range(reps):
    for k, f in variants.items():
        os.sync()
        wait_for_released()
        os.sync()
        t = time.perf_counter()
        f()
        best[k].append(time.perf_counter() - t)
for k, v in best.items():
    print(f"{k:22s} best {min(v):.3f} s  median {sorted(v)[len(v)//2]:.3f} s")
for f in out.values():
    os.unlink(f)
