"""pt2f_shared tables (TensorMeta): written once per object, decoded once per offset, charged per reference.

The reader without its cache (`share=False`) decodes every reference, as
every released reader does; the cache must give the same trees and the same
errors at the same offsets, and the writer's count of the decode budget must
be the reader's, or its fallback to copies could let a shared file past a
reader's budget.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pt2format._generated import fb_reader, fb_writer, model as M
from pt2format.errors import Pt2FormatError

import codec_strategies as S


def _objects(o, out=None):
    """Every model object reachable from `o`, each reference once (a shared object appears as often as it is used)."""
    out = [] if out is None else out
    if isinstance(o, M.ModelObject):
        out.append(o)
        for name in o.__slots__:
            _objects(getattr(o, name), out)
    elif isinstance(o, list):
        for x in o:
            _objects(x, out)
    return out


def _meta(rank: int, device: bool) -> M.TensorMeta:
    sizes = [M.SymInt(-1, i + 2) for i in range(rank)]
    strides = [M.SymInt(-1, 1) for _ in range(rank)]
    return M.TensorMeta(dtype=M.ScalarType.FLOAT32, sizes=sizes, strides=strides,
                        device=M.Device(type="cpu", index=-1) if device else None)


SHARED = tuple(getattr(M, name) for name in fb_reader.SHARED_TABLES)


def test_the_shared_tables_are_the_schemas():
    assert {"TensorMeta", "ModuleStackEntry"} <= set(fb_reader.SHARED_TABLES)


@st.composite
def shared_trees(draw):
    """A random Package in which every place holding an object of a shared table holds one of a few such objects
    (among them TensorMetas of high rank: large per reference)."""
    pkg = draw(S.packages(max_depth=4, max_len=2))
    values = [M.TensorValue(f"v{i}", None) for i in range(draw(st.integers(0, 80)))]
    if pkg.programs and pkg.programs[0].graph is not None:
        pkg.programs[0].graph.tensor_values = list(pkg.programs[0].graph.tensor_values) + values
    else:
        pkg.programs = [M.Program(name="p", graph=M.Graph(tensor_values=values))] + list(pkg.programs or [])[1:]
    objects = _objects(pkg)
    pool = {cls: [o for o in objects if type(o) is cls] for cls in SHARED}
    pool[M.TensorMeta] += [_meta(draw(st.integers(0, 40)), draw(st.booleans())) for _ in range(draw(st.integers(1, 3)))]
    pool[M.ModuleStackEntry] += [M.ModuleStackEntry(key="L__self__", path="", type_name="m.M")]

    def pick(cls):
        return pool[cls][draw(st.integers(0, len(pool[cls]) - 1))]

    for o in objects:
        for f in o.__slots__:
            v = getattr(o, f)
            if type(v) in pool or (f == "meta" and type(o) is M.TensorValue):
                setattr(o, f, pick(M.TensorMeta if v is None else type(v)))
            elif type(v) is list and v and all(type(e) in pool for e in v):
                setattr(o, f, [pick(type(e)) for e in v])
    return pkg


def _outcome(buf: bytes, max_depth: int, share: bool):
    try:
        return ("tree", fb_reader.decode(buf, max_depth, share=share))
    except (Pt2FormatError, RecursionError) as e:
        return ("error", type(e).__name__, str(e), getattr(e, "offset", None))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shared_trees())
def test_the_writer_counts_the_budget_every_reader_spends(pkg):
    written = {}
    buf = fb_writer.encode(pkg, stats=written)
    for share in (True, False):
        read = {}
        fb_reader.decode(buf, 256, share=share, stats=read)
        assert read["spent"] == written["spent"], share
    assert written["spent"] <= len(buf)  # shared or not, within the budget of every reader


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shared_trees(), st.integers(1, 12))
def test_the_cache_gives_what_decoding_every_reference_gives(pkg, max_depth):
    # shares_fit patched: shared buffers past the budget too, so the budget errors are compared as well
    with mock.patch.object(fb_writer, "shares_fit", lambda spent, length: True):
        buf = fb_writer.encode(pkg)
    cached, every = _outcome(buf, max_depth, True), _outcome(buf, max_depth, False)
    assert cached[0] == every[0], (cached, every)
    if cached[0] == "error":
        assert cached == every
        return
    assert cached[1] == every[1] == pkg
    # Far from the depth limit, one object per distinct shared object the writer was given, not one per reference
    # (near it, a reference whose table could nest past max_depth is decoded again, as without the cache).
    read = _objects(fb_reader.decode(buf, 256))
    for cls in SHARED:
        shared = [o for o in read if type(o) is cls]
        given_objects = [o for o in _objects(pkg) if type(o) is cls]
        assert len(shared) == len(given_objects)
        assert len({id(o) for o in shared}) == len({id(o) for o in given_objects})


@st.composite
def heavy_trees(draw):
    """Values of one graph sharing one or two TensorMetas of high rank: the budget runs out at some reference,
    or just does not."""
    metas = [_meta(draw(st.integers(0, 64)), draw(st.booleans())) for _ in range(draw(st.integers(1, 2)))]
    values = [M.TensorValue("v" * draw(st.integers(1, 3)) + str(i), metas[i % len(metas)])
              for i in range(draw(st.integers(1, 400)))]
    return M.Package(format_version=M.FormatVersion(1, 0),
                     programs=[M.Program(name="p", graph=M.Graph(tensor_values=values))])


@settings(max_examples=60, deadline=None)
@given(heavy_trees(), st.sampled_from([4, 5, 6, 256]))
def test_the_cache_runs_out_of_budget_where_decoding_every_reference_does(pkg, max_depth):
    with mock.patch.object(fb_writer, "shares_fit", lambda spent, length: True):
        buf = fb_writer.encode(pkg)
    cached, every = _outcome(buf, max_depth, True), _outcome(buf, max_depth, False)
    assert cached == every


def _heavy_sharing() -> M.Package:
    """300 one-letter values sharing a TensorMeta of rank 48: each reference spends ~110 of a budget it adds ~20 to."""
    meta = _meta(48, True)
    values = [M.TensorValue(f"{chr(97 + i % 26)}{i}", meta) for i in range(300)]
    return M.Package(format_version=M.FormatVersion(1, 0),
                     programs=[M.Program(name="p", graph=M.Graph(tensor_values=values))])


def test_the_writer_copies_when_sharing_would_exceed_the_budget():
    pkg = _heavy_sharing()
    with mock.patch.object(fb_writer, "shares_fit", lambda spent, length: True):
        over = fb_writer.encode(pkg)
    for share in (True, False):  # what the fallback prevents: a file every reader refuses
        with pytest.raises(Pt2FormatError, match="shared-offset bomb"):
            fb_reader.decode(over, 256, share=share)
    stats = {}
    buf = fb_writer.encode(pkg, stats=stats)
    assert buf == fb_writer.encode(pkg, share=False)
    assert stats == {"spent": stats["spent"], "shared": False} and stats["spent"] <= len(buf)
    assert fb_reader.decode(buf, 256, share=False) == pkg


def test_sharing_is_kept_when_it_fits():
    pkg = _heavy_sharing()
    pkg.programs[0].graph.tensor_values = pkg.programs[0].graph.tensor_values[:5]
    stats = {}
    buf = fb_writer.encode(pkg, stats=stats)
    assert stats["shared"] is True
    assert len(buf) < len(fb_writer.encode(pkg, share=False))
    tree = fb_reader.decode(buf, 256)
    metas = [v.meta for v in tree.programs[0].graph.tensor_values]
    assert all(m is metas[0] for m in metas) and metas[0] == pkg.programs[0].graph.tensor_values[0].meta


def test_a_shared_object_is_checked_under_each_programs_lengths():
    """One TensorMeta in two programs (the writer shares across programs): its sym expr index fits the first
    program's pool and not the second's, so the check of the second program must still refuse it."""
    from pt2format._generated.field_rules import check_field_rules
    from pt2format.errors import ValidationError

    meta = M.TensorMeta(dtype=M.ScalarType.FLOAT32, sizes=[M.SymInt(2, 0)], strides=[M.SymInt(-1, 1)])

    def program(name, pool):
        return M.Program(name=name, graph=M.Graph(tensor_values=[M.TensorValue("x", meta)]),
                         signature=M.GraphSignature(), sym_exprs=[M.SymExpr(kind=M.SymExprKind.INTEGER, int_value=4) for _ in range(pool)])

    for pools, bad in (((3, 1), 1), ((1, 3), 0), ((3, 3), None)):
        pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[program("a", pools[0]), program("b", pools[1])])
        tree = fb_reader.decode(fb_writer.encode(pkg), 256)
        a, b = (p.graph.tensor_values[0].meta for p in tree.programs)
        assert a is b  # one object, decoded once
        if bad is None:
            check_field_rules(tree)
            continue
        with pytest.raises(ValidationError, match="sym expr index out of range") as e:
            check_field_rules(tree)
        assert e.value.path.startswith(f"programs[{bad}]"), e.value.path


def test_a_file_that_shares_nothing_at_first_reads_the_same_after_the_cache_gives_up():
    """More distinct TensorMetas than the cache waits for a hit (so it is dropped), then values sharing one."""
    from pt2format._codecs._runtime import SHARED_GIVE_UP

    distinct = [M.TensorValue(f"d{i}", _meta(1, False)) for i in range(SHARED_GIVE_UP + 76)]
    for i, v in enumerate(distinct):
        v.meta.sizes = [M.SymInt(-1, i)]
    one = _meta(2, True)
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(name="p", graph=M.Graph(
        tensor_values=distinct + [M.TensorValue(f"s{i}", one) for i in range(50)]))])
    buf = fb_writer.encode(pkg)
    assert fb_reader.decode(buf, 256) == fb_reader.decode(buf, 256, share=False) == pkg
