"""A ModelOutput subclass defined by the producer only (imports transformers; used by `standins`)."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from transformers.utils import ModelOutput


@dataclasses.dataclass
class TinyOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None


class TinyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        h = self.lin(x)
        return TinyOutput(logits=h.log_softmax(-1), hidden=h)
