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
