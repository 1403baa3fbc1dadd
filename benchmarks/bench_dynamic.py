"""Save and warm load of a dynamic-shape program, pt2format against torch.export, in one run.

    python benchmarks/bench_dynamic.py [--model deep|gpt2] [--nodes 3000] [--repeat 5]

`deep` is benchmarks/bench_torch.py's deep stack (x = tanh(x * w) + 0.5,
three nodes a step) exported with a dynamic batch dimension, so every value
has a symbolic size; `gpt2` is GPT-2 124M (transformers, random weights) with
a dynamic batch and sequence length. Static programs spend their load building FX nodes;
here most of torch's time, and ours, goes to symbolic arithmetic (each fake
value's storage size and contiguity, each tensor_meta's memory format).
Times are `time.perf_counter` seconds, best and median of `--repeat`, each
preceded by a collection; ratio = torch / pt2format.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _times(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        r = fn()
        out.append(time.perf_counter() - t0)
        del r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("deep", "gpt2"), default="deep")
    ap.add_argument("--nodes", type=int, default=3000, help="deep only")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)

    import torch

    import pt2format
    from bench_torch import DeepStack

    if a.model == "deep":
        batch = torch.export.Dim("batch", min=2, max=4096)
        ep = torch.export.export(DeepStack(a.nodes), (torch.randn(4, 8),), dynamic_shapes=({0: batch},))
        label = "Dynamic-shape deep stack"
    else:
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config()).eval()
        ids = torch.randint(0, model.config.vocab_size, (2, 64))
        dims = {0: torch.export.Dim("batch", min=1, max=64), 1: torch.export.Dim("seq", min=2, max=1024)}
        with torch.no_grad():
            ep = torch.export.export(model, (ids,), {"use_cache": False}, dynamic_shapes=(dims, None), strict=False)
        label = "GPT-2 124M, dynamic batch and sequence"
    nodes = len(ep.graph.nodes)
    with tempfile.TemporaryDirectory() as d:
        pt2, pt2f = os.path.join(d, "m.pt2"), os.path.join(d, "m.pt2f")
        save = {"torch": _times(lambda: torch.export.save(ep, pt2), a.repeat),
                "pt2f": _times(lambda: pt2format.save(ep, pt2f, progress=False, fsync=False), a.repeat)}
        load = {"torch": _times(lambda: torch.export.load(pt2), a.repeat),
                "pt2f": _times(lambda: pt2format.load(pt2f), a.repeat)}
        sizes = os.path.getsize(pt2), os.path.getsize(pt2f)
    print(f"{label}, {nodes} nodes; best / median of {a.repeat} (seconds); "
          f"files: torch {sizes[0] / 1e6:.2f} MB, pt2format {sizes[1] / 1e6:.2f} MB\n")
    print("| what | torch | pt2format | ratio |\n|---|---|---|---|")
    for what, t in (("save", save), ("warm load", load)):
        bt, mt = min(t["torch"]), statistics.median(t["torch"])
        bp, mp = min(t["pt2f"]), statistics.median(t["pt2f"])
        print(f"| {what} | {bt:.3f} / {mt:.3f} | {bp:.3f} / {mp:.3f} | {bt / bp:.1f}× ({mt / mp:.1f}×) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
