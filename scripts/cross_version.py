"""Cross-version check: files written under one torch, loaded under another, compared bit for bit.

    python scripts/cross_version.py --torch 2.12=/venvs/2.12/bin/python \
        --torch 2.13=.venv/bin/python --torch 2.14.1=/venvs/2.14.1/bin/python [--out DIR]

Each PYTHON is an environment with its own torch and pt2format installed
(`pip install -e .`; torch >= 2.12). For every writer, a child process
exports the programs below and saves each in the three encodings (and with
`torch.export.save`, for comparison), with the inputs and the writer's own
outputs (`ep.module()(*inputs)`) kept in a weights-only `.pt2f`. For every
reader (the writer itself included, as the baseline), a child loads every
file and runs it on the same inputs; a cell passes when loading succeeds and
every output equals the writer's bit for bit (torch.equal, same dtype and
shape). The table (writer x reader x encoding x program) is printed as
Markdown; docs/versions.md keeps the last run's. Exit status 1 when a .pt2f
cell fails where torch's own .pt2 of the same program loads and matches. Not part of CI: it needs one
environment per torch (docs/versions.md says how to make them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENCODINGS = ("flatbuffers", "msgpack", "json")
#: the column for torch's own format, same programs, torch.export.save / torch.export.load
TORCH_PT2 = "torch .pt2"
#: a program the writer's torch cannot export (an operator it lacks): no cell, not a failure
NOT_WRITTEN = "not written"


# --------------------------------------------------------------------------- the programs (run in the children)

def _programs():
    """name -> (module, example args, dynamic_shapes or None): small, but each exercises a different part."""
    import torch
    from torch.export import Dim

    torch.manual_seed(0)

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))

        def forward(self, x):
            return self.net(x).softmax(-1)

    class ConvBN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)

        def forward(self, x):
            return torch.nn.functional.adaptive_avg_pool2d(self.bn(self.conv(x)).relu(), 1).flatten(1)

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)
            self.norm = torch.nn.LayerNorm(32)

        def forward(self, x):
            q, k, v = self.qkv(self.norm(x)).view(x.shape[0], x.shape[1], 3, 4, 8).permute(2, 0, 3, 1, 4)
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return y.transpose(1, 2).reshape(x.shape)

    class Dynamic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x, y):
            return self.lin(torch.cat([x, y], 0)).cumsum(0)[: x.shape[0] + 1]

    class Cond(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: self.lin(t).sin(), lambda t: self.lin(t).cos(), (x,))

    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(6, 10, batch_first=True)
            self.emb = torch.nn.Embedding(20, 6)

        def forward(self, ids):
            out, h = self.gru(self.emb(ids))
            return out, h

    class Cholesky(torch.nn.Module):  # aten::cholesky: removed in torch 2.14
        def forward(self, a):
            return torch.cholesky(a @ a.mT + torch.eye(a.shape[-1]))

    class Polar(torch.nn.Module):  # aten::linalg_polar: added in torch 2.14
        def forward(self, a):
            return torch.linalg.polar(a)

    batch = Dim("batch", min=2, max=64)
    rows_x, rows_y = Dim("rows_x", min=1, max=32), Dim("rows_y", min=1, max=32)
    return {
        "mlp": (MLP().eval(), (torch.randn(4, 16),), None),
        "conv_bn": (ConvBN().eval(), (torch.randn(2, 3, 8, 8),), None),
        "attention": (Attention().eval(), (torch.randn(2, 5, 32),), None),
        "dynamic": (Dynamic().eval(), (torch.randn(3, 8), torch.randn(4, 8)), {"x": {0: rows_x}, "y": {0: rows_y}}),
        "dynamic_batch": (MLP().eval(), (torch.randn(4, 16),), ({0: batch},)),
        "cond": (Cond().eval(), (torch.randn(3, 4),), None),
        "recurrent": (Recurrent().eval(), (torch.randint(0, 20, (2, 7)),), None),
        # Operators one torch has and another lacks: where the reader lacks one, the cell fails (for torch's
        # .pt2 too); pt2format's error names both torch versions.
        "cholesky_removed_2_14": (Cholesky().eval(), (torch.randn(4, 4),), None),
        "polar_added_2_14": (Polar().eval(), (torch.randn(3, 3),), None),
    }


def _flat(out):
    import torch.utils._pytree as pytree

    return [t for t in pytree.tree_leaves(out)]


def child_write(out_dir: str) -> None:
    """Export every program with this torch; save it in every encoding, as a torch .pt2, and its inputs/outputs."""
    import torch

    import pt2format

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made, torch_failed = {}, {}
    for name, (module, args, dynamic) in _programs().items():
        try:
            ep = torch.export.export(module, args, dynamic_shapes=dynamic)
            with torch.no_grad():
                want = _flat(ep.module()(*args))
        except Exception as e:  # noqa: BLE001 - a program this torch cannot export is a row, not a crash
            made[name] = f"{NOT_WRITTEN}: {type(e).__name__}: {' '.join(str(e).split())[:120]}"
            continue
        for enc in ENCODINGS:
            pt2format.save(ep, out / f"{name}.{enc}.pt2f", encoding=enc, progress=False, fsync=False)
        try:
            torch.export.save(ep, out / f"{name}.pt2")
        except Exception as e:  # noqa: BLE001 - torch's own format may not hold what pt2format does
            why = " ".join(str(e).split())[:120]
            torch_failed[name] = f"{NOT_WRITTEN} by torch.export.save: {type(e).__name__}: {why}"
        tensors = {f"inputs.{i}": a for i, a in enumerate(args)}
        tensors.update({f"outputs.{i}": t.contiguous() for i, t in enumerate(want)})
        pt2format.save_weights(tensors, out / f"{name}.values.pt2f", progress=False, fsync=False)
        made[name] = "ok"
    (out / "written.json").write_text(json.dumps({"torch": torch.__version__, "programs": made,
                                                  "torch_pt2_not_written": torch_failed}, indent=1))


def _values(path: Path):
    """(inputs, outputs) from the writer's weights-only file (`pt2format.open` lists programs' state only)."""
    from pt2format.loaders._weights import read_weights

    tensors = read_weights(path)
    ins = [tensors[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in tensors))]
    outs = [tensors[f"outputs.{i}"] for i in range(sum(k.startswith("outputs.") for k in tensors))]
    return ins, outs


def _compare(got, want) -> str:
    import torch

    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {i}: {g.dtype}{tuple(g.shape)}, expected {w.dtype}{tuple(w.shape)}"
        if not torch.equal(g, w):
            diff = (g.double() - w.double()).abs().max().item() if g.is_floating_point() else "n/a"
            return f"output {i} differs (max abs {diff})"
    return "ok"


def child_read(in_dir: str) -> None:
    """Load every file the writer left and run it; prints one JSON line per cell."""
    import warnings

    import torch

    import pt2format

    src = Path(in_dir)
    written = json.loads((src / "written.json").read_text())
    cells = []
    for name, made in written["programs"].items():
        if made != "ok":
            cells += [{"program": name, "encoding": e, "result": made, "warnings": []}
                      for e in (*ENCODINGS, TORCH_PT2)]
            continue
        ins, want = _values(src / f"{name}.values.pt2f")
        for enc in (*ENCODINGS, TORCH_PT2):
            cell = {"program": name, "encoding": enc}
            if enc == TORCH_PT2 and name in written.get("torch_pt2_not_written", {}):
                cells.append({**cell, "result": written["torch_pt2_not_written"][name], "warnings": []})
                continue
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    if enc == TORCH_PT2:
                        ep = torch.export.load(src / f"{name}.pt2")
                    else:
                        ep = pt2format.load(src / f"{name}.{enc}.pt2f")
                    with torch.no_grad():
                        cell["result"] = _compare(_flat(ep.module()(*ins)), want)
                except Exception as e:  # noqa: BLE001 - every failure is a cell
                    message = " ".join(str(e).split()).replace(str(src) + os.sep, "")  # file names, not paths
                    cell["result"] = f"{type(e).__name__}: {message[:300]}"
            cell["warnings"] = sorted({w.category.__name__ for w in caught
                                       if w.category.__name__ in ("OpsetWarning", "FallbackWarning")})
            cells.append(cell)
    print(json.dumps({"torch": torch.__version__, "writer": written["torch"], "cells": cells}))


# --------------------------------------------------------------------------- the driver

def _run(python: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONWARNINGS": "ignore"}
    return subprocess.run([python, __file__, *args], capture_output=True, text=True, env=env)


def _counted(cells):
    return [c for c in cells if not c["result"].startswith(NOT_WRITTEN)]


def _table(results: list, torches: list) -> str:
    lines = []
    for enc in (*ENCODINGS, TORCH_PT2):
        lines += [f"\n{enc} (cells passed / programs written; writer in rows, reader in columns):\n",
                  "| writer \\ reader | " + " | ".join(torches) + " |", "|---" * (len(torches) + 1) + "|"]
        for w in torches:
            row = [w]
            for rd in torches:
                r = next(x for x in results if x["writer_label"] == w and x["reader_label"] == rd)
                cells = _counted([c for c in r["cells"] if c["encoding"] == enc])
                ok = sum(c["result"] == "ok" for c in cells)
                warn = sum(bool(c["warnings"]) for c in cells)
                row.append(f"{ok}/{len(cells)}" + (f" ({warn} warned)" if warn else ""))
            lines.append("| " + " | ".join(row) + " |")
    lines.append("\nnot written (the writer's torch cannot export the program):\n")
    for r in results:
        if r["reader_label"] == r["writer_label"]:
            for c in r["cells"]:
                if c["result"].startswith(NOT_WRITTEN) and (c["encoding"] == ENCODINGS[0]
                                                            or "torch.export.save" in c["result"]):
                    lines.append(f"- {r['writer_label']}, {c['program']} ({c['encoding']}): {c['result']}")
    lines.append("\nfailures (writer -> reader, encoding, program: result):\n")
    for r in results:
        for c in _counted(r["cells"]):
            if c["result"] != "ok":
                lines.append(f"- {r['writer_label']} -> {r['reader_label']}, {c['encoding']}, {c['program']}: "
                             f"{c['result']}")
    return "\n".join(lines) + "\n"


def _worse_than_torch(results: list) -> list:
    """Cells where a .pt2f fails and torch's own .pt2 of the same program, writer and reader loads."""
    worse = []
    for r in results:
        torch_ok = {c["program"] for c in r["cells"] if c["encoding"] == TORCH_PT2 and c["result"] == "ok"}
        worse += [(r["writer_label"], r["reader_label"], c["encoding"], c["program"]) for c in _counted(r["cells"])
                  if c["encoding"] != TORCH_PT2 and c["result"] != "ok" and c["program"] in torch_ok]
    return worse


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--torch", action="append", required=True, metavar="LABEL=PYTHON",
                   help="an environment: a label (its torch version) and its python (repeatable)")
    p.add_argument("--out", help="keep the files and results here (default: a temporary directory)")
    args = p.parse_args(argv)
    envs = [tuple(s.split("=", 1)) for s in args.torch]
    labels = [label for label, _ in envs]
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.out or tmp)
        for label, python in envs:
            proc = _run(python, "child-write", str(root / label))
            if proc.returncode != 0:
                print(f"writer {label} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                return 1
            print(f"wrote under {label}: {json.loads((root / label / 'written.json').read_text())['programs']}",
                  file=sys.stderr)
        results = []
        for w_label, _ in envs:
            for r_label, python in envs:
                proc = _run(python, "child-read", str(root / w_label))
                if proc.returncode != 0:
                    print(f"reader {r_label} of {w_label}'s files failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                    return 1
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                res.update(writer_label=w_label, reader_label=r_label)
                results.append(res)
        elapsed = time.monotonic() - start
        (root / "results.json").write_text(json.dumps(results, indent=1)) if args.out else None
    versions = ", ".join(f"{r['reader_label']} = torch {r['torch']}" for r in results[:len(envs)])
    print(f"cross-version check: {versions}; {len(results)} writer x reader pairs; {elapsed:.0f} s\n")
    print(_table(results, labels))
    worse = _worse_than_torch(results)
    for w in worse:
        print(f"worse than torch's .pt2: {w}", file=sys.stderr)
    return 1 if worse else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("child-write", "child-read"):
        (child_write if sys.argv[1] == "child-write" else child_read)(sys.argv[2])
    else:
        sys.exit(main())
