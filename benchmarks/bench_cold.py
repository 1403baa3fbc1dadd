"""Cold start and time to first output, pt2format against torch.export, each measurement in a fresh interpreter.

    python benchmarks/bench_cold.py                       # GPT-2 124M, 20,000 nodes, 20,000 nodes + dynamic dim
    python benchmarks/bench_cold.py --quick               # tiny sizes: checks the script works
    python benchmarks/bench_cold.py --workdir DIR         # keep exported files in DIR and reuse them next time

What a user runs is a fresh interpreter: import, load the file, build the
module, call it once. `benchmarks/bench_torch.py` times loads in processes
forked from a server that already imported torch and pt2format; this script
starts a new `python` for every measurement instead (subprocess, no fork):

* cold: `import torch` (+ `import pt2format` for pt2format; the program's
  output types' library, transformers for GPT-2, for both), then `load`,
  `.module()`, the first call, and their total; then a second `load` of the
  same file in the same process (warm: today's bench_torch figure).
* imports: a separate `python -X importtime` run of import + load, counting
  the modules it lists (all of them, torch's own import included).
* saves: one process per model exports (or, with a reused --workdir, gets
  the program back with pt2format.load) and times each save replacing an
  existing file of the same size: pt2format and torch, with and without
  fsync (torch.export.save never fsyncs; "+fsync" adds os.fsync of its file).

The machine is shared, so each figure is the best of --repeat runs (default
2); ratios are torch / pt2format from the same run (above 1: pt2format is
faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("gpt2", "deep", "deepdyn")
#: Libraries a loading process needs for a model's output types (pytree registrations), imported by both sides.
LOAD_IMPORTS = {"gpt2": ["transformers.modeling_outputs"]}


# --------------------------------------------------------------------------- children (fresh interpreters)

def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def child_prepare(model: str, outdir: str, quick: bool, repeat: int) -> dict:
    """Export (or reuse) the program, write both files, and time the saves."""
    import torch

    import pt2format

    sys.path.insert(0, HERE)
    from bench_torch import DeepStack, build_model

    pt2f, pt2 = _paths(outdir, model)
    info = {}
    if os.path.exists(pt2f) and os.path.exists(pt2):
        for name in LOAD_IMPORTS.get(model, []):
            __import__(name)
        ep = pt2format.load(pt2f)  # a reused workdir: the same program, without minutes of export
        info["export_s"] = None
    else:
        t = time.perf_counter()
        torch.manual_seed(0)
        nodes = 300 if quick else 20_001
        if model == "gpt2":
            sizes = {"gpt2": dict(n_layer=1, n_embd=32, n_head=2, vocab_size=256, n_positions=64), "gpt2_seq": 8} \
                if quick else {"gpt2": {}, "gpt2_seq": 64}
            m, args, kwargs = build_model("gpt2", sizes)
            with torch.no_grad():
                ep = torch.export.export(m, args, kwargs, strict=False)
        elif model == "deep":
            ep = torch.export.export(DeepStack(nodes), (torch.randn(4, 8),))
        elif model == "deepdyn":
            ep = torch.export.export(DeepStack(nodes), (torch.randn(4, 8),),
                                     dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=1024)},))
        else:
            raise ValueError(f"unknown model {model!r}")
        info["export_s"] = time.perf_counter() - t
        pt2format.save(ep, pt2f, progress=False)
        torch.export.save(ep, pt2)
    if ep.example_inputs is not None:  # for load_module's first call (a module carries no example inputs)
        torch.save(ep.example_inputs, _inputs_path(outdir, model))
    info["nodes"] = len(ep.graph.nodes)
    info["file_mb"] = {"pt2f": os.path.getsize(pt2f) / 2**20, "torch": os.path.getsize(pt2) / 2**20}
    saves = {
        "pt2f": lambda: pt2format.save(ep, pt2f, progress=False, fsync=False),
        "pt2f+fsync": lambda: pt2format.save(ep, pt2f, progress=False, fsync=True),
        "torch": lambda: torch.export.save(ep, pt2),
        "torch+fsync": lambda: (torch.export.save(ep, pt2), _fsync(pt2)),
    }
    times = {k: [] for k in saves}
    for _ in range(repeat):
        for name, fn in saves.items():
            os.sync()  # no writeback of an earlier save throttles this one
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    try:  # the replaced files' blocks are released in the background: let that finish before the loads
        from pt2format._container.writer import wait_for_released
        wait_for_released()
    except ImportError:
        pass
    os.sync()
    info["save"] = {k: min(v) for k, v in times.items()}
    return info


def child_cold(fmt: str, path: str, model: str, prefetch: bool) -> dict:
    """import, load, module(), first call: the cold sequence of one fresh interpreter; then a warm load."""
    t0 = time.perf_counter()
    import torch
    t_torch = time.perf_counter()
    for name in LOAD_IMPORTS.get(model, []):
        __import__(name)
    if fmt.startswith("pt2f"):
        import pt2format
    t_import = time.perf_counter()
    before = set(sys.modules)
    if fmt == "pt2f-lm":  # load_module: the file straight to the module; example inputs from the side file
        t = time.perf_counter()
        args, kwargs = torch.load(_inputs_path(os.path.dirname(path), model), weights_only=True)
        t_inputs = time.perf_counter() - t
        t_import += t_inputs  # not part of the load
        m = pt2format.load_module(path, prefetch=prefetch)
        t_load = t_module = time.perf_counter()
        new = set(sys.modules) - before
        fallback = getattr(m, "pt2format_fallback", None)
    else:
        if fmt == "pt2f":
            ep = pt2format.load(path, prefetch=True) if prefetch else pt2format.load(path)
        else:
            ep = torch.export.load(path)
        t_load = time.perf_counter()
        new = set(sys.modules) - before
        m = ep.module()
        t_module = time.perf_counter()
        args, kwargs = ep.example_inputs
        fallback = None
    with torch.no_grad():
        m(*args, **kwargs)
    t_call = time.perf_counter()
    t = time.perf_counter()
    if fmt == "pt2f-lm":
        again = pt2format.load_module(path)
    else:
        again = pt2format.load(path) if fmt == "pt2f" else torch.export.load(path)
    warm = time.perf_counter() - t
    del again
    return {"import_torch_s": t_torch - t0, "import_s": t_import - t0, "load_s": t_load - t_import,
            "module_s": t_module - t_load, "call_s": t_call - t_module, "total_s": t_call - t0 - (
                t_inputs if fmt == "pt2f-lm" else 0.0),
            "first_output_s": t_call - t_import, "warm_load_s": warm, "load_new_modules": len(new),
            "load_imports_dynamo": any(n == "torch._dynamo" for n in new),
            "load_imports_sympy": "sympy" in new, "fallback": fallback}


def child_imports(fmt: str, path: str, model: str) -> None:
    """Run under `python -X importtime`: import and load, nothing else (the parent counts the lines)."""
    import torch
    for name in LOAD_IMPORTS.get(model, []):
        __import__(name)
    if fmt == "pt2f-lm":
        import pt2format
        pt2format.load_module(path)
    elif fmt == "pt2f":
        import pt2format
        pt2format.load(path)
    else:
        torch.export.load(path)


# --------------------------------------------------------------------------- driver

def _inputs_path(outdir: str, model: str) -> str:
    return os.path.join(outdir, f"{model}.inputs.pt")


def _paths(outdir: str, model: str):
    return os.path.join(outdir, f"{model}.pt2f"), os.path.join(outdir, f"{model}.pt2")


def _run_child(*argv, importtime: bool = False):
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + [os.path.abspath(__file__), "--child",
                                                                            json.dumps(argv)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"child {argv[0]} failed:\n{out.stderr[-3000:]}")
    if importtime:
        return sum(1 for line in out.stderr.splitlines() if line.startswith("import time:") and "self [us]" not in line)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _log(msg: str) -> None:
    print(f"{time.perf_counter() - _T0:7.1f}s {msg}", file=sys.stderr, flush=True)


_T0 = time.perf_counter()


def run(models, workdir: str, repeat: int, quick: bool, prefetch: bool, on_model=None) -> dict:
    results = {}
    for model in models:
        _log(f"[{model}] export/save ...")
        info = _run_child("prepare", model, workdir, quick, repeat)
        pt2f, pt2 = _paths(workdir, model)
        variants = [("torch", pt2, False), ("pt2f", pt2f, False), ("pt2f-lm", pt2f, False)] + (
            [("pt2f-lm+prefetch", pt2f, True)] if prefetch else [])
        cold = {}
        for _ in range(repeat):  # interleaved, so both sides see the same machine load
            for name, path, pf in variants:
                _log(f"[{model}] cold {name} ...")
                r = _run_child("cold", name.split("+")[0], path, model, pf)
                best = cold.setdefault(name, r)
                for k, v in r.items():
                    if k.endswith("_s"):
                        best[k] = min(best[k], v)
        for name, path, _ in variants[:3]:
            _log(f"[{model}] -X importtime {name} ...")
            cold[name]["import_count"] = _run_child("imports", name, path, model, importtime=True)
        results[model] = {"info": info, "cold": cold}
        if on_model is not None:  # a long run that is stopped early still shows the models it finished
            on_model(results)
    return results


def _ratio(torch_s, ours_s) -> str:
    return "–" if not ours_s else f"{torch_s / ours_s:.1f}×"


_ROWS = (("import (torch + library)", "import_s"), ("cold `load`", "load_s"), ("`module()`", "module_s"),
         ("first call", "call_s"), ("load + module() + first call", "first_output_s"),
         ("total from interpreter start", "total_s"), ("warm `load` (same process, 2nd time)", "warm_load_s"))


_COLUMNS = (("pt2f", "`load` + `.module()`"), ("pt2f-lm", "`load_module`"),
            ("pt2f-lm+prefetch", "`load_module(prefetch=True)`"))


def render(results: dict, repeat: int) -> str:
    lines = [f"Best of {repeat} runs, each in a fresh interpreter; ratio = torch / pt2format (above 1: pt2format "
             "faster).", ""]
    for model, r in results.items():
        info, cold = r["info"], r["cold"]
        t = cold["torch"]
        cols = [(name, label) for name, label in _COLUMNS if name in cold]
        title = {"gpt2": "GPT-2 124M", "deep": "20,000-node program", "deepdyn": "20,000-node program, dynamic batch"}
        lines.append(f"**{title.get(model, model)}** ({info['nodes']} nodes; files: pt2format "
                     f"{info['file_mb']['pt2f']:.1f} MB, torch {info['file_mb']['torch']:.1f} MB)")
        lines.append("")
        lines.append("| | torch.export | " + " | ".join(f"pt2format {label} | ratio" for _, label in cols) + " |")
        lines.append("|---|---|" + "---|---|" * len(cols))
        empty = " | |" * len(cols)
        for label, key in _ROWS:
            lines.append(f"| {label} | {t[key]:.3f} s |" + "".join(
                f" {cold[n][key]:.3f} s | {_ratio(t[key], cold[n][key])} |" for n, _ in cols))
        lines.append(f"| modules imported by the load | {t['load_new_modules']} |" + "".join(
            f" {cold[n]['load_new_modules']} | |" for n, _ in cols))
        lines.append(f"| modules listed by `-X importtime` (import + load) | {t['import_count']} |" + "".join(
            f" {cold[n].get('import_count', '')} | |" for n, _ in cols))
        lines.append(f"| the load imports torch._dynamo / sympy | {_yn(t)} |" + "".join(
            f" {_yn(cold[n])} | |" for n, _ in cols))
        s = info["save"]
        lines.append(f"| save (replacing a file) | {s['torch']:.3f} s | {s['pt2f']:.3f} s | "
                     f"{_ratio(s['torch'], s['pt2f'])} |" + empty[4:])
        lines.append(f"| save + fsync | {s['torch+fsync']:.3f} s | {s['pt2f+fsync']:.3f} s | "
                     f"{_ratio(s['torch+fsync'], s['pt2f+fsync'])} |" + empty[4:])
        falls = {n: cold[n].get("fallback") for n, _ in cols if cold[n].get("fallback")}
        if falls:
            lines.append("")
            lines.append("load_module fell back to load().module(): "
                         + "; ".join(f"{n}: {w}" for n, w in falls.items()))
        lines.append("")
    return "\n".join(lines)


def _yn(r) -> str:
    return f"{'yes' if r['load_imports_dynamo'] else 'no'} / {'yes' if r['load_imports_sympy'] else 'no'}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        what, *rest = json.loads(argv[1])
        if what == "imports":
            child_imports(*rest)
            return 0
        fn = {"prepare": child_prepare, "cold": child_cold}[what]
        print(json.dumps(fn(*rest)))
        return 0
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_cold.py", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny models, one run: a smoke test of the script")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: gpt2, deep, deepdyn")
    ap.add_argument("--repeat", type=int, default=2, help="best of N (default 2)")
    ap.add_argument("--no-prefetch", action="store_true", help="skip the load_module(prefetch=True) variant")
    ap.add_argument("--workdir", help="where files go; reused across runs (default: a temporary directory)")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="pt2f-cold-")
    os.makedirs(workdir, exist_ok=True)
    repeat = 1 if args.quick else args.repeat
    def save_json(results):
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        print(render({k: results[k] for k in list(results)[-1:]}, repeat), flush=True)

    run(args.models.split(","), workdir, repeat, args.quick, not args.no_prefetch, on_model=save_json)
    if not args.workdir:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
