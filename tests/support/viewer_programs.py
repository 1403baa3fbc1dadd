"""Programs for the viewer tests and timings: corpus cases and the 20,000-node DeepStack, saved as .pt2f.

`save_case(name, dir)` exports a conformance corpus case (one program or a
dict of programs) and saves it with pt2format; `save_deep(nodes, dir)` saves
`benchmarks/bench_torch.py`'s DeepStack. Both return the path and the
exported programs, so tests compare the page with torch's own graphs.
"""

from __future__ import annotations

from pathlib import Path


def save_case(name: str, out_dir) -> tuple[Path, dict]:
    import pt2format
    from conformance.corpus import get_case

    built = get_case(name).build()
    programs = {k: p.export() for k, p in built.items()} if isinstance(built, dict) else {"forward": built.export()}
    path = Path(out_dir) / f"{name}.pt2f"
    pt2format.save(programs if len(programs) > 1 else next(iter(programs.values())), path)
    return path, programs


def save_deep(nodes: int, out_dir) -> tuple[Path, dict]:
    import torch

    import pt2format
    from benchmarks.bench_torch import DeepStack

    ep = torch.export.export(DeepStack(nodes), (torch.randn(4, 8),))
    path = Path(out_dir) / f"deep{nodes}.pt2f"
    pt2format.save(ep, path)
    return path, {"forward": ep}


def op_nodes(ep) -> list:
    """torch's call_function nodes of a program's root graph (what the viewer draws as op nodes)."""
    return [n for n in ep.graph.nodes if n.op == "call_function"]


def module_paths(node) -> list:
    """The nn_module_stack paths of an FX node, outermost first, as torch records them."""
    return [path for path, _type in (node.meta.get("nn_module_stack") or {}).values()]


if __name__ == "__main__":  # python tests/support/viewer_programs.py OUT_DIR CASE... (deep20000 for DeepStack)
    import sys

    out = sys.argv[1]
    for n in sys.argv[2:]:
        p, _ = save_deep(int(n[4:]), out) if n.startswith("deep") else save_case(n, out)
        print(p)
