"""`load()` drops each decoded Node table once its FX node is built: less memory, the same program."""

from __future__ import annotations

import tracemalloc

import pytest
import torch

import pt2format
from chain_programs import saved_chain
from pt2format.loaders._program import build_program

N_LAYERS = 200  # 600 call nodes


def _build(path, release_nodes):
    """(program, its decoded package, tracemalloc's peak over the decode and the build, in bytes)."""
    tracemalloc.start()
    try:
        f = pt2format.read(path)
        try:
            ep = build_program(f.package, None, f.storage_view, map_location=None, weights=True, copy=True,
                               allow_subclasses=(), release_nodes=release_nodes)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            f.close()
    finally:
        tracemalloc.stop()
    return ep, f.package, peak


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """(path of the saved chain, the module, an input)."""
    return saved_chain(tmp_path_factory.mktemp("release"), N_LAYERS)


def test_released_build_gives_the_same_program_with_a_lower_peak(chain):
    path, module, x = chain
    kept, kept_tree, kept_peak = _build(path, release_nodes=False)
    released, released_tree, released_peak = _build(path, release_nodes=True)

    assert len(kept_tree.programs[0].graph.nodes) == 3 * N_LAYERS
    assert all(n is not None for n in kept_tree.programs[0].graph.nodes)
    assert released_tree.programs[0].graph.nodes == [None] * (3 * N_LAYERS)
    # The same program: nodes, names, targets, arguments, metadata keys and values' shapes.
    assert str(released.graph) == str(kept.graph)
    for a, b in zip(released.graph.nodes, kept.graph.nodes):
        assert a.meta.keys() == b.meta.keys()
        assert a.meta.get("stack_trace") == b.meta.get("stack_trace")
        assert a.meta.get("torch_fn") == b.meta.get("torch_fn")
        if "val" in a.meta and isinstance(a.meta["val"], torch.Tensor):
            assert a.meta["val"].shape == b.meta["val"].shape
    with torch.no_grad():
        assert torch.equal(released.module()(x), module(x))
    # A Node table with its arguments and metadata is about 1 KB here (1.0-1.25 KB less peak per node
    # measured on 1,200 nodes); freed as the build goes, the next FX nodes reuse that memory.
    assert released_peak < kept_peak - 400 * 3 * N_LAYERS, (released_peak, kept_peak)


def test_load_leaves_the_program_it_returns_whole(chain):
    """load() releases the nodes of its own decoded tree only: loading the file twice gives the same graph."""
    path, module, x = chain
    first, second = pt2format.load(path), pt2format.load(path)
    assert str(first.graph) == str(second.graph)
    assert len([n for n in first.graph.nodes if n.op == "call_function"]) == 3 * N_LAYERS
    with torch.no_grad():
        assert torch.equal(first.module()(x), module(x))
