"""Multi-program files: several programs sharing one set of weights (stored once)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.export import Dim

from conformance.corpus._case import Program, case

#: The `programs` check's known failure on pt2format's own rows (SEPARATE_LOADS in every multi-program case).
_SEPARATE_LOADS = {"programs": (
    "pt2format.load loads one program per call, each with its own storages (exporter/_tensors.py: separate "
    "loads share again only when re-saved), so state the file's programs share is two storages after load "
    "and a cache one program writes is not the one the next reads (issue 42)")}


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids, state):
        h = torch.tanh(self.proj(self.emb(ids)) + state.unsqueeze(1))
        return self.head(h), h[:, -1]


@case("multi_program", tags=("fast",), xfail_checks=_SEPARATE_LOADS)
def multi_program():
    """`prefill` (dynamic sequence) and `decode` (one token) exported from the same module: shared, tied weights."""
    m = TinyLM().eval()
    seq = Dim("seq", min=2, max=32)
    prefill = Program(m, (torch.tensor([[1, 2, 3, 4]]), torch.zeros(1, 8)), dynamic_shapes=({1: seq}, None),
                      extra_inputs=[((torch.tensor([[5, 6]]), torch.zeros(1, 8)), {})])
    decode = Program(m, (torch.tensor([[7]]), torch.randn(1, 8)))
    return {"prefill": prefill, "decode": decode}


class CachedLM(nn.Module):
    """A key cache as a buffer: `prefill` writes its first positions, `decode` appends one and reads them all."""

    def __init__(self, dim=4, max_len=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("cache", torch.zeros(1, max_len, dim))

    def forward(self, x, pos):
        k = self.proj(x)
        self.cache.index_copy_(1, pos, k)
        return self.cache.sum(1) * 1


@case("multi_program_cache", tags=("full",), xfail_checks=_SEPARATE_LOADS)
def multi_program_cache():
    """`prefill` writes a cache buffer in place that `decode` (exported from the same module) then reads."""
    m = CachedLM().eval()
    g = torch.Generator().manual_seed(3)
    prefill = Program(m, (torch.randn(1, 3, 4, generator=g), torch.arange(3)))
    decode = Program(m, (torch.randn(1, 1, 4, generator=g), torch.tensor([3])))
    return {"prefill": prefill, "decode": decode}
