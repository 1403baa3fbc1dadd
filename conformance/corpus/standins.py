"""Containers the loading process cannot import: namedtuples, dataclasses, registered classes, a ModelOutput.

The loader's process never imports the corpus, so every class defined here
is missing there: the loaded program must use stand-ins (loaders/_standins.py)
that print the same specs, give the same outputs and re-save to the same
bytes. The ModelOutput subclass lives in `_standin_model_output` so that
importing the corpus does not import transformers.
"""

from __future__ import annotations

import collections
import dataclasses

import torch
import torch.utils._pytree as pytree
from torch import nn

from conformance.corpus._case import Program, case

Span = collections.namedtuple("Span", ["start", "stop"])
pytree._register_namedtuple(Span, serialized_type_name="conformance.corpus.standins.Span")


@dataclasses.dataclass
class Batch:
    tokens: torch.Tensor
    mask: torch.Tensor | None = None


torch.export.register_dataclass(Batch, serialized_type_name="conformance.corpus.standins.Batch")


class Scaled:
    """A class registered with register_pytree_node whose context (a dict) is not a tensor."""

    def __init__(self, value, offset, meta):
        self.value, self.offset, self.meta = value, offset, meta


pytree.register_pytree_node(
    Scaled, lambda s: ([s.value, s.offset], s.meta), lambda v, ctx: Scaled(v[0], v[1], ctx),
    serialized_type_name="conformance.corpus.standins.Scaled",
    flatten_with_keys_fn=lambda s: ([(pytree.GetAttrKey("value"), s.value),
                                     (pytree.GetAttrKey("offset"), s.offset)], s.meta))


class StandinIO(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, tokens, value, offset):
        h = self.lin(tokens) * 2 + value - offset
        return Batch(tokens=h), Span(h.sum(), h.mean()), Scaled(h * 2, h + 1, {"scale": 3, "unit": "m"})


@case("standin_containers", tags=("fast",))
def standin_containers():
    """namedtuple, dataclass (a None field) and register_pytree_node (with a context) outputs the loader cannot import.

    Inputs are plain tensors: the runner records inputs as plain containers only (tests/loaders/test_standins.py
    covers inputs of such types)."""
    torch.manual_seed(0)
    return Program(StandinIO(), (torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4)))


@case("standin_model_output", tags=("full", "transformers"))
def standin_model_output():
    """A transformers ModelOutput subclass the loader cannot import (defined by the producer)."""
    from conformance.corpus._standin_model_output import TinyHead

    torch.manual_seed(0)
    return Program(TinyHead(), (torch.randn(2, 4),))
