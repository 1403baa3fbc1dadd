"""Viewer timings in headless Chromium, and the screenshots under docs/viewer/.

    python benchmarks/bench_viewer.py [--out DIR] [--runs 2] [--shots docs/viewer]

Saves GPT-2 124M (conformance case gpt2_124m, random weights), the 20,000-node
DeepStack of bench_torch.py, and the cond / while_loop corpus cases; writes
their pages with `pt2format view` (weights left out, the default); opens each
in the system Chromium (loaders/ts/viewer/tools/drive.mjs) and reports, best
of --runs fresh page loads:

- first paint: from navigation start to the first canvas paint of the laid-out
  graph (decode, read + verify, model, layout in the worker, paint);
- expand: one module box opened (hierarchy, layout, paint);
- JS heap: used after a forced GC, with the program open.

Needs `bash scripts/build_ts.sh` (reader, viewer, Chromium) first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

import viewer_driver as D  # noqa: E402
import viewer_programs as P  # noqa: E402


def measure(chromium, page, expand_id, runs, shots=()):
    best = None
    for i in range(runs):
        steps = [{"do": "state"}, {"do": "metrics"}]
        steps += [{"do": "shot", "path": str(p)} for p in shots[:1]] if i == 0 else []
        steps += [{"do": "expand", "id": expand_id}, {"do": "state"}]
        steps += [{"do": "shot", "path": str(p)} for p in shots[1:]] if i == 0 else []
        out = D.drive(chromium, page, steps, timeout=600)
        res = [r for r in out["results"] if not isinstance(r, str)]
        state, metrics, expand_ms, after = res[0], res[1], res[2], res[3]
        assert state["error"] is None, state["error"]
        t = state["timings"]
        row = {"nodes": state["nodeCount"], "boxes": state["leaves"], "first_paint_ms": t["firstPaintAt"],
               "script_ms": t["scriptAt"], "decode_ms": t.get("decodeMs", 0), "load_ms": t["loadMs"],
               "hier_ms": t["hierarchyMs"], "layout_ms": t["layoutMs"], "expand_ms": expand_ms,
               "boxes_after": after["leaves"], "heap_mb": metrics["heapBytes"] / 2**20}
        if best is None or row["first_paint_ms"] < best["first_paint_ms"]:
            best = {**row, "expand_ms": min(row["expand_ms"], best["expand_ms"]) if best else row["expand_ms"],
                    "heap_mb": min(row["heap_mb"], best["heap_mb"]) if best else row["heap_mb"]}
        else:
            best["expand_ms"] = min(best["expand_ms"], row["expand_ms"])
            best["heap_mb"] = min(best["heap_mb"], row["heap_mb"])
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "bench_viewer"))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--shots", default=str(ROOT / "docs" / "viewer"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    chromium = D.U.chromium()
    if chromium is None:
        print("chromium not found: run scripts/build_ts.sh", file=sys.stderr)
        return 2

    def saved(name, make):
        path = out / f"{name}.pt2f"
        return path if path.exists() else make()[0]

    gpt2 = saved("gpt2_124m", lambda: P.save_case("gpt2_124m", out))
    deep = saved("deep20000", lambda: P.save_deep(20000, out))
    rows = []
    for label, path, expand, names in [
        ("GPT-2 124M", gpt2, "root/m:transformer.h.0", ("gpt2_collapsed.png", "gpt2_block_expanded.png")),
        ("DeepStack, 20,000 nodes", deep, None, ("deep20000_collapsed.png", "deep20000_chunk_expanded.png")),
    ]:
        page = D.view(path, out / f"{path.stem}.html")
        if expand is None:  # the first chunk box of the collapsed view
            st = D.drive(chromium, page, [{"do": "state"}], timeout=600)["results"][0]
            expand = next(b["id"] for b in st["boxes"] if not b["expanded"])
        rows.append((label, measure(chromium, page, expand, args.runs, [shots / n for n in names])))
    for case, shot in (("cond", "cond_branches.png"), ("while_loop", "while_loop.png")):
        path = saved(case, lambda c=case: P.save_case(c, out))
        page = D.view(path, out / f"{case}.html")
        D.drive(chromium, page, [{"do": "shot", "path": str(shots / shot)}], width=1200, height=800)
    print("| program | nodes | boxes shown (→ after expand) | first paint | of which: script start / decode / "
          "read + model / boxes / layout | expand one module | JS heap |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['nodes']:,} | {r['boxes']} → {r['boxes_after']} | {r['first_paint_ms'] / 1000:.2f} s | "
              f"{r['script_ms']:.0f} / {r['decode_ms']:.0f} / {r['load_ms']:.0f} / {r['hier_ms']:.0f} / "
              f"{r['layout_ms']:.0f} ms | {r['expand_ms']:.0f} ms | {r['heap_mb']:.0f} MB |")
    for p in sorted(shots.glob("*.png")):
        print(f"{p.name}: {p.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
