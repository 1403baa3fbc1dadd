"""What the writer's minor labelling (pt2format._content_minor) costs on save, against the save itself.

    python benchmarks/bench_label.py                 # the 20,001-node program and GPT-2 (bench_torch's sizes)
    python benchmarks/bench_label.py --deep-nodes 2000

Prints, per model: the time of `pt2format.save` (flatbuffers, no fsync), of
`content_minor` on the saved tree as the writer runs it (it stops at the first
newer name and restarts with what is newer still), and of the full walk over every
table that could hold a name newer than X.0 (a program that uses none: the worst case).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _best(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deep-nodes", type=int, default=20_001)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="deep,gpt2")
    args = ap.parse_args(argv)
    import torch

    import bench_torch
    import pt2format
    from pt2format import _content_minor

    sizes = {"gpt2": {}, "gpt2_seq": 64, "deep_nodes": args.deep_nodes}  # bench_torch.py's defaults
    for name in args.models.split(","):
        torch.manual_seed(0)
        model, inputs, kwargs = bench_torch.build_model(name, sizes)
        ep = torch.export.export(model, inputs, kwargs)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.pt2f")
            save = _best(lambda: pt2format.save(ep, path, fsync=False, progress=False), args.repeat)
            pkg = pt2format.read(path).package
        nodes = sum(len(p.graph.nodes) for p in pkg.programs)
        early = _best(lambda: _content_minor.content_minor(pkg), args.repeat)
        # The worst case: a tree with no newer name at all is walked over every table that could hold one.
        bare = {cls: ((), (), (), kids) for cls, (_, _, _, kids) in _content_minor._plans(0).items()}
        full = _best(lambda: _content_minor._walk(pkg, bare, 0), args.repeat)
        print(f"{name}: {nodes} nodes, label {pkg.format_version.major}.{pkg.format_version.minor}; "
              f"save {save * 1e3:.1f} ms; labelling as run {early * 1e3:.2f} ms ({early / save:.2%}); "
              f"full walk {full * 1e3:.2f} ms ({full / save:.2%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
