"""An nn.Module instance passed as a forward input round-trips (issue 20, item 5).

torch.export treats the module's class as a pytree node whose leaves are its
parameters and buffers. Every output is compared with torch's original
`ep.module()` called on the same module instances, bit for bit.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import pt2format


class Inner(torch.nn.Module):
    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = torch.nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.randn(4, 4, generator=g))
            self.lin.bias.copy_(torch.randn(4, generator=g))
        self.register_buffer("scale", torch.rand(4, generator=g) + 0.5)

    def forward(self, x):
        return self.lin(x) * self.scale


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, generator=torch.Generator().manual_seed(3)))

    def forward(self, x, mod, *, bias):
        return mod(x) + self.w + bias


def _exported():
    x, inner, bias = torch.randn(2, 4), Inner(0), torch.randn(4)
    return torch.export.export(Outer(), (x, inner), {"bias": bias}), (x, inner, bias)


@pytest.mark.parametrize("encoding", ["flatbuffers", "json"])
def test_module_input_roundtrip_matches_torch(tmp_path, encoding):
    ep, (x, inner, bias) = _exported()
    path = tmp_path / "m.pt2f"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*example inputs of program.*")  # a module is not data
        pt2format.save(ep, path, progress=False, fsync=False, encoding=encoding)
    ep2 = pt2format.load(path)
    assert ep2.call_spec.in_spec == ep.call_spec.in_spec
    other = Inner(7)  # another instance: its own weights are used, by torch and by the loaded program
    for mod in (inner, other, inner):
        with torch.no_grad():
            want = ep.module()(x, mod, bias=bias)
            got = ep2.module()(x, mod, bias=bias)
            fast = pt2format.load_module(path)(x, mod, bias=bias)
        assert torch.equal(got, want) and torch.equal(fast, want)
    # the class is a pytree node only while the program runs, as with torch's module()
    assert Inner not in torch.utils._pytree.SUPPORTED_NODES
    again = tmp_path / "again.pt2f"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*example inputs of program.*")
        pt2format.save(ep2, again, progress=False, fsync=False, encoding=encoding)
    assert again.read_bytes() == path.read_bytes()


def test_module_input_refuses_what_torch_refuses(tmp_path):
    """A module of another class is refused by the loaded program as by torch's (the verdict, not the text)."""
    ep, (x, inner, bias) = _exported()
    path = tmp_path / "m.pt2f"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*example inputs of program.*")
        pt2format.save(ep, path, progress=False, fsync=False)
    ep2 = pt2format.load(path)
    wrong = torch.nn.Linear(4, 4)
    with pytest.raises(Exception) as theirs:
        ep.module()(x, wrong, bias=bias)
    with pytest.raises(Exception) as ours:
        ep2.module()(x, wrong, bias=bias)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    assert Inner not in torch.utils._pytree.SUPPORTED_NODES
