"""Add golden files for the current format version; never rewrite an existing one.

    python conformance/make_golden.py                     # every golden case x encoding not yet present
    python conformance/make_golden.py --cases mlp --encodings json

Each golden case is a directory `conformance/golden/<major.minor>/<case>-<encoding>/`:

- `program.pt2f`: the file pt2format.save wrote for a corpus case;
- `expected.json`: its canonical dump (`python -m pt2format dump program.pt2f`);
- `outputs/`: torch's outputs of the original program on its example inputs
  (JSON + raw bytes, see conformance/_tensorio.py), per program;
- `info.json`: case, encoding, producer versions, operator libraries needed to run it.

Golden files are append-only (STYLE.md 13): a directory that exists is
skipped, whatever its content. To correct one, add a new case with a note.
Files must stay under 200 KB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

GOLDEN_ROOT = os.path.join(REPO, "conformance", "golden")
#: Small corpus cases frozen as golden files, each in every encoding.
GOLDEN_CASES = ("mlp", "dynamic_batch", "cond", "custom_op", "multi_program", "special_floats")
ENCODINGS = ("flatbuffers", "msgpack", "json")
MAX_BYTES = 200 * 1024


def version_dir(root: str = GOLDEN_ROOT) -> str:
    import pt2format

    return os.path.join(root, ".".join(str(v) for v in pt2format.FORMAT_VERSION))


def _machine_prefixes() -> list[str]:
    """Directory prefixes that name this machine: the checkout, the interpreter's prefixes, the home directory."""
    import site
    import sysconfig

    dirs = {REPO, sys.prefix, sys.base_prefix, os.path.expanduser("~")}
    dirs.update(sysconfig.get_paths().values())
    dirs.update(site.getsitepackages())
    return sorted((d.rstrip("/") + "/" for d in dirs if d and d != "/"), key=len, reverse=True)


def _strip_machine_paths(ep) -> None:
    """Stack traces name files by the path they had here; keep only the part after a known root.

    Golden files carry no path of the machine that wrote them (DEVELOPERS.md):
    `<checkout>/conformance/corpus/a.py` becomes `conformance/corpus/a.py` and a
    file under site-packages `<python>/torch/nn/...`.
    """
    prefixes = _machine_prefixes()

    def clean(text):
        for pre in prefixes:
            text = text.replace(pre, "" if pre == REPO.rstrip("/") + "/" else "<python>/")
        return text

    def walk(gm):
        for node in gm.graph.nodes:
            st = node.meta.get("stack_trace")
            if isinstance(st, str):
                node.meta["stack_trace"] = clean(st)
        for _, sub in gm.named_children():
            if hasattr(sub, "graph"):
                walk(sub)

    walk(ep.graph_module)


def add_case(name: str, encoding: str, *, root: str = GOLDEN_ROOT) -> str:
    """Create `<root>/<version>/<name>-<encoding>/` unless it exists; returns 'added' or 'exists'."""
    import torch

    import pt2format
    from conformance import corpus
    from conformance._behave import call, record
    from conformance._tensorio import TreeWriter

    target = os.path.join(version_dir(root), f"{name}-{encoding}")
    if os.path.exists(target):
        return "exists"
    case = corpus.get_case(name)
    torch.manual_seed(0)
    built = case.build()
    multi = isinstance(built, dict)
    specs = built if multi else {"forward": built}
    eps = {k: s.export() for k, s in specs.items()}
    for ep in eps.values():
        _strip_machine_paths(ep)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}-{encoding}-", dir=os.path.dirname(target))  # same filesystem
    try:
        path = os.path.join(staging, "program.pt2f")
        pt2format.save(eps if multi else eps["forward"], path, encoding=encoding, fsync=True, progress=False)
        size = os.path.getsize(path)
        if size > MAX_BYTES:
            raise ValueError(f"{name}-{encoding}: {size} bytes, golden files must stay under {MAX_BYTES}")
        pt2format.validate(path)
        dump = subprocess.run([sys.executable, "-m", "pt2format", "dump", path], capture_output=True, check=True,
                              cwd=REPO).stdout
        with open(os.path.join(staging, "expected.json"), "wb") as f:
            f.write(dump)
        outputs = {}
        for pname, spec in specs.items():  # after saving: running may mutate buffers
            w = TreeWriter(os.path.join(staging, "outputs"), pname)
            outputs[pname] = record(call(eps[pname].module(), tuple(spec.args), dict(spec.kwargs), grad=False), w)
        with open(os.path.join(staging, "outputs", "outputs.json"), "w", encoding="utf-8") as f:
            json.dump(outputs, f, sort_keys=True, indent=1)
        info = {"case": name, "encoding": encoding, "multi": multi, "programs": list(specs),
                "child_imports": list(case.child_imports), "torch": torch.__version__,
                "pt2format": pt2format.__version__, "description": case.description}
        with open(os.path.join(staging, "info.json"), "w", encoding="utf-8") as f:
            json.dump(info, f, sort_keys=True, indent=1)
            f.write("\n")
        os.chmod(staging, 0o755)  # mkdtemp makes it private
        os.rename(staging, target)  # fails if someone created it meanwhile: never overwrite
        staging = None
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    return "added"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python conformance/make_golden.py", description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(GOLDEN_CASES))
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--root", default=GOLDEN_ROOT)
    args = ap.parse_args(argv)
    rc = 0
    for name in args.cases.split(","):
        for enc in args.encodings.split(","):
            try:
                state = add_case(name, enc, root=args.root)
            except Exception as e:  # noqa: BLE001 - report and go on with the others
                state, rc = f"FAILED: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", 1
            print(f"{name}-{enc}: {state}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
