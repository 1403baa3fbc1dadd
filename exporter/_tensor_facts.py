"""The concrete properties of a node's tensor value, read from the (fake) tensor once per save.

A 20,000-node save asks every value's dtype, sizes, strides, offset,
requires_grad and device twice: for its TensorMeta (exporter/_graph.py) and
to decide whether FX's `tensor_meta` is the derivable one
(exporter/_metadata.py). Each is a call into torch (several microseconds per
value), so both ask this table, which reads them once.

A FakeTensor's class disables `__torch_function__` (it is torch's
`_disabled_torch_function_impl`), yet each property read on it still looks
for an override before answering, on every read.
For such a class the reads are made with subclass overrides turned off,
which gives the same answers (there is no override to skip) without that
search; a tensor whose class has its own `__torch_function__` is read as
before, through it.
"""

from __future__ import annotations

import torch

#: only_ints(map(type, xs)): every x is exactly an int (no SymInt, no bool), in one C call.
only_ints = frozenset({int}).issuperset

_DISABLED = torch._C._disabled_torch_function_impl
_no_subclass_overrides = torch._C.DisableTorchFunctionSubclass


class TensorFacts:
    """id(tensor) -> (dtype, sizes, strides, storage_offset, requires_grad, device, is_quantized), or None for a
    tensor that is not strided or has a symbolic size, stride or offset (those are converted each time).

    `derived` keeps, for symbolic tensors, what exporter/_metadata.py derived from one
    (see pt2format.vocab.metadata.symbolic_key).
    """

    __slots__ = ("_memo", "derived")

    def __init__(self):
        self._memo: dict[int, tuple] = {}  # id -> (tensor, facts): the tensor held so its id is not reused
        self.derived: dict[tuple, tuple] = {}  # symbolic_key -> (a tensor holding its SymNodes, derivation)

    def __call__(self, t: torch.Tensor):
        hit = self._memo.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        if type(t).__torch_function__ is _DISABLED:  # FakeTensor: no override to look for
            with _no_subclass_overrides():
                facts = _read(t)
        else:
            facts = _read(t)
        self._memo[id(t)] = (t, facts)
        return facts


def _read(t: torch.Tensor):
    if t.layout != torch.strided:
        return None
    sizes, strides, offset = tuple(t.shape), t.stride(), t.storage_offset()
    if type(offset) is int and only_ints(map(type, sizes)) and only_ints(map(type, strides)):
        return (t.dtype, sizes, strides, offset, t.requires_grad, t.device, t.is_quantized)
    return None
