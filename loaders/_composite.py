"""Tensor rows built from other rows (schema 1.1) -> quantized, sparse and wrapper-subclass tensors.

The inverse of exporter/_composite.py. Nothing is imported or unpickled:
- quantized: the integer view of the row's storage plus its scale and zero
  point (or per-channel rows) through torch's `_make_per_*_quantized_tensor`
  (which copies: quantized tensors cannot wrap foreign memory);
- sparse: the component rows through `torch.sparse_coo_tensor` /
  `torch.sparse_compressed_tensor` with `check_invariants=True`, so indices
  from a file can never point outside the tensor;
- subclasses: the class must be one the user trusts: passed in
  `allow_subclasses`, or on torch's safe-globals list
  (`torch.serialization.add_safe_globals`, the list
  `torch.load(weights_only=True)` trusts). Both are class objects, matched
  by qualified name: the loader never imports a module by name. Its
  `__tensor_unflatten__` gets the inner tensors and the saved context:
  plain values, and enum members, dataclasses and namedtuples of trusted
  classes only. A class not trusted is a LoadError naming it.
"""

from __future__ import annotations

import dataclasses
import enum

import torch

from pt2format._generated import model as _m
from pt2format.errors import LoadError

from pt2format.vocab.composite import SPARSE_PARTS, class_fqn
from pt2format.vocab.enums import SCHEMA_TO_LAYOUT

from ._values import from_value

_INT_REPR = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


def int_repr_dtype(dtype: torch.dtype) -> torch.dtype:
    """The integer dtype a quantized dtype's storage holds (the dtype itself for others)."""
    return _INT_REPR.get(dtype, dtype)


def _record_class(cls) -> bool:
    """A class whose instances may be rebuilt from the file: tensor subclass, enum, dataclass, namedtuple."""
    return isinstance(cls, type) and (issubclass(cls, (torch.Tensor, enum.Enum)) or dataclasses.is_dataclass(cls)
                                      or (issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)))


def allowed_classes(allow_subclasses) -> dict:
    """Qualified name -> class the user trusts: the caller's `allow_subclasses`, then torch's safe globals.

    The safe globals are read on every load, so `torch.serialization.safe_globals([...])` as a context
    manager works as it does for torch.load. Entries of that list that are not such classes (functions,
    other classes) are ignored; an `(obj, "name")` entry trusts `obj` under both names.
    """
    out = {}
    for entry in torch.serialization.get_safe_globals():
        obj, alias = entry if isinstance(entry, tuple) and len(entry) == 2 else (entry, None)
        if _record_class(obj):
            out.setdefault(class_fqn(obj), obj)
            if isinstance(alias, str):
                out.setdefault(alias, obj)
    for cls in allow_subclasses or ():
        if not _record_class(cls):
            raise TypeError("allow_subclasses takes classes (torch.Tensor subclasses, and the enums, dataclasses "
                            f"and namedtuples their flatten contexts hold), got {cls!r}")
        out[class_fqn(cls)] = cls
    return out


def quantize(int_t: torch.Tensor, dtype: torch.dtype, q, part, path: str) -> torch.Tensor:
    """A quantized tensor of `dtype` from its integer view and the row's Quantization table."""
    if q is None:
        raise LoadError("quantized tensor has no quantization parameters", path=f"{path}.quantization")
    if int_t.device.type == "meta":
        raise LoadError("quantized tensors cannot be built on the meta device (weights=False)", path=path,
                        expected="a device with data", got="meta")
    qs = _m.QScheme
    if q.qscheme == qs.PER_TENSOR_AFFINE:
        return torch._make_per_tensor_quantized_tensor(int_t, q.scale, q.zero_point)
    if q.qscheme not in (qs.PER_CHANNEL_AFFINE, qs.PER_CHANNEL_AFFINE_FLOAT_QPARAMS):
        raise LoadError("unknown quantization scheme", path=f"{path}.quantization.qscheme", got=q.qscheme)
    if not 0 <= q.axis < max(int_t.dim(), 1) or int_t.dim() == 0:
        raise LoadError("per-channel axis out of range", path=f"{path}.quantization.axis",
                        expected=f"0 <= axis < {int_t.dim()}", got=q.axis)
    scales = part(q.scales, f"{path}.quantization.scales")
    zps = part(q.zero_points, f"{path}.quantization.zero_points")
    n = int_t.shape[q.axis]
    for name, t in (("scales", scales), ("zero_points", zps)):
        # The kernels index these by channel: a short vector would be read past its end.
        if t.dim() != 1 or t.shape[0] != n or t.layout != torch.strided or t.is_quantized:
            raise LoadError(f"per-channel {name} must be a 1-D tensor with one entry per channel",
                            path=f"{path}.quantization.{name}", expected=f"shape ({n},)", got=tuple(t.shape))
    float_qparams = q.qscheme == qs.PER_CHANNEL_AFFINE_FLOAT_QPARAMS
    if zps.dtype.is_floating_point != float_qparams or not scales.dtype.is_floating_point:
        raise LoadError("per-channel scales must be floating and zero points match the scheme",
                        path=f"{path}.quantization", got=f"scales {scales.dtype}, zero_points {zps.dtype}")
    try:
        return torch._make_per_channel_quantized_tensor(int_t, scales, zps, q.axis)
    except RuntimeError as e:
        raise LoadError(f"per-channel quantized tensor cannot be rebuilt: {e}", path=path) from None


def _parts(row, part, path: str) -> dict:
    out = {}
    for j, p in enumerate(row.parts):
        out[p.name] = part(p.tensor, f"{path}.parts[{j}]")
    return out


def sparse(row, part, path: str) -> torch.Tensor:
    """A sparse tensor from the row's parts, its invariants checked by torch."""
    layout = SCHEMA_TO_LAYOUT.get(int(row.layout))
    names = SPARSE_PARTS.get(layout)
    if names is None:
        raise LoadError("tensor layout cannot be rebuilt", path=f"{path}.layout",
                        expected=f"one of {sorted(str(x) for x in SPARSE_PARTS)}", got=row.layout)
    parts = _parts(row, part, path)
    if sorted(parts) != sorted(names):
        raise LoadError(f"{layout} tensor needs exactly the parts {list(names)}", path=f"{path}.parts",
                        expected=list(names), got=sorted(parts))
    comps = [parts[n] for n in names]
    meta = any(c.device.type == "meta" for c in comps)
    size = [int(s) for s in row.sizes]
    try:
        if layout == torch.sparse_coo:
            t = torch.sparse_coo_tensor(*comps, size, is_coalesced=bool(row.coalesced) if not meta else None,
                                        check_invariants=not meta)
        else:
            t = torch.sparse_compressed_tensor(*comps, size, layout=layout, check_invariants=not meta)
    except (RuntimeError, ValueError, TypeError) as e:
        raise LoadError(f"sparse tensor parts are inconsistent: {e}", path=path) from None
    if row.requires_grad:
        t.requires_grad_(True)
    return t


def subclass(row, part, allowed: dict, path: str) -> torch.Tensor:
    """A wrapper-subclass tensor through its class's `__tensor_unflatten__`, if the caller allowed the class."""
    sc = row.subclass
    fqn = sc.class_fqn
    cls = allowed.get(fqn)
    if cls is None or not issubclass(cls, torch.Tensor):
        raise LoadError(f"tensor subclass {fqn} is not allowed: import it and pass the class in "
                        f"allow_subclasses=[...] or torch.serialization.add_safe_globals([...]) "
                        f"(or load with weights=False)", path=f"{path}.subclass.class_fqn",
                        expected="a class in allow_subclasses or torch.serialization.get_safe_globals()", got=fqn)
    ctx = None if sc.context is None else from_value(sc.context, tensor=None, path=f"{path}.subclass.context",
                                                     classes=allowed)
    inner = _parts(row, part, path)
    sizes = torch.Size(int(s) for s in row.sizes)
    strides = tuple(int(s) for s in row.strides)
    try:
        t = cls.__tensor_unflatten__(inner, ctx, sizes, strides)
    except Exception as e:  # the class's own code refusing what the file holds
        raise LoadError(f"tensor subclass {fqn} could not rebuild the saved tensor: {type(e).__name__}: {e}",
                        path=path) from None
    if type(t) is not cls:
        raise LoadError(f"{fqn}.__tensor_unflatten__ returned another type", path=path, expected=fqn,
                        got=class_fqn(type(t)))
    if list(t.shape) != list(sizes) or t.dtype != _dtype(row, path):
        raise LoadError(f"tensor subclass {fqn} rebuilt a tensor of another shape or dtype", path=path,
                        expected=f"{tuple(sizes)} {_dtype(row, path)}", got=f"{tuple(t.shape)} {t.dtype}")
    if row.requires_grad:
        t.requires_grad_(True)
    return t


def _dtype(row, path):
    from ._values import dtype_from_schema

    return dtype_from_schema(row.dtype, f"{path}.dtype")


def meta_stand_in(row, path: str) -> torch.Tensor:
    """weights=False and the subclass is not allowed: a plain meta tensor of the outer shape, dtype and strides."""
    return torch.empty_strided([int(s) for s in row.sizes], [int(s) for s in row.strides], dtype=_dtype(row, path),
                               device="meta")
