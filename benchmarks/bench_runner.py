"""The C++ runner (pt2f-run) against Python's load_module, TorchScript and AOTInductor: time to first output, per run.

    python benchmarks/bench_runner.py                      # GPT-2 124M and the 20,000-node program
    python benchmarks/bench_runner.py --models gpt2 --repeat 20 --aoti

Rows, each with one intra-op thread (pt2f-run --threads 1, torch.set_num_threads(1)):

* first output: a fresh process from start to the first output written
  (`pt2f-run MODEL --inputs IN --output OUT`) against a fresh
  `python -c "import torch, pt2format; ..."` that loads the same file with
  load_module, reads the same inputs and runs once; TorchScript: a fresh
  process that `torch.jit.load`s a traced module and runs once;
* per run: the median of `--repeat` runs after one warm-up, in the runner
  (its own timer around Runner::run) and in this process for load_module,
  the traced module and (with --aoti) the AOTInductor package, whose compile
  time is reported apart.

The models are bench_torch.py's (GPT-2 124M from a transformers config with
random weights, and the DeepStack of --deep-nodes nodes), as bench_table.py
builds them. Each figure is the median of --processes fresh processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _runner_exe() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build_cpp.sh")], capture_output=True, text=True, check=True)
    exe = Path(out.stdout.strip().splitlines()[-1]) / "pt2f-run"
    if not exe.exists():
        sys.exit("pt2f-run was not built (is torch importable by scripts/build_cpp.sh?)")
    return exe


class _Bound:
    """`mod` with its keyword arguments bound, as a module torch.jit.trace takes (tensors in, tensors out)."""

    def __new__(cls, mod, kwargs):
        import torch

        class Bound(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mod = mod

            def forward(self, *args):
                out = self.mod(*args, **kwargs)
                return out.to_tuple() if hasattr(out, "to_tuple") else out

        return Bound()


def prepare(model: str, workdir: Path, deep_nodes: int) -> dict:
    import torch
    import torch.fx._pytree as fx_pytree

    import pt2format

    sys.path.insert(0, str(HERE))
    from bench_torch import build_model, sizes_for

    sizes = sizes_for(False, argparse.Namespace(deep_nodes=deep_nodes, big_dim=0, big_layers=0))
    mod, args, kwargs = build_model(model, sizes)
    with torch.no_grad():
        ep = torch.export.export(mod, args, kwargs, strict=False)
    paths = {"pt2f": workdir / f"{model}.pt2f", "inputs": workdir / f"{model}.in.pt2f",
             "out": workdir / f"{model}.out.pt2f", "ts": workdir / f"{model}.ts.pt"}
    pt2format.save(ep, paths["pt2f"], progress=False)
    flat = fx_pytree.tree_flatten_spec((args, kwargs), ep.call_spec.in_spec)
    weights = {}
    for i, v in enumerate(flat):
        if isinstance(v, bool):
            v = torch.tensor(v)
        weights[str(i)] = v
    pt2format.save_weights(weights, paths["inputs"], progress=False)
    info = {"nodes": len(ep.graph.nodes), "paths": {k: str(v) for k, v in paths.items()}, "ts_error": None}
    try:
        with torch.no_grad():  # the keyword constants (GPT-2's use_cache=False) bound, so only tensors are traced
            traced = torch.jit.trace(_Bound(mod, kwargs), args, strict=False, check_trace=False)
        torch.jit.save(traced, paths["ts"])
    except Exception as e:  # noqa: BLE001 - reported in the table
        info["ts_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
    return info


_PY_FIRST = """
import torch, pt2format
torch.set_num_threads(1)
m = pt2format.load_module({model!r})
with pt2format.open({inputs!r}) as f:
    xs = [f.get_tensor(str(i)) for i in range(len(f.keys()))]
with torch.no_grad():
    out = m(*xs{extra})
"""

_TS_FIRST = """
import torch
torch.set_num_threads(1)
m = torch.jit.load({ts!r})
with torch.no_grad():
    out = m(*torch.load({args!r}))
"""


def _wall(cmd: list[str], env=None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def first_output(exe: Path, model: str, info: dict, processes: int) -> dict:
    p = info["paths"]
    extra = ", use_cache=False" if model == "gpt2" else ""
    py = _PY_FIRST.format(model=p["pt2f"], inputs=p["inputs"], extra=extra)
    if model == "gpt2":  # the flat inputs hold the use_cache constant too: pass only the ids
        py = py.replace("for i in range(len(f.keys()))", "for i in range(1)")
    rows = {"pt2f-run": [], "python load_module": []}
    for _ in range(processes):
        rows["pt2f-run"].append(_wall([str(exe), p["pt2f"], "--inputs", p["inputs"], "--output", p["out"],
                                       "--threads", "1"]))
        rows["python load_module"].append(_wall([sys.executable, "-c", py]))
    if info["ts_error"] is None:
        import torch

        args_file = Path(p["ts"]).with_suffix(".args.pt")
        import pt2format

        with pt2format.open(p["inputs"]) as f:
            torch.save([f.get_tensor("0").clone()], args_file)
        cmd = [sys.executable, "-c", _TS_FIRST.format(ts=p["ts"], args=str(args_file))]
        try:
            rows["torchscript (jit.load)"] = [_wall(cmd) for _ in range(processes)]
        except subprocess.CalledProcessError as e:  # TorchScript's interpreter crashes on the 20,000-node graph
            info["ts_error"] = f"running the traced module failed (exit status {e.returncode})"
    return {k: statistics.median(v) for k, v in rows.items()}


def per_run(exe: Path, model: str, info: dict, repeat: int, aoti: bool) -> dict:
    import torch

    import pt2format

    torch.set_num_threads(1)
    p = info["paths"]
    out = {}
    r = subprocess.run([str(exe), p["pt2f"], "--inputs", p["inputs"], "--output", p["out"], "--threads", "1",
                        "--repeat", str(repeat + 1)], capture_output=True, text=True, check=True)
    line = r.stderr.strip().splitlines()[-1]
    out["pt2f-run"] = float(line.split("median ")[1].split(" ms")[0]) / 1e3
    with pt2format.open(p["inputs"]) as f:
        x = f.get_tensor("0").clone()
    kw = {"use_cache": False} if model == "gpt2" else {}
    m = pt2format.load_module(p["pt2f"])

    def timed(fn):
        with torch.no_grad():
            fn()
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    out["python load_module"] = timed(lambda: m(x, **kw))
    if info["ts_error"] is None:
        ts = torch.jit.load(p["ts"])
        out["torchscript (jit.load)"] = timed(lambda: ts(x))
    if aoti:
        from torch._inductor.package import load_package

        ep = pt2format.load(p["pt2f"])
        t0 = time.perf_counter()
        pkg = torch._inductor.aoti_compile_and_package(ep, package_path=str(Path(p["pt2f"]).with_suffix(".pt2")))
        out["aoti compile (s, apart)"] = time.perf_counter() - t0
        runner = load_package(pkg)
        out["aotinductor"] = timed(lambda: runner(x, **kw))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="gpt2,deep")
    ap.add_argument("--deep-nodes", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per row (after one warm-up)")
    ap.add_argument("--processes", type=int, default=3, help="fresh processes per first-output row")
    ap.add_argument("--aoti", action="store_true", help="also compile with AOTInductor (minutes per model)")
    a = ap.parse_args()
    exe = _runner_exe()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for model in a.models.split(","):
            info = prepare(model, Path(d), a.deep_nodes)
            first = first_output(exe, model, info, a.processes)
            steady = per_run(exe, model, info, a.repeat, a.aoti)
            results[model] = {"nodes": info["nodes"], "first_output_s": first, "per_run_s": steady,
                              "torchscript": info["ts_error"] or "traced",
                              "aotinductor": "measured" if a.aoti else "skipped: run with --aoti (compile takes minutes)"}
            label = {"gpt2": "GPT-2 124M", "deep": f"{a.deep_nodes:,} nodes"}.get(model, model)
            print(f"\n{label} ({info['nodes']} graph nodes)")
            for k, v in first.items():
                print(f"  first output   {k:26s} {v:8.3f} s   ({first['python load_module'] / v:5.1f}x vs python)")
            for k, v in steady.items():
                unit = "s " if "compile" in k else "ms"
                print(f"  per run        {k:26s} {v if 'compile' in k else v * 1e3:8.3f} {unit}")
            if info["ts_error"]:
                print(f"  torchscript: {info['ts_error']}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
