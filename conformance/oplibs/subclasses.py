"""Tensor subclasses the corpus programs hold as weights, and the loader's list of trusted ones.

`ScaledTensor` is a traceable wrapper subclass in the style of weight-only
quantization libraries: int8 data and a per-row float scale, dequantized on
use, so operators on it return plain tensors. A runtime that runs such a
program imports the class (as it would link a kernel library) and allows it:
`TENSOR_SUBCLASSES` is what conformance's pt2format loader passes as
`allow_subclasses` when this module is imported.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree


class ScaledTensor(torch.Tensor):
    """int8 `qdata` times a float `scale` (one per row), seen as a tensor of `orig_dtype`."""

    @staticmethod
    def __new__(cls, qdata, scale, orig_dtype):
        return torch.Tensor._make_wrapper_subclass(cls, qdata.shape, dtype=orig_dtype, device=qdata.device,
                                                   requires_grad=False)

    def __init__(self, qdata, scale, orig_dtype):
        self.qdata = qdata
        self.scale = scale
        self.orig_dtype = orig_dtype

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __tensor_flatten__(self):
        return ["qdata", "scale"], {"orig_dtype": self.orig_dtype, "layout_name": "per_row"}

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return ScaledTensor(inner["qdata"], inner["scale"], ctx["orig_dtype"])

    @classmethod
    def from_float(cls, w: torch.Tensor) -> "ScaledTensor":
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127
        return cls(torch.round(w / scale).to(torch.int8), scale, w.dtype)

    def dequantize(self) -> torch.Tensor:
        return self.qdata.to(self.orig_dtype) * self.scale

    def __repr__(self):
        return f"ScaledTensor({self.dequantize()!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.ops.aten.detach.default, torch.ops.aten.alias.default, torch.ops.aten.clone.default):
            s = args[0]
            return ScaledTensor(func(s.qdata), func(s.scale), s.orig_dtype)

        def plain(t):
            return t.dequantize() if isinstance(t, ScaledTensor) else t

        return func(*pytree.tree_map(plain, args), **pytree.tree_map(plain, kwargs))


TENSOR_SUBCLASSES = (ScaledTensor,)
