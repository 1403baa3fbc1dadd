"""Per-rank loading with torch.distributed.checkpoint: pt2format against DCP's own format and safetensors.

    python benchmarks/bench_dcp.py --gb 1.07 --dir /some/scratch/dir      # the table (world sizes 1, 2, 4)
    python benchmarks/bench_dcp.py --gb 0.05                              # smoke run
    python benchmarks/bench_dcp.py --scenarios 4                          # the correctness scenarios at world size 4
    python benchmarks/bench_dcp.py --gb 0.54 --save 5                     # dcp.save replacing a checkpoint

One state (a stack of square float32 Linear layers, `--gb` of weights) is
written three ways: `pt2format.save` of the exported program (one `.pt2f`),
`dcp.save` with DCP's FileSystemWriter, and safetensors shards (4 files,
`safetensors.torch.save_file`). For each world size, N processes are spawned
(torch.multiprocessing, gloo on CPU) and each calls
`dcp.load(state_dict, storage_reader=...)` on DTensors placed `Shard(0)` over
the N ranks, with `pt2format.dcp.StorageReader`, DCP's `FileSystemReader`
and torch's `HuggingFaceStorageReader`. A last row loads the whole program
with `pt2format.load_module(device_mesh=..., placements=...)`.

Time: the wall time of `dcp.load` in each rank, all ranks at once, after the
files were dropped from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`);
the table shows the slowest rank. Bytes: a second load of the same state in
which each reader's `read_data` runs one rank at a time, on a cold cache
(ranks share the page cache, so concurrent ranks charge each other's pages to
whoever faults first), measured as `read_bytes` of /proc/self/io around it:
bytes this process caused to be fetched from storage, page faults of mapped
files included, with the kernel's readahead. `rchar` (bytes through read()
calls; mapped reads are not in it) is shown next to it.

`--save N` instead times `dcp.save` of the same state in one process,
replacing the checkpoint an untimed first save wrote, N times each,
alternating: `pt2format.dcp.StorageWriter` against DCP's `FileSystemWriter`,
both with their default fsync, after `os.sync()` and `--settle` seconds
(freed memory on a VM may go back to its host meanwhile; see benchmarks/README,
"The save and the page cache"). Best and median of N.

`--scenarios N` runs tests/support/dist_workers.py's scenarios at world size
N (CI runs them at 2): files saved on 1 rank and on 2 ranks are loaded on N.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "support")]

import torch  # noqa: E402


def _io() -> dict:
    with open("/proc/self/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def _drop_cache(directory: str) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _stack(total_bytes: int, width: int):
    n = max(1, round(total_bytes / (width * width * 4)))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width, bias=False) for _ in range(n))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    torch.manual_seed(0)
    with torch.no_grad():
        model = Stack().eval()
    return model


def prepare(directory: str, gb: float, width: int) -> dict:
    import safetensors.torch
    import torch.distributed.checkpoint as dcp

    import pt2format

    model = _stack(int(gb * 1e9), width)
    x = torch.randn(2, width)
    ep = torch.export.export(model, (x,))
    state = {k: v.detach() for k, v in model.state_dict().items()}
    paths = {k: os.path.join(directory, k) for k in ("pt2format", "dcp", "safetensors")}
    for p in paths.values():
        os.makedirs(p, exist_ok=True)
    t = time.perf_counter()
    pt2format.save(ep, os.path.join(paths["pt2format"], "model.pt2f"), progress=False)
    saves = {"pt2format": time.perf_counter() - t}
    t = time.perf_counter()
    dcp.save(state, storage_writer=dcp.FileSystemWriter(paths["dcp"]), no_dist=True)
    saves["dcp"] = time.perf_counter() - t
    names = sorted(state)
    t = time.perf_counter()
    for k in range(4):
        part = {n: state[n] for n in names[k::4]}
        safetensors.torch.save_file(part, os.path.join(paths["safetensors"], f"model-{k + 1:05d}-of-00004.safetensors"))
    saves["safetensors"] = time.perf_counter() - t
    with torch.no_grad():
        torch.save({"x": x, "y": model(x)}, os.path.join(directory, "io.pt"))
    weights = sum(v.numel() * v.element_size() for v in state.values())
    meta = {"weights": weights, "shapes": {k: list(v.shape) for k, v in state.items()}, "saves": saves,
            "paths": paths, "width": width, "io": os.path.join(directory, "io.pt")}
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f)
    return meta


def _measured(reader_cls, directory: str):
    """`reader_cls` whose read_data runs one rank at a time, on a cold cache, recording /proc/self/io around it.

    Ranks share the page cache: read concurrently, whichever rank faults a
    page in first is charged for it. One rank at a time, with the files
    dropped from the cache just before, charges each rank what it reads.
    """
    import torch.distributed as dist

    class Measured(reader_cls):
        def read_data(self, plan, planner):
            fut = None
            for r in range(dist.get_world_size()):
                dist.barrier()
                if r == dist.get_rank():
                    _drop_cache(directory)
                    before = _io()
                    fut = super().read_data(plan, planner)
                    fut.wait()
                    after = _io()
                    self.measured = {k: after[k] - before[k] for k in ("read_bytes", "rchar")}
            dist.barrier()
            return fut

    return Measured


def _reader(fmt: str, path: str, cls_wrapper=None):
    import torch.distributed.checkpoint as dcp

    import pt2format.dcp

    if fmt == "pt2format":
        cls, arg = pt2format.dcp.StorageReader, os.path.join(path, "model.pt2f")
    elif fmt == "dcp":
        cls, arg = dcp.FileSystemReader, path
    else:
        from torch.distributed.checkpoint import HuggingFaceStorageReader

        cls, arg = HuggingFaceStorageReader, path
    return (cls_wrapper(cls) if cls_wrapper else cls)(arg)


def rank_load(rank: int, world_size: int, meta: dict, fmt: str) -> dict:
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, empty

    import pt2format

    mesh = init_device_mesh("cpu", (world_size,))
    path = meta["paths"][fmt if fmt != "pt2format-module" else "pt2format"]

    def fresh():
        return {k: empty(tuple(s), dtype=torch.float32, device_mesh=mesh, placements=[Shard(0)])
                for k, s in meta["shapes"].items()}

    if fmt == "pt2format-module":
        dist.barrier()
        t = time.perf_counter()
        module = pt2format.load_module(os.path.join(path, "model.pt2f"), device_mesh=mesh,
                                       placements={"*weight": Shard(0)})
        seconds = time.perf_counter() - t
        io = torch.load(meta["io"], weights_only=True)
        with torch.no_grad():
            diff = float((module(io["x"]) - io["y"]).abs().max())
        return {"seconds": seconds, "maxdiff": diff}
    # 1. time: every rank at once, as users run it (cold cache: the parent dropped it).
    state = fresh()
    dist.barrier()
    t = time.perf_counter()
    dcp.load(state, storage_reader=_reader(fmt, path))
    seconds = time.perf_counter() - t
    del state
    # 2. bytes: the same load, each rank's reads alone on a cold cache.
    reader = _reader(fmt, path, lambda cls: _measured(cls, path))
    dcp.load(fresh(), storage_reader=reader)
    return {"seconds": seconds, **reader.measured}


def run_table(meta: dict, world_sizes, formats) -> list:
    import dist_harness

    rows = []
    for ws in world_sizes:
        for fmt in formats:
            _drop_cache(meta["paths"][fmt if fmt != "pt2format-module" else "pt2format"])
            reports = dist_harness.run(rank_load, ws, meta, fmt, timeout=1800, pg_timeout=1800)
            row = {"world_size": ws, "format": fmt, "seconds_max": max(r["seconds"] for r in reports),
                   "read_bytes": [r.get("read_bytes") for r in reports], "rchar": [r.get("rchar") for r in reports]}
            if "maxdiff" in reports[0]:
                row["maxdiff"] = max(r["maxdiff"] for r in reports)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def render(meta: dict, rows: list) -> str:
    w = meta["weights"]
    out = [f"weights: {w / 1e9:.2f} GB; bytes per rank as a fraction of the weights (read_bytes, cold cache)", "",
           "| world size | reader | load time (max over ranks) | read_bytes per rank | / weights | rchar per rank |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if r["read_bytes"][0] is None:
            out.append(f"| {r['world_size']} | {r['format']} (program + state, max abs diff {r['maxdiff']:.1e}) | "
                       f"{r['seconds_max']:.2f} s | | | |")
            continue
        per = max(r["read_bytes"])
        out.append(f"| {r['world_size']} | {r['format']} | {r['seconds_max']:.2f} s | "
                   f"{', '.join(f'{b / 1e6:.0f} MB' for b in r['read_bytes'])} | {per / w:.2f} | "
                   f"{', '.join(f'{b / 1e6:.0f} MB' for b in r['rchar'])} |")
    return "\n".join(out)


def run_saves(directory: str, gb: float, width: int, repeat: int, settle: float) -> str:
    """The `--save` table: replacing saves through dcp.save, pt2format's writer against DCP's own."""
    import statistics
    import warnings

    import torch.distributed.checkpoint as dcp

    import pt2format.dcp

    warnings.filterwarnings("ignore", message="torch.distributed is disabled")  # no_dist=True says so already
    state = {k: v.detach() for k, v in _stack(int(gb * 1e9), width).state_dict().items()}
    weights = sum(v.numel() * v.element_size() for v in state.values())
    main = os.path.join(directory, "pt2format", "model.pt2f")
    theirs = os.path.join(directory, "dcp")
    os.makedirs(os.path.dirname(main), exist_ok=True)
    writers = {"pt2format": lambda: pt2format.dcp.StorageWriter(main),
               "dcp": lambda: dcp.FileSystemWriter(theirs, overwrite=True)}
    times: dict = {k: [] for k in writers}
    for k, make in writers.items():  # the checkpoint every timed save replaces
        dcp.save(state, storage_writer=make(), no_dist=True)
    for _ in range(repeat):
        for k, make in writers.items():
            os.sync()
            time.sleep(settle)
            t = time.perf_counter()
            dcp.save(state, storage_writer=make(), no_dist=True)
            times[k].append(time.perf_counter() - t)
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    return "\n".join([
        f"dcp.save of {weights / 1e9:.2f} GB in one process, replacing a checkpoint, fsync on (both writers' "
        f"default); best / median of {repeat}, {settle:g} s settle", "",
        "| writer | best | median |", "|---|---|---|",
        *(f"| {k} | {best[k]:.3f} s | {med[k]:.3f} s |" for k in writers),
        f"| ratio (DCP / pt2format) | {best['dcp'] / best['pt2format']:.1f}× "
        f"| {med['dcp'] / med['pt2format']:.1f}× |"])


def run_scenarios(world_size: int, directory: str) -> int:
    import dist_harness
    import dist_workers

    case = dist_workers.prepare(directory)
    two = dist_harness.run(dist_workers.session, 2, case, ["save"], timeout=600, pg_timeout=300)
    assert all(r["save"]["ok"] for r in two), two
    reports = dist_harness.run(dist_workers.session, world_size, case, timeout=1200, pg_timeout=600)
    print(json.dumps(reports, indent=1))
    bad = []
    for rank, rep in enumerate(reports):
        for name, r in rep.items():
            expect_error = name in ("missing_shard", "missing_shard_dcp", "checksum", "indivisible")
            if r["ok"] == expect_error:
                bad.append((rank, name, r))
    print("scenarios at world size", world_size, ":", "all as expected" if not bad else f"UNEXPECTED {bad}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=1.07, help="weights, in GB (default 1.07)")
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--world-sizes", default="1,2,4")
    ap.add_argument("--formats", default="pt2format,dcp,safetensors,pt2format-module")
    ap.add_argument("--scenarios", type=int, default=None, help="run the test scenarios at this world size instead")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--save", type=int, default=None, metavar="N",
                    help="time N replacing dcp.save calls per writer instead of the load table")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after os.sync() before each timed save")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        if args.scenarios:
            return run_scenarios(args.scenarios, directory)
        if args.save:
            print(run_saves(directory, args.gb, args.width, args.save, args.settle))
            return 0
        meta = prepare(directory, args.gb, args.width)
        print("saves (s):", json.dumps(meta["saves"]), flush=True)
        rows = run_table(meta, [int(x) for x in args.world_sizes.split(",")], args.formats.split(","))
        print(render(meta, rows))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
