"""Tensors that are not one strided view of one storage -> rows built from other rows (schema 1.1).

Three kinds, each stored without pickle as ordinary tensor rows plus plain
fields:
- quantized tensors (quint8, qint8, qint32): the row is the strided view of
  the integer representation, `Tensor.quantization` holds the scheme, scale
  and zero point, or references to the per-channel scale and zero-point rows;
- sparse tensors (COO, CSR, CSC, BSR, BSC): `Tensor.parts` names the
  component rows (indices, values, ...), `Tensor.layout` the layout;
- traceable wrapper subclasses (`__tensor_flatten__`): `Tensor.parts` names
  the inner tensors' rows, `Tensor.subclass` holds the class's qualified name
  and its flatten context as a plain `Value` (ints, floats, strings, lists,
  dicts, dtypes, devices, and enum members, dataclasses and namedtuples as
  EnumValue / ObjectValue; anything else is an ExportError).
Component rows are added before the row that uses them, so every part index
is smaller than its owner's (the loader relies on it: no cycles).
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from pt2format._generated.model import Quantization, TensorPart, TensorSubclass
from pt2format.errors import ExportError

from pt2format.vocab.composite import SPARSE_PARTS, class_fqn
from pt2format.vocab.enums import LAYOUT_TO_SCHEMA, ints
from ._values import to_value
from pt2format._generated import model as _m

QScheme = ints(_m.QScheme)

QSCHEME_TO_SCHEMA = {
    torch.per_tensor_affine: QScheme.PER_TENSOR_AFFINE,
    torch.per_channel_affine: QScheme.PER_CHANNEL_AFFINE,
    torch.per_channel_affine_float_qparams: QScheme.PER_CHANNEL_AFFINE_FLOAT_QPARAMS,
}

def is_subclass(t: torch.Tensor) -> bool:
    return is_traceable_wrapper_subclass(t)


def quantization(t: torch.Tensor, add, path: str) -> Quantization:
    """The Quantization table of quantized `t`; per-channel scales and zero points go through `add`."""
    scheme = t.qscheme()
    q = QSCHEME_TO_SCHEMA.get(scheme)
    if q is None:
        raise ExportError("quantization scheme has no schema value", path=path,
                          expected=f"one of {sorted(str(s) for s in QSCHEME_TO_SCHEMA)}", got=str(scheme))
    if q == QScheme.PER_TENSOR_AFFINE:
        return Quantization(qscheme=q, scale=float(t.q_scale()), zero_point=int(t.q_zero_point()))
    return Quantization(qscheme=q, axis=int(t.q_per_channel_axis()),
                        scales=add(t.q_per_channel_scales(), f"{path}.q_per_channel_scales"),
                        zero_points=add(t.q_per_channel_zero_points(), f"{path}.q_per_channel_zero_points"))


def sparse_parts(t: torch.Tensor, add, path: str) -> tuple[list[TensorPart], bool]:
    """(parts, coalesced) of sparse `t`; components go through `add` first."""
    layout = t.layout
    if layout == torch.sparse_coo:
        # _indices/_values: the stored components, also of an uncoalesced tensor (indices() requires coalesced).
        comps = (t._indices(), t._values())
        coalesced = bool(t.is_coalesced())
    elif layout in (torch.sparse_csr, torch.sparse_bsr):
        comps = (t.crow_indices(), t.col_indices(), t.values())
        coalesced = False
    else:
        comps = (t.ccol_indices(), t.row_indices(), t.values())
        coalesced = False
    names = SPARSE_PARTS[layout]
    return [TensorPart(name=n, tensor=add(c, f"{path}.{n}")) for n, c in zip(names, comps)], coalesced


def subclass_parts(t: torch.Tensor, add, path: str) -> tuple[list[TensorPart], TensorSubclass]:
    """(parts, TensorSubclass) of a traceable wrapper subclass instance; inner tensors go through `add` first."""
    cls = type(t)
    fqn = class_fqn(cls)
    if "<locals>" in cls.__qualname__:
        raise ExportError("tensor subclass is defined inside a function; a loader could never find it", path=path,
                          expected="a module-level class", got=fqn)
    attrs, ctx = t.__tensor_flatten__()
    parts = []
    for a in attrs:
        if not isinstance(a, str):
            raise ExportError("__tensor_flatten__ returned a non-string attribute name", path=path, got=repr(a))
        inner = getattr(t, a)
        if not isinstance(inner, torch.Tensor):
            raise ExportError("inner attribute of a tensor subclass is not a tensor", path=f"{path}.{a}",
                              got=type(inner).__name__)
        parts.append(TensorPart(name=a, tensor=add(inner, f"{path}.{a}")))
    context = None if ctx is None else to_value(ctx, tensor_ref=None, path=f"{path}.context", objects=True)
    return parts, TensorSubclass(class_fqn=fqn, context=context)


def composite_layout(t: torch.Tensor) -> int:
    return LAYOUT_TO_SCHEMA[t.layout]
