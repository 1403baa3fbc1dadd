"""A saved program shares one TensorMeta per shape (pt2f_shared); the loader still gives every value its own fake."""

from __future__ import annotations

import torch

import pt2format
from pt2format.loaders._program import build_program
from pt2format._codecs import flatbuffers as fb_codec


class _Mixed(torch.nn.Module):
    """Many values of one shape, a few of others, one that requires grad: several TensorMetas, most shared."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8))

    def forward(self, x, y):
        for _ in range(12):
            x = torch.tanh(x * self.w) + 0.5
        z = x.t().contiguous() * 2
        return x.sum(0), z, y.to(torch.float64) + 1


def _exported():
    return torch.export.export(_Mixed(), (torch.randn(4, 8), torch.randn(3, dtype=torch.float32)))


def _val_key(v):
    return (tuple(v.shape), tuple(v.stride()), v.dtype, v.requires_grad, v.device)


def _saved_metas_match(ep, path, key):
    """Save `ep`: the file has one TensorMeta object per distinct `key` of torch's values, shared by exactly
    the values with that key. Returns (the decoded tree, name -> torch's value)."""
    pt2format.save(ep, path)
    tree = pt2format.read(path).package
    values = tree.programs[0].graph.tensor_values
    vals = {n.name: n.meta["val"] for n in ep.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    assert {v.name for v in values} == set(vals)
    assert len({id(v.meta) for v in values}) == len({key(t) for t in vals.values()}) < len(values)
    assert all((a.meta is b.meta) == (key(vals[a.name]) == key(vals[b.name])) for a in values for b in values)
    return tree, vals


def test_one_meta_per_shape_in_the_file_and_one_fake_per_value_after_load(tmp_path):
    ep = _exported()
    path = tmp_path / "m.pt2f"
    tree, vals = _saved_metas_match(ep, path, _val_key)

    # the nodes of one module stack share its entries (ModuleStackEntry is pt2f_shared too)
    stacks = [n.metadata.nn_module_stack for n in tree.programs[0].graph.nodes if n.metadata.nn_module_stack]
    assert len(stacks) > 12 and all(s == stacks[0] for s in stacks)
    assert len({id(e) for s in stacks for e in s}) == len(stacks[0])

    loaded = pt2format.load(path)
    exported = {n.name: n for n in ep.graph.nodes}
    theirs = {n.name: n for n in torch.export.load(_torch_file(ep, tmp_path)).graph.nodes}
    fakes = []
    for n in loaded.graph.nodes:
        if n.name not in vals:
            continue
        v = n.meta["val"]
        assert _val_key(v) == _val_key(vals[n.name]) == _val_key(theirs[n.name].meta["val"]), n.name
        assert n.meta.get("tensor_meta") == exported[n.name].meta.get("tensor_meta"), n.name
        assert n.meta.get("nn_module_stack") == exported[n.name].meta.get("nn_module_stack"), n.name
        fakes.append(v)
    assert len(fakes) == len(vals) and len({id(f) for f in fakes}) == len(fakes)  # no two values share a fake
    assert len({f.untyped_storage()._cdata for f in fakes}) == len(fakes)  # ... nor a storage
    x, y = torch.randn(4, 8), torch.randn(3)
    for a, b in zip(loaded.module()(x, y), ep.module()(x, y)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def _torch_file(ep, tmp_path):
    p = tmp_path / "m.pt2"
    torch.export.save(ep, p)
    return p


def test_building_a_program_leaves_the_decoded_tree_as_it_was(tmp_path):
    """Shared objects must not be changed in place by the loader (a change would reach every value using them)."""
    path = tmp_path / "m.pt2f"
    pt2format.save(_exported(), path)
    f = pt2format.read(path, copy_on_write=True)
    build_program(f.package, None, f.storage_view, file_key=f.file_key)
    assert f.package == fb_codec.decode(f._main.section_view(0))


class _Dynamic(torch.nn.Module):
    """Values of a symbolic batch size: several with one (sizes, strides) in expressions, and a few others."""

    def forward(self, x, y):
        for _ in range(6):
            x = torch.relu(x) * 2
        z = torch.cat([x, x], 0)  # 2*s0 rows
        return z.sum(1), x.t().contiguous(), y + 1


def _sym_key(v):
    return (tuple(map(str, v.shape)), tuple(map(str, v.stride())), str(v.storage_offset()), v.dtype,
            v.requires_grad, v.device)


def test_symbolic_metas_are_shared_and_load_as_torch_loads_them(tmp_path):
    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(_Dynamic(), (torch.randn(4, 8), torch.randn(3)), dynamic_shapes=({0: batch}, None))
    path = tmp_path / "d.pt2f"
    _, vals = _saved_metas_match(ep, path, _sym_key)
    assert any(not isinstance(s, int) for t in vals.values() for s in t.shape)  # the case: symbolic sizes

    p2 = tmp_path / "d.pt2"
    torch.export.save(ep, p2)
    theirs = {n.name: n.meta["val"] for n in torch.export.load(p2).graph.nodes if n.name in vals}
    loaded = pt2format.load(path)
    fakes = [n.meta["val"] for n in loaded.graph.nodes if n.name in vals]
    for n in loaded.graph.nodes:
        if n.name in vals:
            assert _sym_key(n.meta["val"]) == _sym_key(theirs[n.name]) == _sym_key(vals[n.name]), n.name
    assert len({id(f) for f in fakes}) == len(fakes) == len(vals)
    assert len({f.untyped_storage()._cdata for f in fakes}) == len(fakes)  # nor a storage
    # tensor_meta, derived once per shared TensorMeta, is what export gave each value and what each value gives
    from pt2format.vocab.metadata import derived_tensor_meta

    exported = {n.name: n for n in ep.graph.nodes}
    checked = 0
    for n in loaded.graph.nodes:
        if n.name in vals and "tensor_meta" in exported[n.name].meta:
            got = n.meta["tensor_meta"]
            assert str(got) == str(exported[n.name].meta["tensor_meta"]), n.name
            assert str(got) == str(derived_tensor_meta(n.meta["val"], got.requires_grad)[0]), n.name
            checked += 1
    assert checked > len(vals) // 2
    assert loaded.range_constraints.keys() == ep.range_constraints.keys()
    for b in (2, 5, 64):
        x, y = torch.randn(b, 8), torch.randn(3)
        for a, e in zip(loaded.module()(x, y), ep.module()(x, y)):
            torch.testing.assert_close(a, e, rtol=0, atol=0)
