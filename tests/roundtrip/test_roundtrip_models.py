"""Round trips of the model zoo (in memory), each compared with the original torch program.

For every model: the loaded program has the same graph (names, targets,
argument structure, metadata, fake values, subgraphs), signature, range
constraints, module call graph and state (bytes and aliasing) as the one
torch exported; its module gives the same outputs on valid inputs and raises
the same exception type on invalid ones; converting it again gives the same
schema tree. The same holds after run_decompositions() before saving, and
decomposing after loading gives the graph torch gives.
"""

from __future__ import annotations

import functools
import warnings

import pytest

import pt2f_rt_helpers as H
import pt2f_rt_models as M
from pt2format.exporter import export_package

NAMES = sorted(M.ALL)


@functools.lru_cache(maxsize=None)
def case(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return M.ALL[name]()


@functools.lru_cache(maxsize=None)
def decomposed(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case(name).ep.run_decompositions()


def _check(ep, c):
    pkg, _, loaded = H.roundtrip_memory(ep)
    H.assert_same_program(ep, loaded)
    # Converting the loaded program again gives the same tree (before anything runs and mutates state).
    pkg2, _ = export_package(loaded)
    assert pkg2 == pkg
    for args, kwargs in c.valid:
        assert H.assert_same_behaviour(ep, loaded, args, kwargs) == "ok"
    for args, kwargs in c.invalid:
        assert H.assert_same_behaviour(ep, loaded, args, kwargs) == "err"


@pytest.mark.parametrize("name", NAMES)
def test_roundtrip_matches_torch(name):
    c = case(name)
    _check(c.ep, c)


@pytest.mark.parametrize("name", NAMES)
def test_roundtrip_of_decomposed_program(name):
    _check(decomposed(name), case(name))


@pytest.mark.parametrize("name", ["mlp", "dynamic_derived", "nested_cond", "buffers", "tied", "scan_hop"])
def test_decompose_after_load_matches_torch(name):
    c = case(name)
    _, _, loaded = H.roundtrip_memory(c.ep)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = loaded.run_decompositions()
    theirs = decomposed(name)
    H.assert_same_program(theirs, ours, with_meta=False)
    for args, kwargs in c.valid:
        assert H.assert_same_behaviour(theirs, ours, args, kwargs) == "ok"
