"""Multi-program files: several programs sharing one set of weights (stored once)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.export import Dim

from conformance.corpus._case import Program, case


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


@case("multi_program", tags=("fast",))
def multi_program():
    """`prefill` (dynamic sequence) and `decode` (one token) exported from the same module: shared, tied weights."""
    m = TinyLM().eval()
    seq = Dim("seq", min=2, max=32)
    prefill = Program(m, (torch.tensor([[1, 2, 3, 4]]), torch.zeros(1, 8)), dynamic_shapes=({1: seq}, None),
                      extra_inputs=[((torch.tensor([[5, 6]]), torch.zeros(1, 8)), {})])
    decode = Program(m, (torch.tensor([[7]]), torch.randn(1, 8)))
    return {"prefill": prefill, "decode": decode}
