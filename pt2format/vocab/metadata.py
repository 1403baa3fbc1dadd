"""Node metadata torch derives from a node's value (`tensor_meta`): computed the same way on save and load.

A file stores `tensor_meta` only where it differs from what torch derives
from `val`; both directions use this one derivation to decide.
"""

from __future__ import annotations

import torch


#: (dtype, sizes, strides, requires_grad) -> TensorMetadata, for strided tensors of concrete shape.
#: torch's _extract_tensor_metadata asks is_contiguous for three memory formats per
#: value, half of the metadata work of a 20,000-node save or load; the answer depends
#: on nothing but this key, and TensorMetadata is an immutable tuple, so values of the
#: same shape share one.
_TENSOR_META_CACHE: dict = {}
_TENSOR_META_CACHE_LIMIT = 4096


def _dense_in_order(sizes, strides, order, max_too: bool) -> bool:
    """torch._prims_common's contiguity test over dims `order` (innermost first), for integer sizes and strides."""
    expected = expected_max = 1
    for i in order:
        if sizes[i] == 1:
            continue
        if strides[i] != expected and not (max_too and strides[i] == expected_max):
            return False
        expected_max *= max(sizes[i], 1)
        expected *= sizes[i]
    return True


def static_memory_format(sizes: tuple, strides: tuple):
    """The memory format torch's _extract_tensor_metadata finds for a strided tensor of integer sizes and strides."""
    n = len(sizes)
    numel = 1
    for d in sizes:
        numel *= d
    if numel < 2 or _dense_in_order(sizes, strides, range(n - 1, -1, -1), True):
        return torch.contiguous_format
    if n == 4 and _dense_in_order(sizes, strides, (1, 3, 2, 0), False):
        return torch.channels_last
    if n == 5 and _dense_in_order(sizes, strides, (1, 4, 3, 2, 0), False):
        return torch.channels_last_3d
    return None


def static_tensor_meta(dtype, sizes: tuple, strides: tuple, requires_grad: bool):
    """derived_tensor_meta of a strided, non-quantized tensor whose sizes and strides are these integers.

    From the numbers alone, without asking the tensor: the loader knows them from the file before it
    makes the fake value, and a FakeTensor's attributes cost more than the derivation.
    """
    key = (dtype, sizes, strides, requires_grad)
    meta = _TENSOR_META_CACHE.get(key)
    if meta is None:  # torch's rules on plain integers: no symbolic_shapes (and no sympy) import
        from torch.fx.passes.shape_prop import TensorMetadata

        meta = TensorMetadata(torch.Size(sizes), dtype, requires_grad, strides, static_memory_format(sizes, strides),
                              False, {})
        if len(_TENSOR_META_CACHE) < _TENSOR_META_CACHE_LIMIT:
            _TENSOR_META_CACHE[key] = meta
    return meta


def derived_tensor_meta(val, requires_grad: bool):
    """(the TensorMetadata torch's export computes for the tensor `val`, with `requires_grad`; whether it is static)."""
    if val.layout is torch.strided and not val.is_quantized:
        sizes, strides = tuple(val.shape), val.stride()
        if all(type(d) is int for d in sizes) and all(type(d) is int for d in strides):
            return static_tensor_meta(val.dtype, sizes, strides, requires_grad), True
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    return _extract_tensor_metadata(val)._replace(requires_grad=requires_grad), False


def symbolic_key(t: torch.Tensor, requires_grad: bool):
    """(dtype, requires_grad, sizes, strides) of a strided, non-quantized tensor, each SymInt by its SymNode
    object: tensors with one key have the same expressions, so torch derives the same tensor_meta for
    them. A traced program's values of one shape share their SymNodes, as do the loader's values of one
    shared TensorMeta, so the exporter and the loader derive a symbolic value's tensor_meta (dozens of
    symbolic operations) once per shape. None for other tensors."""
    if t.layout != torch.strided or t.is_quantized:
        return None
    return (t.dtype, requires_grad,
            tuple(s.node if type(s) is torch.SymInt else s for s in t.shape),
            tuple(s.node if type(s) is torch.SymInt else s for s in t.stride()))
