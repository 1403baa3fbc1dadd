"""The collector around loads: a loaded program goes to the oldest generation untraversed, torch's verifier's
garbage is collected while it runs, and an application's own collector settings are left as they were."""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import pytest
import torch

import pt2format
from chain_programs import saved_chain
from pt2format import _nogc
from pt2format._nogc import no_gc, young_only

N_LAYERS = 100  # 300 call nodes


def _saved_chain(tmp_path_factory, layers):
    """(path of a saved chain of `layers` x 3 call nodes, an input, the module's output for it)."""
    path, module, x = saved_chain(tmp_path_factory.mktemp("collector"), layers)
    with torch.no_grad():
        expected = module(x)
    return path, x, expected


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return _saved_chain(tmp_path_factory, N_LAYERS)


@pytest.fixture(autouse=True)
def _collector_on():
    """Each test starts from the interpreter's default: collector on, nothing frozen; and ends there."""
    assert gc.get_freeze_count() == 0
    gc.enable()
    gc.collect()
    yield
    gc.unfreeze()
    gc.enable()


class _Cycle:
    def __init__(self):
        self.me = self


def _young_ids() -> set[int]:
    return {id(o) for generation in (0, 1) for o in gc.get_objects(generation)}


def _loaded(how, path):
    """(what `how` loads from `path`, its FX graph)."""
    if how == "load":
        ep = pt2format.load(path)
        return ep, ep.graph
    if how == "module":
        ep = pt2format.load(path)
        gc.collect()  # the program's objects are not what this case is about
        m = ep.module()
        return m, m.graph
    m = pt2format.load_module(path)
    return m, m.graph


@pytest.mark.parametrize("how", ["load", "module", "load_module"])
def test_what_a_load_makes_is_in_the_oldest_generation(chain, how):
    path, x, expected = chain
    loaded, graph = _loaded(how, path)
    young = _young_ids()
    nodes = list(graph.nodes)
    assert len(nodes) > 3 * N_LAYERS
    assert gc.isenabled() and gc.get_freeze_count() == 0
    in_young = [n.name for n in nodes if id(n) in young]
    assert not in_young, f"{len(in_young)} of {len(nodes)} nodes still in a young generation"
    assert not any(id(n.meta) in young for n in nodes)
    with torch.no_grad():
        got = (loaded.module() if how == "load" else loaded)(x)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def _garbage_after_a_load(path) -> int:
    pt2format.load(path)  # once, for what a first load imports
    gc.collect()
    ep = pt2format.load(path)
    left = gc.collect()
    del ep
    return left


@pytest.mark.parametrize("verifier", ["pre-check", "torch"])
def test_the_verifiers_garbage_is_collected_during_the_load(chain, tmp_path_factory, monkeypatch, verifier):
    """torch's verifier leaves about six objects of closure cycles a node. A load leaves a few hundred
    (decoder closures, torch's classes made per call) whatever the size: less than one more per node.
    `torch`: torch's own verifier runs (a torch the pre-check does not know, see loaders/_verifier.py)."""
    from pt2format.loaders import _verifier

    if verifier == "torch":
        monkeypatch.setattr(_verifier, "_known_torch", lambda: False)
    elif not _verifier._known_torch():
        pytest.skip("the pre-check was not compared with this torch's verifier: torch's runs")
    torch_runs = []
    monkeypatch.setattr(_verifier, "_verifier_imports", lambda: torch_runs.append(1))
    small = _saved_chain(tmp_path_factory, N_LAYERS // 10)
    extra_nodes = 3 * (N_LAYERS - N_LAYERS // 10)
    extra_garbage = _garbage_after_a_load(chain[0]) - _garbage_after_a_load(small[0])
    assert extra_garbage < extra_nodes, f"{extra_garbage} more garbage objects for {extra_nodes} more nodes"
    assert len(torch_runs) == (4 if verifier == "torch" else 0)


def test_objects_the_application_froze_stay_frozen(chain):
    path, x, expected = chain
    kept = [_Cycle() for _ in range(100)]
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen >= 100
    ep = pt2format.load(path)
    m = pt2format.load_module(path)
    # a load must not thaw them: unfreeze would empty the set; a frozen object that refcounting frees (another
    # test's, or the interpreter's) leaves it, so the count may only shrink by a little
    assert frozen - 1000 < gc.get_freeze_count() <= frozen
    assert gc.isenabled()
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(x), expected, rtol=0, atol=0)
        torch.testing.assert_close(m(x), expected, rtol=0, atol=0)
    del kept


def test_a_collector_the_application_turned_off_stays_off(chain):
    path, x, expected = chain
    gc.disable()
    ep = pt2format.load(path)
    m = ep.module()
    pt2format.load_module(path)
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
    with torch.no_grad():
        torch.testing.assert_close(m(x), expected, rtol=0, atol=0)


def test_concurrent_loads_leave_the_collector_on_and_nothing_frozen(chain):
    path, x, expected = chain
    start = threading.Barrier(2)
    results, errors = [], []

    def loads():
        try:
            start.wait(30)
            for _ in range(2):
                results.append(pt2format.load(path))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=loads) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(results) == 4
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with torch.no_grad():
        for ep in results:
            torch.testing.assert_close(ep.module()(x), expected, rtol=0, atol=0)


def test_young_only_collects_what_the_block_makes_and_not_what_was_there():
    with no_gc(lasting=True):
        before = _Cycle()
        before_ref = weakref.ref(before)
        del before  # garbage made before the block: not the block's to collect
        with young_only():
            assert gc.isenabled()
            gc.collect()  # a full collection: frozen objects are out of its reach
            assert before_ref() is not None
            refs = []
            for _ in range(20_000):
                c = _Cycle()
                refs.append(weakref.ref(c))
            del c
            alive = sum(r() is not None for r in refs)
            assert alive < 2_000, f"{alive} of 20,000 dead cycles not collected inside the block"
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    assert gc.isenabled()
    gc.collect()
    assert before_ref() is None


def test_young_only_stands_aside_while_another_thread_is_inside_no_gc():
    entered, leave = threading.Event(), threading.Event()

    def other():
        with no_gc():
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert entered.wait(30)
        with no_gc(lasting=True):
            with young_only():
                assert not gc.isenabled()  # the other thread's objects are not garbage
                assert gc.get_freeze_count() == 0
    finally:
        leave.set()
        t.join(30)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_young_only_outside_no_gc_changes_nothing():
    with young_only():
        assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    with young_only():
        assert not gc.isenabled()


def test_the_full_collection_aged_programs_are_owed_runs_at_the_next_load(chain, monkeypatch):
    """Aged objects skip CPython's count of promotions into the oldest generation, so a loop of loads
    would never collect the programs it drops (cycles). A lasting block that starts after the heap has
    doubled since the last full collection runs one."""
    path, x, expected = chain
    ep = pt2format.load(path)
    # a loaded program holds no cycle of its own (refcounting frees it); a user's can: one among aged objects
    ep.graph_module.meta["user_cycle"] = ep
    dropped = weakref.ref(ep)
    del ep
    monkeypatch.setattr(_nogc, "_blocks_after_full", sys.getallocatedblocks())  # not doubled: nothing owed
    with no_gc(lasting=True):
        pass
    alive_without = dropped() is not None
    monkeypatch.setattr(_nogc, "_blocks_after_full", 1)  # doubled long ago
    with no_gc(lasting=True):
        assert dropped() is None
    assert alive_without  # what freed it was the owed collection, not a young one
    assert _nogc._blocks_after_full > 1  # the full collection reset the count


def test_a_full_collection_by_anyone_resets_the_count(monkeypatch):
    monkeypatch.setattr(_nogc, "_blocks_after_full", 1)
    gc.collect()
    assert _nogc._blocks_after_full > sys.getallocatedblocks() // 2
    with no_gc(lasting=True):
        monkeypatch.setattr(_nogc, "_blocks_after_full", 1)  # after the block's start (which would collect)
        with young_only():
            assert gc.get_freeze_count() > 0
            gc.collect()  # frozen objects are out of its reach: not a collection of the whole heap
            assert _nogc._blocks_after_full == 1


def test_the_verifiers_import_is_made_before_it_only_when_torchs_verifier_makes_it(monkeypatch):
    from torch._export import verifier

    from pt2format.loaders import _verifier

    imported = []
    monkeypatch.setattr(_verifier.importlib, "import_module", imported.append)
    _verifier._verifier_imports()
    torch_imports = "torch.fx.experimental.symbolic_shapes" in verifier._check_val.__code__.co_names
    assert imported == (["torch.fx.experimental.symbolic_shapes"] if torch_imports else [])
    imported.clear()
    monkeypatch.setattr(verifier, "_check_val", lambda node: None)  # a verifier that imports nothing
    _verifier._verifier_imports()
    assert imported == []


class _LoadsWhenCollected:
    """A cycle whose finalizer uses no_gc, as a finalizer that loads a program would."""

    def __init__(self, ran):
        self.me, self.ran = self, ran

    def __del__(self):
        with no_gc(lasting=True):
            with young_only():
                self.ran.append(True)


def test_a_finalizer_that_loads_during_a_collection_of_ours_does_not_deadlock(monkeypatch):
    ran = []

    def collections_of_ours():
        _LoadsWhenCollected(ran)  # garbage at once: freed by the owed full collection below
        monkeypatch.setattr(_nogc, "_blocks_after_full", 1)
        with no_gc(lasting=True):
            _LoadsWhenCollected(ran)  # garbage made inside: freed by young_only's last collection
            with young_only():
                _LoadsWhenCollected(ran)

    t = threading.Thread(target=collections_of_ours, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "deadlocked in a collection started by no_gc or young_only"
    assert len(ran) >= 2
    gc.collect()
    assert len(ran) == 3
    assert gc.isenabled() and gc.get_freeze_count() == 0
