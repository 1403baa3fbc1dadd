"""Screenshots of the viewer on deep models, and the on-screen text sizes, for docs/viewer/.

    python scripts/viewer_screenshots.py [--work DIR] [--out docs/viewer] [--tag after]
                                         [--page VIEWER_HTML] [--models gpt2_124m,gpt2_48]

For GPT-2 124M (12 layers, 768 wide) and a 48-layer GPT-2 (64 wide), both with
random weights from a transformers config (no hub) and a dynamic sequence
length, it:

1. exports each model once into --work (`<model>.pt2f` with pt2format, and
   `<model>.pt2` with `torch.export.save` for Netron and Model Explorer);
2. writes its page with `pt2format view` (from --page, default the checkout's
   build, so the same script shoots an older build too);
3. takes the one-shot headless screenshot a user takes (`chromium --headless
   --screenshot --virtual-time-budget=...`, no driver), 1400 x 900, saved as
   `<out>/<model>_<tag>.png`;
4. opens the page in headless Chromium through `loaders/ts/viewer/tools/drive.mjs`
   with its text probe: every `fillText` on the graph canvas is recorded with
   its on-screen font size (font px x the canvas transform's scale) and the
   height of its measured bounding box, first at the opening view, then after
   a click on the "fit" button (also shot: `<model>_<tag>_fit.png`). Prints
   the smallest of each over the labels inside the window.

Not run in CI: exporting GPT-2 124M alone takes about a minute. Needs
`bash scripts/build_ts.sh` (reader, viewer, Chromium) and transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

import viewer_driver as D  # noqa: E402

WIDTH, HEIGHT = 1400, 900

#: name -> (GPT2Config keyword arguments, example sequence length, largest sequence length)
MODELS = {
    "gpt2_124m": ({}, 16, 1024),
    "gpt2_48": ({"n_layer": 48, "n_embd": 64, "n_head": 4, "vocab_size": 512, "n_positions": 128,
                 "bos_token_id": 0, "eos_token_id": 0}, 8, 128),
}


def export(name: str, work: Path) -> Path:
    """`<work>/<name>.pt2f` and `.pt2` (torch's own format, for the other viewers), made once."""
    path = work / f"{name}.pt2f"
    if path.exists() and path.with_suffix(".pt2").exists():
        return path
    import torch
    from torch.export import Dim
    from transformers import GPT2Config, GPT2LMHeadModel

    import pt2format

    kwargs, seq, max_seq = MODELS[name]
    torch.manual_seed(0)
    cfg = GPT2Config(**kwargs)
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, seq), generator=torch.Generator().manual_seed(0))
    ep = torch.export.export(model, (ids,), {"use_cache": False},
                             dynamic_shapes={"input_ids": {1: Dim("seq", min=2, max=max_seq)}, "use_cache": None})
    pt2format.save(ep, path)
    torch.export.save(ep, path.with_suffix(".pt2"))
    return path


def one_shot(chromium: str, page: Path, png: Path) -> None:
    """What a user runs: one headless Chromium call, no driver, no waiting on the page's hooks."""
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=15000", f"--screenshot={png}",
                    page.as_uri()], capture_output=True, timeout=300, check=True)


def text_sizes(chromium: str, page: Path, fit_png: Path) -> dict:
    """Smallest on-screen font size and glyph-box height of the labels in the window: opening view, after fit."""
    out = D.drive(chromium, page, [{"do": "text"}, {"do": "fit"}, {"do": "text"},
                                   {"do": "shot", "path": str(fit_png)}], width=WIDTH, height=HEIGHT, text_probe=True)
    first, _, fit, _ = out["results"]
    return {"first": first, "fit": fit}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "build" / "viewer_screenshots"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "viewer"))
    ap.add_argument("--tag", default="after")
    ap.add_argument("--page", default=None, help="the viewer page to use (default: the checkout's build)")
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    chromium = D.U.chromium()
    if chromium is None:
        print("chromium not found: run scripts/build_ts.sh", file=sys.stderr)
        return 2
    if args.page:
        os.environ["PT2FORMAT_VIEWER_HTML"] = str(Path(args.page).resolve())
    report = {}
    for name in args.models.split(","):
        path = export(name, work)
        page = D.view(path, work / f"{name}_{args.tag}.html")
        one_shot(chromium, page, out / f"{name}_{args.tag}.png")
        sizes = text_sizes(chromium, page, out / f"{name}_{args.tag}_fit.png")
        report[name] = {k: {"min_font_px": v["minPx"], "min_box_px": v["minBoxPx"], "labels": v["count"],
                            "smallest": v["smallest"]} for k, v in sizes.items()}
        print(name, json.dumps(report[name]))
    (work / f"text_sizes_{args.tag}.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
