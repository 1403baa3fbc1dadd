"""Save, load and verify_data of a program with large synthetic weights: one file against N shards, and torch.

    python benchmarks/bench_shards.py --gb 4.3 --shards 4 --dir /some/scratch/dir
    python benchmarks/bench_shards.py --gb 0.05            # smoke run, seconds

The program is a stack of square float32 Linear layers (weights filled with
distinct values; CRC-32 cost does not depend on them). One process runs
everything in order, deleting each variant's files before the next, so the
page cache holds one variant at a time; loads and verifications run warm
(the file just written is in the page cache), the case users hit right after
a download or a save. Saves fsync (torch.export.save does not, so it is timed
with an explicit fsync too). `load` is pt2format.load / torch.export.load up
to the ExportedProgram (no data read by pt2format: weights stay mapped);
`load+verify` adds verify_data=True, which reads every byte and checks every
CRC-32 (shards in parallel threads); `verify_data` is PackageFile.verify_data
alone. Times are the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import torch

import pt2format


def _model(total_bytes: int, width: int):
    per = width * width * 4
    n = max(1, round(total_bytes / per))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width, bias=False) for _ in range(n))
            with torch.no_grad():
                for i, layer in enumerate(self.layers):
                    layer.weight.fill_(1.0 / (i + 1))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    with torch.no_grad():
        return torch.export.export(Stack(), (torch.randn(1, width),)), n * per


def _best(fn, repeat: int):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
        del out
    return best


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _du(directory) -> int:
    return sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=4.3, help="weights in GB (10^9 bytes)")
    ap.add_argument("--width", type=int, default=8192)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir); emptied afterwards")
    args = ap.parse_args(argv)
    width = args.width if args.gb >= 1 else 512
    ep, nbytes = _model(int(args.gb * 1e9), width)
    base = tempfile.mkdtemp(prefix="pt2f-shards-", dir=args.dir)
    rows = []
    try:
        # torch.export.save / load
        d = os.path.join(base, "torch")
        os.mkdir(d)
        p = os.path.join(d, "m.pt2")

        def torch_save():
            torch.export.save(ep, p)
            _fsync(p)
        rows.append(("torch.export (1 file)", _best(torch_save, args.repeat), _best(lambda: torch.export.load(p),
                                                                                      args.repeat), None, None,
                     _du(d)))
        shutil.rmtree(d)
        max_shard = -(-nbytes // args.shards) + 4096
        for label, kw in (("pt2format, 1 file", {}), (f"pt2format, {args.shards} shards",
                                                      {"max_shard_size": max_shard})):
            d = os.path.join(base, "pt2f")
            os.mkdir(d)
            p = os.path.join(d, "m.pt2f")
            save = _best(lambda: pt2format.save(ep, p, progress=False, **kw), args.repeat)
            load = _best(lambda: pt2format.load(p), args.repeat)
            load_verify = _best(lambda: pt2format.load(p, verify_data=True), args.repeat)

            def verify():
                with pt2format.read(p) as f:
                    f.verify_data()
            rows.append((label, save, load, load_verify, _best(verify, args.repeat), _du(d)))
            shutil.rmtree(d)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"weights: {nbytes / 1e9:.2f} GB ({nbytes} bytes), {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"best of {args.repeat}")
    print("| variant | save (fsync) s | load s | load+verify s | verify_data s | bytes on disk |")
    print("|---|---|---|---|---|---|")
    for label, save, load, lv, ver, size in rows:
        f = (lambda x: "-" if x is None else f"{x:.2f}")
        print(f"| {label} | {f(save)} | {f(load)} | {f(lv)} | {f(ver)} | {size} |")


if __name__ == "__main__":
    main()
