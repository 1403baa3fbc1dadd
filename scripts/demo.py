"""The built-in example: export a model, save it, load it in a fresh process, check, summarize.

Run through `bash scripts/demo.sh` (which installs first). Exit status is 0 only
when the loaded program reproduces torch's own outputs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

import pt2format


class TinyDecoder(torch.nn.Module):
    """A small decoder block: embedding, attention, MLP, tied output head."""

    def __init__(self, vocab=256, dim=64, heads=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.norm1 = torch.nn.LayerNorm(dim)
        self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied weights stay aliased after load
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, tokens):
        x = self.embed(tokens)
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        x = x + self.mlp(self.norm2(x))
        self.steps.add_(1)
        return self.head(x)


CHILD = r"""
import sys, time, numpy as np, torch, pt2format
which, path, expected_path = sys.argv[1], sys.argv[2], sys.argv[3]
load = pt2format.load if which == "pt2format" else torch.export.load
# Imports are done above, before the clock: both libraries are timed from the same point.
t0 = time.perf_counter()
ep = load(path)
first_s = time.perf_counter() - t0
warm_s = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    ep = load(path)
    warm_s = min(warm_s, time.perf_counter() - t0)
args, kwargs = ep.example_inputs
out = ep.module()(*args, **kwargs)
ok = np.array_equal(out.detach().numpy(), np.load(expected_path, allow_pickle=False))
extra = ""
if which == "pt2format":
    sd = ep.state_dict
    if "head.weight" in sd:
        same = sd["embed.weight"].untyped_storage().data_ptr() == sd["head.weight"].untyped_storage().data_ptr()
        extra = f"; tied weights share storage: {same}"
    else:
        extra = "; tied head.weight is embed.weight (torch.export keeps one parameter)"
    extra += f"; nodes: {len(ep.graph.nodes)}"
print(f"{which + ' load':<22} {first_s * 1000:8.1f} ms first, {warm_s * 1000:7.1f} ms warm (best of 3), "
      f"outputs equal to torch's: {ok}{extra}")
sys.exit(0 if ok else 1)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoding", default="flatbuffers", choices=["flatbuffers", "msgpack", "json"])
    ap.add_argument("--out", default="build/demo", help="where the files go (kept after the demo; default build/demo)")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = TinyDecoder().eval()
    tokens = torch.randint(0, 256, (2, 16))
    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=512)
    ep = torch.export.export(model, (tokens,), dynamic_shapes=({0: batch, 1: seq},))
    with torch.no_grad():
        expected = ep.module()(tokens).numpy()

    d = Path(args.out)
    d.mkdir(parents=True, exist_ok=True)
    path, torch_path, expected_path = d / "model.pt2f", d / "model.pt2", d / "expected.npy"
    np.save(expected_path, expected, allow_pickle=False)
    # Each save runs twice and the second (warm) run is reported; neither flushes to disk (torch's cannot).
    for _ in range(2):
        t0 = time.perf_counter()
        pt2format.save(ep, path, encoding=args.encoding, progress=False, fsync=False)
        save_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        torch.export.save(ep, torch_path)
        torch_save_s = time.perf_counter() - t0

    pt2format.validate(path)
    inspect = subprocess.run([sys.executable, "-m", "pt2format", "inspect", str(path)], capture_output=True, text=True)
    print(inspect.stdout, end="")
    print(f"{'pt2format save':<22} {save_s * 1000:8.1f} ms, {path.stat().st_size} bytes ({args.encoding}, no fsync)")
    print(f"{'torch.export.save':<22} {torch_save_s * 1000:8.1f} ms, {torch_path.stat().st_size} bytes")
    print("Loads, each in a fresh process with torch and pt2format imported before the clock starts:")
    failed = False
    for which, file in (("pt2format", path), ("torch.export", torch_path)):
        proc = subprocess.run([sys.executable, "-c", CHILD, which, str(file), str(expected_path)], capture_output=True,
                              text=True)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        failed |= proc.returncode != 0
    if failed:
        print("FAILED: a loaded program does not reproduce torch's outputs", file=sys.stderr)
        return 1
    print(f"files kept in {d}/: model.pt2f (try `pt2format view {path}`), model.pt2")
    print("OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
