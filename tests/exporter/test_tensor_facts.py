"""exporter/_tensor_facts.py reads a tensor's properties once per save: they must be torch's, and a symbolic
or non-strided tensor must get none (its TensorMeta is converted each time)."""

from __future__ import annotations

import torch

from pt2format.exporter._tensor_facts import TensorFacts


def test_facts_are_torchs():
    facts = TensorFacts()
    for t in (torch.empty(2, 3), torch.empty(4, 5).t(), torch.empty(6)[1:], torch.zeros(2, requires_grad=True),
              torch.empty(2, 3, dtype=torch.float16), torch.empty(0)):
        got = facts(t)
        assert got == (t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), t.requires_grad, t.device, False)
        assert facts(t) is got  # read once


def test_quantized_is_marked():
    q = torch.quantize_per_tensor(torch.ones(2, 2), 0.1, 0, torch.qint8)
    assert facts_of(q)[6] is True


def facts_of(t):
    return TensorFacts()(t)


def test_not_strided_has_none():
    assert facts_of(torch.eye(3).to_sparse()) is None


def test_symbolic_sizes_have_none():
    class M(torch.nn.Module):
        def forward(self, x):
            return x * 2

    ep = torch.export.export(M(), (torch.ones(4, 3),), dynamic_shapes=({0: torch.export.Dim("n")},))
    (x,) = [n for n in ep.graph.nodes if n.op == "placeholder"]
    assert not isinstance(x.meta["val"].shape[0], int)
    assert facts_of(x.meta["val"]) is None


def test_same_id_other_tensor_is_read_again():
    facts = TensorFacts()
    a = torch.empty(2, 3)
    got_a = facts(a)
    facts._memo[id(a)] = (torch.empty(7), "stale")  # an id reused by another tensor after its first was freed
    assert facts(a) == got_a


def test_fake_tensor_facts_are_its_own():
    """A FakeTensor is read with subclass overrides off (its class has none): the answers must be the ones its
    properties give when asked the usual way."""

    class M(torch.nn.Module):
        def forward(self, x):
            return (x * 2).t()[1:], x.to(torch.float16)

    ep = torch.export.export(M(), (torch.ones(4, 3),))
    vals = [n.meta["val"] for n in ep.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)]
    assert vals and all(type(v).__name__ == "FakeTensor" for v in vals)
    facts = TensorFacts()
    for v in vals:
        assert facts(v) == (v.dtype, tuple(v.shape), v.stride(), v.storage_offset(), v.requires_grad, v.device,
                            v.is_quantized)


class _DynamicMixed(torch.nn.Module):
    """Symbolic values of several shapes, memory formats and dtypes, most sharing one shape's SymNodes."""

    def forward(self, x, img):
        for _ in range(4):
            x = torch.relu(x) + 1
        y = x.t()  # the same SymNodes, other strides
        z = torch.cat([x, x]).to(torch.float16)  # 2*s0: another SymNode, another dtype
        c = img.contiguous(memory_format=torch.channels_last) * 2  # channels_last: another memory format
        return y.contiguous(), z, c


def test_the_derivable_tensor_meta_flag_is_each_values_own():
    """The save records whether a node's tensor_meta is the one derived from its value; for symbolic values that
    derivation is made once per (dtype, requires_grad, SymNodes of sizes and strides). The flags must be those
    of deriving every value on its own, including nodes whose tensor_meta is not the derivable one."""
    import pt2format
    from pt2format.vocab.metadata import derived_tensor_meta

    n, b = torch.export.Dim("n", min=2, max=64), torch.export.Dim("b", min=2, max=8)
    ep = torch.export.export(_DynamicMixed(), (torch.randn(4, 3), torch.randn(2, 3, 4, 5)),
                             dynamic_shapes=({0: n}, {0: b}))
    nodes = [x for x in ep.graph.nodes if isinstance(x.meta.get("val"), torch.Tensor) and "tensor_meta" in x.meta]
    # Two nodes get a tensor_meta that is not their value's derivation: another dtype, a wrong requires_grad.
    nodes[2].meta["tensor_meta"] = nodes[2].meta["tensor_meta"]._replace(dtype=torch.float64)
    nodes[3].meta["tensor_meta"] = nodes[3].meta["tensor_meta"]._replace(requires_grad=True)
    want = {x.name: repr(x.meta["tensor_meta"]) == repr(derived_tensor_meta(x.meta["val"],
                                                                            x.meta["tensor_meta"].requires_grad)[0])
            for x in nodes}
    assert True in want.values() and False in want.values()
    assert len({x.meta["val"].shape[0].node for x in nodes if isinstance(x.meta["val"].shape[0], torch.SymInt)}) > 1

    import io
    buf = io.BytesIO()
    pt2format.save(ep, buf)
    tree = pt2format.read(buf.getvalue()).package
    g = tree.programs[0].graph
    flags = {x.name: bool(x.metadata is not None and x.metadata.tensor_meta) for x in g.nodes}
    flags.update({a.value.name: bool(md is not None and md.tensor_meta)
                  for a, md in zip(g.inputs, g.input_metadata or [None] * len(g.inputs)) if a.value is not None
                  and getattr(a.value, "name", None)})
    assert {k: flags[k] for k in want} == want
