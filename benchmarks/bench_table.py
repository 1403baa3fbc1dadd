"""The speed table of benchmarks/README.md, every row against torch.export in the same run: best and median of N.

    python benchmarks/bench_table.py                  # GPT-2 124M and a 20,000-node program, N = 3
    python benchmarks/bench_table.py --repeat 5 --workdir DIR   # keep the exported files in DIR, reuse them
    python benchmarks/bench_table.py --quick          # tiny sizes: checks the script works
    python benchmarks/bench_table.py --models gpt2 --parts save   # some rows only
    python benchmarks/bench_table.py --ledger --before DIR   # machinery on/off, and a checkout in DIR, per row

Rows (torch first, pt2format second, measured alternately in the same run):

* save: `torch.export.save` / `pt2format.save(fsync=False)` replacing a file
  of the same size (after `os.sync()`, no fsync on either side), next to the
  floor: the same bytes written raw (`os.write` of the .pt2f file's bytes to
  a temporary file) and put in place of the old file the way pt2format's
  writer does (the old file's page cache dropped first where harmless,
  names exchanged where the system can, else `os.replace`); a line under
  the table gives a plain write renamed over the old file with `os.replace`
  (on ext4 that rename starts the new file's writeback);
* warm load: `torch.export.load` / `pt2format.load` in a process that has
  loaded (and run) the same file once;
* cold load: a fresh interpreter that has imported torch (and transformers'
  output types for GPT-2) times `import pt2format` + `load`, against
  `torch.export.load`; cold `load_module` the same, against `torch.export.load`;
* first output: `load()` + `.module()` + one call, warm (after one untimed
  round) and in a fresh interpreter; `load_module` + one call in a fresh
  interpreter against torch's `load` + `.module()` + one call.

Every process is a new `python` (no fork); the machine may be shared, so the
ratios (torch / pt2format, both from this run) are the figures to read.
pt2format's bytecode is written first (`compile_bytecode`), as an installed
wheel has it, so no cold row compiles pt2format's sources.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
IMPORTS = {"gpt2": ["transformers.modeling_outputs"]}


def _paths(workdir: str, model: str):
    return (os.path.join(workdir, f"{model}.pt2f"), os.path.join(workdir, f"{model}.pt2"),
            os.path.join(workdir, f"{model}.inputs.pt"))


def _import_extras(model: str) -> None:
    import importlib

    for name in IMPORTS.get(model, ()):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


# --------------------------------------------------------------------------- machinery switches

#: Process-level machinery of pt2format (issue 43): name -> (rows it serves, what switching it off does).
#: A child started with PT2F_BENCH_OFF=name[,name] runs with those pieces replaced by plain code, so
#: `--ledger` can time each row with the piece on and off in the same run.
PIECES = {
    "collector": (("load", "first", "save"),
                  "pt2format/_nogc.py no_gc + young_only, and the codecs' gc pause: plain code, collector as the "
                  "user set it"),
    "verifier_precheck": (("load", "first"),
                          "loaders/_verifier.py: torch's ep.validate() on every load"),
    "deferred_codegen": (("first",),
                         "loaders/_deferred.py: load().module() is torch's ExportedProgram.module, load_module "
                         "compiles at once"),
    "page_cache": (("save",), "pt2format/_container/page_cache.py: the replaced file's cache is not dropped"),
}


def _switch_off() -> None:
    """Replace the pieces named in PT2F_BENCH_OFF with plain code (after pt2format's modules are imported)."""
    import contextlib

    off = [n for n in os.environ.get("PT2F_BENCH_OFF", "").split(",") if n]
    if not off:
        return
    unknown = set(off) - set(PIECES)
    if unknown:
        raise SystemExit(f"PT2F_BENCH_OFF: unknown pieces {sorted(unknown)}")
    import pt2format._codecs as codecs
    import pt2format._nogc as nogc
    from pt2format.loaders import _deferred, _load, _module, _program, _verifier

    if "collector" in off:
        def plain(*a, **k):
            return contextlib.nullcontext()

        nogc.no_gc = nogc.young_only = plain
        _load.no_gc = _program._no_gc = _deferred.no_gc = _module.no_gc = _verifier.young_only = plain
        codecs._gc_paused = plain
    if "verifier_precheck" in off:
        _verifier._fast_validate = lambda ep: False
    if "deferred_codegen" in off:
        from torch.export import ExportedProgram

        _program.LoadedProgram.module = ExportedProgram.module
        _module.defer = lambda gm: False
    if "page_cache" in off:
        import pt2format._container.writer as writer

        writer.release_cache_of_replaced = lambda path: None


def _sides() -> tuple:
    """Which loaders a child times: both, or pt2format's only (PT2F_BENCH_SIDES=pt2f, for the ledger)."""
    return ("pt2f",) if os.environ.get("PT2F_BENCH_SIDES") == "pt2f" else ("torch", "pt2f")


# --------------------------------------------------------------------------- children

def child_prepare(model: str, workdir: str, quick: bool) -> dict:
    import torch

    import pt2format

    sys.path.insert(0, HERE)
    from bench_torch import build_model, sizes_for

    sizes = sizes_for(quick, argparse.Namespace(deep_nodes=20000, big_dim=0, big_layers=0))
    mod, args, kwargs = build_model(model, sizes)
    with torch.no_grad():
        ep = torch.export.export(mod, args, kwargs, strict=False)
    pt2f, pt2, inputs = _paths(workdir, model)
    pt2format.save(ep, pt2f, progress=False, fsync=False)
    torch.export.save(ep, pt2)
    torch.save((args, kwargs), inputs)
    return {"nodes": len(ep.graph.nodes)}


def _fresh_file(path: str) -> None:
    os.sync()
    from pt2format._container.writer import wait_for_released

    wait_for_released()


def child_save(model: str, workdir: str, repeat: int) -> dict:
    """Saves replacing a file, torch / pt2format / raw bytes in turn, `repeat` rounds (one untimed first).

    Each round starts with a different variant (the order turns), so none is always the one after torch's.
    """
    import torch

    import pt2format

    _import_extras(model)
    _switch_off()
    pt2f, pt2, _ = _paths(workdir, model)
    ep = pt2format.load(pt2f)
    with open(pt2f, "rb") as f:
        raw = f.read()  # the bytes pt2format writes, in memory: the floor writes them as they are
    from pt2format._container.exchange import swap
    from pt2format._container.page_cache import release_cache_of_replaced

    unlinking: list = []
    out = {"torch": os.path.join(workdir, "s.pt2"), "pt2f": os.path.join(workdir, "s.pt2f"),
           "raw": os.path.join(workdir, "s.raw"), "raw_replace": os.path.join(workdir, "s.raw2")}

    def raw_write(dest: str, exchange: bool) -> None:
        if exchange:  # as pt2format's writer prepares a replacement; the os.replace variant does nothing special
            release_cache_of_replaced(dest)
        tmp = dest + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view, done = memoryview(raw), 0
            while done < len(view):
                done += os.write(fd, view[done:done + (64 << 20)])
        finally:
            os.close(fd)
        if exchange and os.path.exists(dest) and swap(tmp, dest):
            # The temp name holds the old file: unlinked in a thread, off the time, as pt2format's writer does.
            unlinking.append(threading.Thread(target=os.unlink, args=(tmp,)))
            unlinking[-1].start()
            return
        os.replace(tmp, dest)

    variants = {"torch": lambda: torch.export.save(ep, out["torch"]),
                "pt2f": lambda: pt2format.save(ep, out["pt2f"], progress=False, fsync=False),
                "raw": lambda: raw_write(out["raw"], True),
                "raw_replace": lambda: raw_write(out["raw_replace"], False)}
    if _sides() == ("pt2f",):
        variants = {"pt2f": variants["pt2f"]}
    times = {k: [] for k in variants}
    names = list(variants)
    for r in range(repeat + 1):
        # The order turns every round: on the project machine whatever wrote right after torch's save was
        # 2-5x slower (the memory torch's save frees, or its file's discards), so no variant always goes there.
        for k in names[r % len(names):] + names[:r % len(names)]:
            fn = variants[k]
            for th in unlinking:
                th.join()
            _fresh_file(out[k])
            t = time.perf_counter()
            fn()
            if r:
                times[k].append(time.perf_counter() - t)

    for k in variants:
        os.unlink(out[k])
    return times


def child_warm(model: str, workdir: str, repeat: int) -> dict:
    """Warm loads, and load + module() + first output, after one untimed round of each."""
    import torch

    import pt2format

    _import_extras(model)
    pt2f, pt2, inputs = _paths(workdir, model)
    args, kwargs = torch.load(inputs, weights_only=True)
    _switch_off()
    loaders = {"torch": lambda: torch.export.load(pt2), "pt2f": lambda: pt2format.load(pt2f)}
    loaders = {k: loaders[k] for k in _sides()}
    times = {f"load_{k}": [] for k in loaders} | {f"first_{k}": [] for k in loaders}
    for r in range(repeat + 1):
        for k, load in loaders.items():
            t = time.perf_counter()
            load()
            if r:
                times[f"load_{k}"].append(time.perf_counter() - t)
            t = time.perf_counter()
            with torch.no_grad():
                load().module()(*args, **kwargs)
            if r:
                times[f"first_{k}"].append(time.perf_counter() - t)
    return times


def child_cold(model: str, workdir: str, fmt: str, what: str) -> dict:
    """One fresh-interpreter measurement: import torch untimed, then time the rest."""
    import torch

    _import_extras(model)
    pt2f, pt2, inputs = _paths(workdir, model)
    args, kwargs = torch.load(inputs, weights_only=True)
    t = time.perf_counter()
    if fmt == "torch":
        ep = torch.export.load(pt2)
        if what != "load":
            with torch.no_grad():
                ep.module()(*args, **kwargs)
    else:
        import pt2format

        _switch_off()
        if what == "load":
            pt2format.load(pt2f)
        elif what == "first":
            with torch.no_grad():
                pt2format.load(pt2f).module()(*args, **kwargs)
        elif what == "load_module":
            pt2format.load_module(pt2f)
        else:  # load_module_first
            with torch.no_grad():
                pt2format.load_module(pt2f)(*args, **kwargs)
    return {"s": time.perf_counter() - t}


# --------------------------------------------------------------------------- driver

def _child(*argv, env: dict | None = None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **(env or {}))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *argv], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"child {argv} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def compile_bytecode() -> None:
    """Write pt2format's bytecode (__pycache__) before any fresh interpreter is timed.

    An installed wheel has it (pip compiles at install), and torch's is in
    site-packages; a checkout run with PYTHONDONTWRITEBYTECODE=1 has none, and
    every cold row would then compile pt2format's 60-odd modules from source
    (0.1-0.25 s here), a cost no user pays.
    """
    import compileall
    import importlib.util

    for name in ("pt2format", "pt2format.exporter", "pt2format.loaders"):
        spec = importlib.util.find_spec(name)
        for location in spec.submodule_search_locations or ():
            compileall.compile_dir(location, quiet=1)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


PARTS = ("save", "warm", "cold")


def measure(models, workdir: str, repeat: int, quick: bool, parts=PARTS) -> list[dict]:
    rows = []
    for model in models:
        pt2f, _, inputs = _paths(workdir, model)
        if not os.path.exists(inputs):
            _log(f"{model}: export and save")
            _child("prepare", model, workdir, str(int(quick)))
        label = {"gpt2": "GPT-2 124M", "deep": "20,000 nodes"}.get(model, model)
        size_mb = os.path.getsize(pt2f) / 2**20
        if "save" in parts:
            _log(f"{model}: saves")
            s = _child("save", model, workdir, str(repeat))
            rows.append({"what": f"{label} save, no fsync, replacing a file ({size_mb:.0f} MB)",
                         "torch": s["torch"], "pt2f": s["pt2f"], "floor": s["raw"],
                         "floor_replace": s["raw_replace"]})
        if "warm" in parts:
            _log(f"{model}: warm loads")
            w = _child("warm", model, workdir, str(repeat))
            rows.append({"what": f"{label} load, warm", "torch": w["load_torch"], "pt2f": w["load_pt2f"]})
            rows.append({"what": f"{label} `load()` + `.module()` + first output, warm",
                         "torch": w["first_torch"], "pt2f": w["first_pt2f"]})
        if "cold" not in parts:
            continue
        cold = {}
        for fmt, what in (("torch", "load"), ("pt2f", "load"), ("pt2f", "load_module"), ("torch", "first"),
                          ("pt2f", "first"), ("pt2f", "load_module_first")):
            cold[fmt, what] = []
        _log(f"{model}: fresh interpreters")
        for _ in range(repeat):  # alternate torch and pt2format runs
            for fmt, what in cold:
                cold[fmt, what].append(_child("cold", model, workdir, fmt, what)["s"])
        rows.append({"what": f"{label} cold `load()` (fresh interpreter after `import torch`)",
                     "torch": cold["torch", "load"], "pt2f": cold["pt2f", "load"]})
        rows.append({"what": f"{label} cold `load_module`", "torch": cold["torch", "load"],
                     "pt2f": cold["pt2f", "load_module"]})
        rows.append({"what": f"{label} cold `load()` + `.module()` + first output",
                     "torch": cold["torch", "first"], "pt2f": cold["pt2f", "first"]})
        rows.append({"what": f"{label} cold `load_module` + first output (torch: `load` + `.module()` + call)",
                     "torch": cold["torch", "first"], "pt2f": cold["pt2f", "load_module_first"]})
    return rows


_ROWS = {  # ledger row -> (child kind, its arguments after model and workdir, key of its result)
    "load, warm": ("warm", ("1",), "load_pt2f"),
    "load + module() + first output, warm": ("warm", ("1",), "first_pt2f"),
    "cold load": ("cold", ("pt2f", "load"), "s"),
    "cold load + module() + first output": ("cold", ("pt2f", "first"), "s"),
    "cold load_module + first output": ("cold", ("pt2f", "load_module_first"), "s"),
    "save": ("save", ("1",), "pt2f"),
}
_SERVES = {"load": ("load, warm", "cold load"),
           "first": ("load + module() + first output, warm", "cold load + module() + first output",
                     "cold load_module + first output"),
           "save": ("save",)}


def ledger(models, workdir: str, repeat: int, base: str | None, cold: bool = True, json_path=None) -> list[dict]:
    """Each piece's rows timed with the piece on and off (and, with `base`, by another checkout), alternately.

    pt2format's side only. Configurations take turns within each round, so a
    busy machine slows them alike; the figures are medians over `repeat` rounds.
    """
    configs = [("on", {}), *((f"{n} off", {"PT2F_BENCH_OFF": n}) for n in PIECES)]
    if base:
        import compileall

        compileall.compile_dir(base, quiet=1)  # as compile_bytecode does for this checkout
        configs.insert(0, ("before", {"PT2F_BENCH_TREE": os.path.abspath(base)}))
    times: dict = {}
    for model in models:
        _, _, inputs = _paths(workdir, model)
        if not os.path.exists(inputs):
            _child("prepare", model, workdir, "0")
        for r in range(repeat):
            _log(f"{model}: ledger round {r + 1}/{repeat}")
            for name, env in configs:
                rows = set(_ROWS) if name in ("on", "before") else {
                    row for kind in PIECES[name.split()[0]][0] for row in _SERVES[kind]}
                done = {}
                for row in _ROWS:
                    kind, args, key = _ROWS[row]
                    if row not in rows or (kind == "cold" and not cold):
                        continue
                    if (kind, args) not in done:
                        done[kind, args] = _child(kind, model, workdir, *args,
                                                  env=dict(env, PT2F_BENCH_SIDES="pt2f"))
                    v = done[kind, args][key]
                    times.setdefault((model, row, name), []).extend(v if isinstance(v, list) else [v])
            if json_path:  # after every round: a long run interrupted still leaves its figures
                with open(json_path, "w") as f:
                    json.dump([{"model": m, "row": rw, "config": c, "times": ts}
                               for (m, rw, c), ts in times.items()], f, indent=1)
    out = []
    for (model, row, name), ts in times.items():
        out.append({"model": model, "row": row, "config": name, "times": ts})
    return out


def render_ledger(entries, repeat: int) -> str:
    med = {(e["model"], e["row"], e["config"]): statistics.median(e["times"]) for e in entries}
    models = sorted({e["model"] for e in entries}, key=lambda m: m != "gpt2")
    label = {"gpt2": "GPT-2 124M", "deep": "20,000 nodes"}
    lines = [f"Median of {repeat} rounds (seconds), pt2format only; gain = time with the piece off / time with "
             "it on - 1.", "", "| piece | rows it serves | on | off | gain switched off | verdict |",
             "|---|---|---|---|---|---|"]
    for piece, (kinds, what) in PIECES.items():
        gains = []
        for model in models:
            for kind in kinds:
                for row in _SERVES[kind]:
                    on, off = med.get((model, row, "on")), med.get((model, row, f"{piece} off"))
                    if on is None or off is None:
                        continue
                    gains.append(off / on - 1)
                    lines.append(f"| `{piece}` | {label.get(model, model)}: {row} | {on:.3f} | {off:.3f} | "
                                 f"{100 * (off / on - 1):+.0f}% | |")
        verdict = "≥ 10% on a row: keep" if any(g >= 0.10 for g in gains) else "< 10% on every row: remove"
        lines[-1] = lines[-1][:-2] + f" {verdict} |"
    if any(e["config"] == "before" for e in entries):
        lines += ["", "Before (the starting commit) and now, same run: median seconds.", "",
                  "| row | before | now | now / before |", "|---|---|---|---|"]
        for model in models:
            for row in _ROWS:
                b, n = med.get((model, row, "before")), med.get((model, row, "on"))
                if b is not None and n is not None:
                    lines.append(f"| {label.get(model, model)}: {row} | {b:.3f} | {n:.3f} | {n / b:.2f} |")
    return "\n".join(lines)


def _fmt(ts) -> str:
    return f"{min(ts):.3f} / {statistics.median(ts):.3f}"


def render(rows, repeat: int) -> str:
    lines = [f"Best / median of {repeat} (seconds); ratio = torch / pt2format (best; median).", "",
             "| what | torch | pt2format | ratio | raw-write floor |", "|---|---|---|---|---|"]
    for r in rows:
        t, p = r["torch"], r["pt2f"]
        ratio = f"{min(t) / min(p):.1f}× ({statistics.median(t) / statistics.median(p):.1f}×)"
        floor = _fmt(r["floor"]) if "floor" in r else ""
        lines.append(f"| {r['what']} | {_fmt(t)} | {_fmt(p)} | {ratio} | {floor} |")
    notes = [f"* {r['what'].split(' save')[0]}: a plain raw write (no cache dropped) renamed over the old file "
             f"with `os.replace`: "
             f"{_fmt(r['floor_replace'])}" for r in rows if "floor_replace" in r]
    if notes:
        lines += ["", "Raw-write floor: `os.write` of the file's bytes, put in place as pt2format's writer does "
                  "(the old file's page cache dropped first where harmless, names exchanged, the old file unlinked in a "
                  "thread).", *notes]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--models", default="gpt2,deep")
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="which rows to measure (comma-separated subset of save,warm,cold; all by default)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="also write the raw times here")
    ap.add_argument("--ledger", action="store_true",
                    help="time each piece of process-level machinery on and off on the rows it serves (PIECES)")
    ap.add_argument("--render-ledger", metavar="JSON", help="print the ledger table of a --ledger --json file")
    ap.add_argument("--no-cold", action="store_true", help="with --ledger: warm rows and saves only")
    ap.add_argument("--before", help="with --ledger: also time a checkout of the starting commit, importable "
                    "from this directory (pt2format/, with exporter/ and loaders/ inside it)")
    a = ap.parse_args(argv)
    if a.child:
        tree = os.environ.get("PT2F_BENCH_TREE")
        if tree:  # another checkout's pt2format, ahead of this one's editable install
            sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
            sys.path.insert(0, tree)
        kind, *rest = a.child
        if kind == "prepare":
            out = child_prepare(rest[0], rest[1], bool(int(rest[2])))
        elif kind in ("save", "warm"):
            out = (child_save if kind == "save" else child_warm)(rest[0], rest[1], int(rest[2]))
        else:
            out = child_cold(*rest)
        print(json.dumps(out))
        return 0
    compile_bytecode()
    workdir = a.workdir or tempfile.mkdtemp(prefix="pt2f-table-")
    os.makedirs(workdir, exist_ok=True)
    parts = a.parts.split(",")
    if not set(parts) <= set(PARTS):
        ap.error(f"--parts: expected a subset of {','.join(PARTS)}, got {a.parts}")
    if a.render_ledger:
        with open(a.render_ledger) as f:
            entries = json.load(f)
        print(render_ledger(entries, max(len(e["times"]) for e in entries)))
        return 0
    if a.ledger:
        entries = ledger(a.models.split(","), workdir, a.repeat, a.before, cold=not a.no_cold, json_path=a.json)
        print(render_ledger(entries, a.repeat))
        return 0
    rows = measure(a.models.split(","), workdir, a.repeat, a.quick, parts)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(render(rows, a.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
