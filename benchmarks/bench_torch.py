"""Compare pt2format (each encoding) with torch.export.save/load: time, peak memory, file size.

    python benchmarks/bench_torch.py             # GPT-2 124M, a 20,000-node program, 1 GB of weights
    python benchmarks/bench_torch.py --quick     # tiny sizes: checks the script works (< 60 s)
    python benchmarks/bench_torch.py --models gpt2 --encodings flatbuffers --repeat 3

Every measurement runs in a fresh process forked from a clean server that
has only imported torch and pt2format (multiprocessing "forkserver"): one
process exports a model and performs all its saves, one process per
(model, format) performs a load and the first call of `loaded.module()`.
Peak memory is the rise of the process's resident set (VmHWM, reset before
each measurement through /proc/self/clear_refs; ru_maxrss if that is
unavailable) over its RSS just before the measurement, so it includes mapped
file pages a load touches. torch.export.save never fsyncs, so torch is
timed twice: as is, and followed by an explicit fsync of its file (the same
durability as pt2format's default fsync=True). Each save starts after
os.sync(), so no earlier run's writeback slows it down. Loads run with the
file in the page cache for both formats. Times are the best of --repeat runs
(default 2: from the second run on, a save replaces a file of the same
size, the same page-cache state for every variant; peaks are the largest).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time

ENCODINGS = ("flatbuffers", "msgpack", "json")
#: Libraries a loading process needs for a model's output types (pytree registrations).
LOAD_IMPORTS = {"gpt2": ["transformers.modeling_outputs"]}


# --------------------------------------------------------------------------- memory

def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class PeakRSS:
    """Peak resident-set growth (MB) over a block of code."""

    def __enter__(self):
        gc.collect()
        self.exact = False
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            self.exact = _status_kb("VmHWM") is not None
        except OSError:
            pass
        self.base = _status_kb("VmRSS") or 0
        self.maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return self

    def __exit__(self, *exc):
        if self.exact:
            self.mb = max(0, (_status_kb("VmHWM") or 0) - self.base) / 1024
        else:  # only growth of the all-time maximum is visible
            self.mb = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self.maxrss0) / 1024
        return False


# --------------------------------------------------------------------------- models

def build_model(name: str, sizes: dict):
    """(module, args, kwargs) for one benchmark model; deterministic weights."""
    import torch

    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config(**sizes["gpt2"])).eval()
        ids = torch.randint(0, model.config.vocab_size, (1, sizes["gpt2_seq"]))
        return model, (ids,), {"use_cache": False}
    if name == "deep":
        return DeepStack(sizes["deep_nodes"]), (torch.randn(4, 8),), {}
    if name == "big":
        dim, layers = sizes["big_dim"], sizes["big_layers"]
        model = torch.nn.Sequential(*[torch.nn.Linear(dim, dim, bias=False) for _ in range(layers)])
        with torch.no_grad():
            for p in model.parameters():
                p.uniform_(-1.0 / dim, 1.0 / dim)
        return model.eval(), (torch.randn(2, dim),), {}
    raise ValueError(f"unknown model {name!r}")


def _deep_stack_class():
    import torch

    class _Deep(torch.nn.Module):
        """x = tanh(x * w) + 0.5, repeated: three graph nodes per step."""

        def __init__(self, nodes: int):
            super().__init__()
            self.steps = max(1, nodes // 3)
            self.w = torch.nn.Parameter(torch.full((8,), 0.9))

        def forward(self, x):
            for _ in range(self.steps):
                x = torch.tanh(x * self.w) + 0.5
            return x

    return _Deep


def DeepStack(nodes: int):  # noqa: N802 - a factory standing in for the class
    return _deep_stack_class()(nodes)


# --------------------------------------------------------------------------- workers (fresh processes)

def _err(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:120] if lines else ''}"


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _variant_path(outdir: str, model_name: str, variant: str) -> str:
    fmt = variant.split("+")[0]
    return os.path.join(outdir, f"{model_name}.pt2" if fmt == "torch" else f"{model_name}.{fmt[5:]}.pt2f")


def _save_fn(variant: str, ep):
    import torch

    import pt2format

    fmt, _, fsync = variant.partition("+")
    if fmt == "torch":
        return (lambda p: (torch.export.save(ep, p), _fsync(p))) if fsync else (lambda p: torch.export.save(ep, p))
    return lambda p: pt2format.save(ep, p, encoding=fmt[5:], fsync=bool(fsync), progress=False)


def save_worker(model_name: str, sizes: dict, outdir: str, variants: list, repeat: int) -> dict:
    """Export, then time the given save variants ("torch", "torch+fsync", "pt2f-json", ...).

    The driver gives each variant its own process (a cold allocator and page
    cache state for each, like a user's single save) except with --quick.
    Files are left in `outdir` for the load workers.
    """
    import torch

    _warm_saves(outdir, sorted({v.split("+")[0][5:] for v in variants if v.startswith("pt2f-")}))
    model, args, kwargs = build_model(model_name, sizes)
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(model, args, kwargs, strict=False)
    unique = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in ep.state_dict.values()}
    info = {"export_s": time.perf_counter() - t0, "nodes": len(ep.graph.nodes),
            "params_mb": sum(unique.values()) / 2**20}
    del model
    results = {}
    for variant in variants:
        path = _variant_path(outdir, model_name, variant)
        fn = _save_fn(variant, ep)
        best, peak = None, 0.0
        try:
            for _ in range(repeat):
                if os.path.exists(path):
                    os.unlink(path)
                os.sync()  # no writeback of earlier runs' dirty pages throttles this one
                with PeakRSS() as mem:
                    t = time.perf_counter()
                    fn(path)
                    dt = time.perf_counter() - t
                best = dt if best is None else min(best, dt)
                peak = max(peak, mem.mb)
        except Exception as e:  # noqa: BLE001 - one broken format must not hide the others
            results[variant] = {"error": _err(e)}
            continue
        results[variant] = {"s": best, "peak_mb": peak, "size_mb": os.path.getsize(path) / 2**20}
    return {"info": info, "saves": results}


def _tiny_program():
    import torch

    torch.manual_seed(0)
    return torch.export.export(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), (torch.randn(2, 4),))


def _warm_saves(outdir: str, encodings) -> None:
    """One untimed save per format, so lazy imports and first-call setup are not timed."""
    import torch

    import pt2format

    ep = _tiny_program()
    torch.export.save(ep, os.path.join(outdir, "warmup.pt2"))
    for enc in encodings:
        try:
            pt2format.save(ep, os.path.join(outdir, f"warmup.{enc}.pt2f"), encoding=enc, progress=False)
        except Exception:  # noqa: BLE001 - the timed save reports the error
            pass


def load_worker(path: str, fmt: str, warmup: str, imports: list) -> dict:
    """Load one file and call the loaded module once on the file's example inputs.

    A tiny file of the same format is loaded first (untimed); `imports` are the
    libraries the program's output types come from (transformers), as a user has.
    """
    import importlib

    import torch

    import pt2format

    for name in imports:
        importlib.import_module(name)
    if os.path.exists(warmup):
        try:
            ep = torch.export.load(warmup) if fmt == "torch" else pt2format.load(warmup)
            ep.module()(*ep.example_inputs[0])
        except Exception:  # noqa: BLE001 - the timed load reports the error
            pass
    with PeakRSS() as total:
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            ep = torch.export.load(path) if fmt == "torch" else pt2format.load(path)
            t1 = time.perf_counter()
        load_mb = mem.mb
        args, kwargs = ep.example_inputs
        t1b = time.perf_counter()
        with torch.no_grad():
            ep.module()(*args, **kwargs)
        t2 = time.perf_counter()
    # The inner block resets VmHWM right after the outer one took its base (nothing allocated
    # between), so the outer peak covers load + first output.
    return {"load_s": t1 - t0, "first_output_s": t2 - t1b, "peak_mb": load_mb,
            "peak_first_mb": max(load_mb, total.mb)}


class Workers:
    """Fresh processes forked from a server that imported torch and pt2format once."""

    def __init__(self):
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["torch", "torch._export.serde.serialize", "pt2format", "pt2format.exporter",
                                         "pt2format.loaders"])

    def run(self, fn, *args):
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=self.ctx,
                                                    max_tasks_per_child=1) as ex:
            return ex.submit(fn, *args).result()


# --------------------------------------------------------------------------- driver

def sizes_for(quick: bool, args) -> dict:
    if quick:
        return {"gpt2": dict(n_layer=1, n_embd=32, n_head=2, vocab_size=256, n_positions=64), "gpt2_seq": 8,
                "deep_nodes": 300, "big_dim": 256, "big_layers": 2}
    return {"gpt2": {}, "gpt2_seq": 64, "deep_nodes": args.deep_nodes, "big_dim": args.big_dim,
            "big_layers": args.big_layers}


_T0 = time.perf_counter()


def _log(msg: str) -> None:
    print(f"{time.perf_counter() - _T0:7.1f}s {msg}", file=sys.stderr, flush=True)


def run(models, encodings, sizes, repeat, workdir, share_save_process: bool = False) -> list[dict]:
    workers = Workers()
    rows = []
    for name in models:
        variants = [f"{f}{x}" for f in ["torch"] + [f"pt2f-{e}" for e in encodings] for x in ("", "+fsync")]
        if share_save_process:
            _log(f"[{name}] export + all saves in one process ...")
            saved = workers.run(save_worker, name, sizes, workdir, variants, repeat)
        else:
            saved = {"saves": {}}
            for v in variants:
                _log(f"[{name}] export + save {v} ...")
                one = workers.run(save_worker, name, sizes, workdir, [v], repeat)
                saved["info"] = one["info"]
                saved["saves"].update(one["saves"])
        _log(f"[{name}] {saved['info']['nodes']} nodes, {saved['info']['params_mb']:.0f} MB of weights, "
             f"export {saved['info']['export_s']:.1f} s")
        for fmt in ["torch"] + [f"pt2f-{e}" for e in encodings]:
            path = os.path.join(workdir, f"{name}.pt2" if fmt == "torch" else f"{name}.{fmt[5:]}.pt2f")
            save = saved["saves"][fmt]
            save_fsync = saved["saves"][f"{fmt}+fsync"]
            row = {"model": name, "nodes": saved["info"]["nodes"], "format": fmt}
            rows.append(row)
            if "error" in save or "error" in save_fsync:
                row["error"] = "save: " + save.get("error", save_fsync.get("error", ""))
                continue
            loads = []
            try:
                for _ in range(repeat):
                    _log(f"[{name}] load {fmt} ...")
                    warm = os.path.join(workdir, "warmup.pt2" if fmt == "torch" else f"warmup.{fmt[5:]}.pt2f")
                    loads.append(workers.run(load_worker, path, fmt if fmt == "torch" else "pt2f", warm,
                                             LOAD_IMPORTS.get(name, [])))
            except Exception as e:  # noqa: BLE001
                row["error"] = "load: " + _err(e)
                continue
            row.update({"save_s": save["s"], "save_fsync_s": save_fsync["s"],
                        "save_peak_mb": max(save["peak_mb"], save_fsync["peak_mb"]),
                        "load_s": min(x["load_s"] for x in loads),
                        "first_output_s": min(x["first_output_s"] for x in loads),
                        "load_first_s": min(x["load_s"] + x["first_output_s"] for x in loads),
                        "load_peak_mb": min(x["peak_mb"] for x in loads),
                        "first_peak_mb": min(x["peak_first_mb"] for x in loads), "size_mb": save["size_mb"]})
        for f in os.listdir(workdir):
            if f.startswith(name + "."):
                os.unlink(os.path.join(workdir, f))
    return rows


def _ratio(a: float, b: float) -> str:
    if b <= 0:
        return "–"
    return f"{a / b:.2f}x"


_COLUMNS = (  # (header, key, format, ratio vs torch)
    ("save s", "save_s", "{:.3f}", True), ("save+fsync s", "save_fsync_s", "{:.3f}", True),
    ("load s", "load_s", "{:.3f}", True), ("first output s", "first_output_s", "{:.3f}", True),
    ("load+first output s", "load_first_s", "{:.3f}", True),
    ("save peak MB", "save_peak_mb", "{:.0f}", True), ("load peak MB", "load_peak_mb", "{:.0f}", True),
    ("peak to 1st output MB", "first_peak_mb", "{:.0f}", True), ("file MB", "size_mb", "{:.1f}", True),
)


def render(rows: list[dict]) -> str:
    ratio_cols = [c for c in _COLUMNS if c[3]]
    head = "| model | nodes | format | " + " | ".join(c[0] for c in _COLUMNS) + " | " \
        + " | ".join(f"{c[0].replace(' s', '').replace(' MB', '')} vs torch" for c in ratio_cols) + " |"
    lines = ["Ratios are pt2format / torch (below 1 is better). torch's 'save+fsync' is torch.export.save "
             "followed by os.fsync of its file (torch.export.save itself never fsyncs). Peaks are resident-set "
             "growth, mapped file pages included.", "", head,
             "|" + "---|" * (3 + len(_COLUMNS) + len(ratio_cols))]
    base = {r["model"]: r for r in rows if r["format"] == "torch" and "error" not in r}
    for r in rows:
        t = base.get(r["model"])
        prefix = f"| {r['model']} | {r['nodes']} | {r['format']} | "
        if "error" in r or t is None:
            why = r.get("error", "torch failed").replace("|", "/")
            lines.append(prefix + " | ".join(["–"] * (len(_COLUMNS) + len(ratio_cols) - 1)) + f" | {why} |")
            continue
        cells = [fmt.format(r[key]) for _, key, fmt, _ in _COLUMNS]
        cells += [_ratio(r[key], t[key]) for _, key, _, _ in ratio_cols]
        lines.append(prefix + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_torch.py", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny models: a smoke run in well under a minute")
    ap.add_argument("--models", default="gpt2,deep,big", help="comma-separated: gpt2, deep, big")
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--repeat", type=int, default=2,
                    help="best of N (default 2; 1 with --quick). Each load runs in its own process; a repeated "
                         "save replaces the file of the previous run, so every variant gets the same page-cache "
                         "state (a first write to a new path competes for memory with the page cache)")
    ap.add_argument("--deep-nodes", type=int, default=20_001, help="graph nodes of the deep program")
    ap.add_argument("--big-dim", type=int, default=8192, help="width of the big Linear layers")
    ap.add_argument("--big-layers", type=int, default=4, help="4 x 8192^2 float32 = 1 GiB")
    ap.add_argument("--workdir", help="where files go (default: a temporary directory, removed afterwards)")
    args = ap.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="pt2f-bench-")
    os.makedirs(workdir, exist_ok=True)
    try:
        repeat = 1 if args.quick else args.repeat
        rows = run(args.models.split(","), args.encodings.split(","), sizes_for(args.quick, args), repeat,
                   workdir, share_save_process=args.quick)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
