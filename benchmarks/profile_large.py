"""Where a large program's save, load and first output go: the top costs (cProfile, own time) of each.

    python benchmarks/bench_table.py --models deep --workdir DIR    # writes DIR/deep.pt2f and DIR/deep.inputs.pt
    python benchmarks/profile_large.py DIR/deep.pt2f DIR/deep.inputs.pt [--top 5] [--phases save]

Each phase runs once untimed (imports, caches), then once under cProfile:
save (replacing a file, no fsync), warm load, `load()` + `.module()` + the
first call, and `load_module` + the first call. Own time ("tottime") names
the function that spends it; a collection of the cyclic garbage collector
shows up in whatever function was running when it started.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time


def _top(profile, n: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime")
    rows = []
    for func, (cc, nc, tt, ct, _) in sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:n]:
        path, line, name = func
        where = f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}:{line}({name})" if line else name
        rows.append(f"    {tt:7.3f} s own  {ct:7.3f} s cum  {nc:>8} calls  {where}")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("inputs")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--phases", default="save,load,first,load_module",
                    help="comma-separated phases to run: save, load, first (load() + .module() + first output), "
                         "load_module (load_module + first output); default all")
    a = ap.parse_args(argv)

    import torch

    import pt2format

    args, kwargs = torch.load(a.inputs, weights_only=True)
    ep = pt2format.load(a.file)
    out = os.path.join(tempfile.mkdtemp(prefix="pt2f-profile-"), "p.pt2f")

    def first_output():
        with torch.no_grad():
            pt2format.load(a.file).module()(*args, **kwargs)

    def first_output_load_module():
        with torch.no_grad():
            pt2format.load_module(a.file)(*args, **kwargs)

    phases = {
        "save": ("save", lambda: pt2format.save(ep, out, progress=False, fsync=False)),
        "load": ("load", lambda: pt2format.load(a.file)),
        "first": ("load() + .module() + first output", first_output),
        "load_module": ("load_module + first output", first_output_load_module),
    }
    chosen = [p.strip() for p in a.phases.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in phases]
    if unknown:
        ap.error(f"unknown phase(s) {', '.join(unknown)}; choose from {', '.join(phases)}")
    for name, fn in (phases[p] for p in chosen):
        fn()
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        fn()
        prof.disable()
        print(f"{name}: {time.perf_counter() - t:.3f} s under the profiler; top {a.top} by own time")
        print(_top(prof, a.top))
    if os.path.exists(out):
        os.unlink(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
