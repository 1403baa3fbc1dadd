"""Round-trip features beyond one program in memory: files, encodings, sharing, devices, threads, processes."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
import torch

import pt2f_rt_helpers as H
import pt2f_rt_models as M
import pt2format
from pt2format.exporter import export_package
from pt2format.loaders import build_program


@functools.lru_cache(maxsize=None)
def case(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return M.ALL[name]()


def _save(ep, path, **kw):
    pt2format.save(ep, path, progress=False, fsync=False, **kw)


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
@pytest.mark.parametrize("name", ["mlp", "dynamic_derived", "nested_cond", "tied", "views", "dtypes"])
def test_file_roundtrip_matches_torch_and_resaves_identically(tmp_path, name, encoding):
    c = case(name)
    p1, p2 = tmp_path / "a.pt2f", tmp_path / "b.pt2f"
    _save(c.ep, p1, encoding=encoding)
    loaded = pt2format.load(p1, verify_data=True)
    H.assert_same_program(c.ep, loaded)
    _save(loaded, p2, encoding=encoding)
    assert p1.read_bytes() == p2.read_bytes()
    for args, kwargs in c.valid:
        assert H.assert_same_behaviour(c.ep, loaded, args, kwargs) == "ok"
    for args, kwargs in c.invalid:
        assert H.assert_same_behaviour(c.ep, loaded, args, kwargs) == "err"


def test_same_program_saved_twice_gives_same_bytes(tmp_path):
    c = case("dynamic_derived")
    _save(c.ep, tmp_path / "a.pt2f")
    _save(c.ep, tmp_path / "b.pt2f")
    assert (tmp_path / "a.pt2f").read_bytes() == (tmp_path / "b.pt2f").read_bytes()


def test_example_inputs_are_restored(tmp_path):
    c = case("kwargs_scalars")
    _save(c.ep, tmp_path / "a.pt2f")
    loaded = pt2format.load(tmp_path / "a.pt2f")
    (args, kwargs), (args2, kwargs2) = c.ep.example_inputs, loaded.example_inputs
    assert len(args) == len(args2) and H.outputs_equal(args, args2)
    assert H.outputs_equal(kwargs, kwargs2)
    _save(c.ep, tmp_path / "b.pt2f", example_inputs=False)
    assert pt2format.load(tmp_path / "b.pt2f").example_inputs is None


def test_multi_program_file_stores_shared_weights_once(tmp_path):
    m = M.Tied()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e1 = torch.export.export(m, (torch.tensor([[1, 2]]),))
        e2 = torch.export.export(m, (torch.tensor([[1, 2, 3, 4]]),))
    pkg, payloads = export_package({"prefill": e1, "decode": e2})
    weight_bytes = m.emb.weight.numel() * 4
    assert sum(1 for p in payloads if p.nbytes == weight_bytes) == 1  # tied + shared across programs: once
    _save({"prefill": e1, "decode": e2}, tmp_path / "m.pt2f")
    a = pt2format.load(tmp_path / "m.pt2f", program="prefill")
    b = pt2format.load(tmp_path / "m.pt2f", program="decode")
    H.assert_same_program(e1, a)
    H.assert_same_program(e2, b)
    with pytest.raises(pt2format.LoadError, match="decode"):
        pt2format.load(tmp_path / "m.pt2f")  # two programs, none named "forward": the error lists them


def test_tied_weights_share_one_storage_after_load(tmp_path):
    _save(case("tied").ep, tmp_path / "t.pt2f")
    sd = pt2format.load(tmp_path / "t.pt2f").state_dict
    assert sd["emb.weight"].untyped_storage().data_ptr() == sd["head.weight"].untyped_storage().data_ptr()


def test_weights_false_reads_no_data():
    c = case("views")
    pkg, payloads = export_package(c.ep)

    def no_reads(i):
        raise AssertionError("weights=False must not read storage bytes")
    loaded = build_program(pkg, None, no_reads, weights=False)
    for k, t in loaded.state_dict.items():
        o = c.ep.state_dict[k]
        assert t.device.type == "meta" and t.shape == o.shape and t.stride() == o.stride()
        assert t.storage_offset() == o.storage_offset() and t.dtype == o.dtype
    H.assert_same_graph(c.ep.graph_module, loaded.graph_module)
    assert H.alias_groups(loaded.state_dict) == H.alias_groups(c.ep.state_dict)


@pytest.mark.parametrize("loc", ["cpu", torch.device("cpu"), {"cpu": "cpu"}, "meta", {"cpu": "meta"}])
def test_map_location(tmp_path, loc):
    c = case("mlp")
    _save(c.ep, tmp_path / "m.pt2f")
    loaded = pt2format.load(tmp_path / "m.pt2f", map_location=loc)
    want = "meta" if loc in ("meta", {"cpu": "meta"}) else "cpu"
    assert {t.device.type for t in loaded.state_dict.values()} == {want}
    if want == "cpu":
        H.assert_same_state(c.ep, loaded)


def test_map_location_callable_gets_each_storage_like_torch_load(tmp_path):
    c = case("tied")
    _save(c.ep, tmp_path / "t.pt2f")
    seen = []

    def relocate(storage, location):
        seen.append(location)
        return storage.clone()  # a private copy, as a user-supplied mover would return
    loaded = pt2format.load(tmp_path / "t.pt2f", map_location=relocate)
    H.assert_same_state(c.ep, loaded)  # tied weights still share their (new) storage
    assert seen and set(seen) == {"cpu"}
    assert pt2format.load(tmp_path / "t.pt2f", map_location=lambda s, loc: None).state_dict["emb.weight"].is_cpu


def test_zero_copy_by_default_and_owned_memory_with_copy():
    c = case("mlp")
    pkg, payloads = export_package(c.ep)
    buffers = [bytearray(p) for p in payloads]
    views = [memoryview(b) for b in buffers]
    shared = build_program(pkg, None, lambda i: views[i])
    owned = build_program(pkg, None, lambda i: views[i], copy=True)
    name = "l1.weight"
    idx = pkg.tensors[pkg.programs[0].state[0].tensor].storage
    assert pkg.programs[0].state[0].name == name
    addr = np.frombuffer(buffers[idx], dtype=np.uint8).ctypes.data
    assert shared.state_dict[name].untyped_storage().data_ptr() == addr
    assert owned.state_dict[name].untyped_storage().data_ptr() != addr
    before = owned.state_dict[name].clone()
    buffers[idx][0:4] = bytes(4)  # zero the first element in the "file"
    assert shared.state_dict[name].flatten()[0].item() == 0.0
    assert torch.equal(owned.state_dict[name], before)


def test_writes_to_loaded_tensors_never_reach_the_file(tmp_path):
    c = case("buffers")
    p = tmp_path / "b.pt2f"
    _save(c.ep, p)
    before = p.read_bytes()
    loaded = pt2format.load(p)
    x = c.valid[0][0][0]
    loaded.module()(x)  # mutates buffers in place
    with torch.no_grad():
        for t in loaded.state_dict.values():
            t.add_(1)
    del loaded
    assert p.read_bytes() == before


def test_four_threads_load_the_same_file(tmp_path, monkeypatch):
    """Four threads load at once, and all four are inside `load` together: a barrier in the
    middle of the load (after the file is read, before the program is built) only opens
    when every thread has reached it, so a lock serialising loads fails the test by
    breaking the barrier, with no timing involved. Every result must be the program."""
    import pt2format.loaders._load as load_mod

    c = case("nested_cond")
    p = tmp_path / "c.pt2f"
    _save(c.ep, p)
    results, errors = [], []
    inside = threading.Barrier(4, timeout=120)
    real_build = load_mod.build_program
    met = threading.local()

    def build_after_all_arrive(*a, **kw):
        if not getattr(met, "done", False):
            met.done = True
            inside.wait()
        return real_build(*a, **kw)

    monkeypatch.setattr(load_mod, "build_program", build_after_all_arrive)

    def work():
        try:
            for _ in range(3):
                results.append(pt2format.load(p))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 12
    for r in results:
        H.assert_same_program(c.ep, r)
    args = c.valid[0][0]
    assert all(H.outputs_equal(c.ep.module()(*args), r.module()(*args)) for r in results)


def test_unflatten_structure_is_the_same(tmp_path):
    c = case("nested_modules")
    _save(c.ep, tmp_path / "n.pt2f")
    loaded = pt2format.load(tmp_path / "n.pt2f")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u1, u2 = torch.export.unflatten(c.ep), torch.export.unflatten(loaded)
    assert [n for n, _ in u1.named_modules()] == [n for n, _ in u2.named_modules()]
    assert [type(m).__name__ for _, m in u1.named_modules()] == [type(m).__name__ for _, m in u2.named_modules()]
    x = c.valid[0][0][0]
    assert torch.equal(u1(x), u2(x))


@pytest.mark.parametrize("name", ["mlp", "dynamic_derived", "custom_ops"])
def test_reexport_of_loaded_module_matches_reexport_of_original(tmp_path, name):
    c = case(name)
    _save(c.ep, tmp_path / "r.pt2f")
    loaded = pt2format.load(tmp_path / "r.pt2f")
    args, kwargs = c.ep.example_inputs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = None
        if name == "dynamic_derived":
            from torch.export import Dim
            d = Dim("d", min=2, max=32)
            ds = {"x": {0: d}, "y": {0: 2 * d}, "z": {0: d + 1}}
        ours = torch.export.export(loaded.module(), args, kwargs, dynamic_shapes=ds)
        theirs = torch.export.export(c.ep.module(), args, kwargs, dynamic_shapes=ds)
    H.assert_same_graph(theirs.graph_module, ours.graph_module, with_meta=False)
    assert H.ranges(ours) == H.ranges(theirs)


_PRODUCER = textwrap.dedent('''
    import dataclasses, sys, collections, torch, pt2format
    Point = collections.namedtuple("Point", ["x", "y"])

    @dataclasses.dataclass
    class Result:
        total: torch.Tensor
        point: Point

    torch.export.register_dataclass(Result, serialized_type_name="producer_only.Result")

    @torch.library.custom_op("pt2f_producer_only::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    class M(torch.nn.Module):
        def forward(self, x):
            return Result(total=x.sum(), point=Point(x + 1, x - 1))

    class C(torch.nn.Module):
        def forward(self, x):
            return torch.ops.pt2f_producer_only.twice(x) + 1

    x = torch.arange(3.0)
    pt2format.save(torch.export.export(M(), (x,)), sys.argv[1], progress=False)
    pt2format.save(torch.export.export(C(), (x,)), sys.argv[2], progress=False)
''')

_CONSUMER = textwrap.dedent('''
    import sys, warnings, torch, pt2format
    from pt2format.loaders._treespec import FallbackWarning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ep = pt2format.load(sys.argv[1])
    fallbacks = [str(x.message) for x in w if issubclass(x.category, FallbackWarning)]
    assert any("producer_only.Result" in m for m in fallbacks), fallbacks
    assert any("Point" in m for m in fallbacks), fallbacks
    # Re-saving the stand-in containers writes the file's tree spec nodes back: the same bytes.
    pt2format.save(ep, sys.argv[1] + ".again", progress=False)
    assert open(sys.argv[1], "rb").read() == open(sys.argv[1] + ".again", "rb").read()
    out = ep.module()(torch.arange(3.0))
    # Stand-ins with the original names and fields (loaders/_standins.py).
    assert type(out).__name__ == "Result" and type(out).__module__ == "producer_only", type(out)
    assert out.total.item() == 3.0
    assert type(out.point).__name__ == "Point" and out.point._fields == ("x", "y"), out.point
    assert torch.equal(out.point.x, torch.arange(3.0) + 1) and out.point[1] is out.point.y
    try:
        pt2format.load(sys.argv[2])
    except pt2format.LoadError as e:
        assert "pt2f_producer_only::twice" in str(e), str(e)
    else:
        raise AssertionError("loading an unregistered custom op must fail")
    print("CONSUMER-OK")
''')


def test_fresh_process_without_producer_classes_or_ops(tmp_path):
    prod, cons = tmp_path / "producer.py", tmp_path / "consumer.py"
    prod.write_text(_PRODUCER)
    cons.write_text(_CONSUMER)
    a, b = tmp_path / "dc.pt2f", tmp_path / "op.pt2f"
    env = dict(os.environ)
    subprocess.run([sys.executable, str(prod), str(a), str(b)], check=True, env=env, cwd=tmp_path,
                   capture_output=True, timeout=300)
    r = subprocess.run([sys.executable, str(cons), str(a), str(b)], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "CONSUMER-OK" in r.stdout, r.stderr[-3000:]


def test_rebuilt_program_has_the_attributes_torch_gives_one(tmp_path):
    """The loader builds ExportedProgram without its __init__ (to defer code generation): same attributes."""
    c = case("nested_cond")
    _save(c.ep, tmp_path / "c.pt2f")
    loaded = pt2format.load(tmp_path / "c.pt2f")
    # no instance attribute stands in for a method: the state is torch's, the methods are the class's
    ours = {k for k in vars(loaded) if not k.startswith("_pt2format")}
    assert ours == set(vars(c.ep))
    assert isinstance(loaded, torch.export.ExportedProgram)
    overridden = {k for k, v in vars(type(loaded)).items() if callable(v) and not k.startswith("__")}
    # the documented overrides (loaders/_program.py LoadedProgram): module(), and the two ways torch derives a
    # program, whose result keeps the loaded program's guards (_derived)
    assert overridden == {"module", "run_decompositions", "_update", "_derived"}
    assert isinstance(loaded.graph_module, torch.fx.GraphModule)
    assert "def forward" in loaded.graph_module.code  # generated on first use
    args = c.valid[0][0]
    assert H.outputs_equal(loaded.graph_module(*[loaded.state_dict["w"]], *args),
                           c.ep.graph_module(*[c.ep.state_dict["w"]], *args))


def test_programs_torch_derives_keep_the_loaded_guards(tmp_path):
    """torch's constructor recomputes `_guards_code` from the shape environment, where an exported program holds
    its guards and a loaded one does not: a decomposed or `_update`d loaded program keeps the guards and the
    verdicts the exported program's derived programs have."""
    from torch.export import Dim

    class Shifted(torch.nn.Module):
        def forward(self, x, y):
            return x + y[1:]

    d = Dim("d", min=2, max=32)
    ep = torch.export.export(Shifted(), (torch.randn(4, 3), torch.randn(5, 3)),
                             dynamic_shapes={"x": {0: d}, "y": {0: d + 1}})
    _save(ep, tmp_path / "s.pt2f")
    loaded = pt2format.load(tmp_path / "s.pt2f")
    bad = (torch.randn(7, 3), torch.randn(7, 3))
    derived = [(ep.run_decompositions(), loaded.run_decompositions()),
               (ep._update(ep.graph_module, ep.graph_signature), loaded._update(loaded.graph_module,
                                                                                loaded.graph_signature))]
    for theirs, ours in derived:
        with pytest.raises(AssertionError) as want:
            theirs.module()(*bad)
        with pytest.raises(AssertionError) as got:
            ours.module()(*bad)
        assert str(got.value) == str(want.value)
        assert H.outputs_equal(ours.module()(torch.ones(7, 3), torch.ones(8, 3)),
                               theirs.module()(torch.ones(7, 3), torch.ones(8, 3)))
