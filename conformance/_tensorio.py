"""Write and read value trees (tensors, scalars, containers) as JSON plus raw bytes.

The runner hands inputs and expected outputs to the fresh loader process
through these files instead of pickle: a tree becomes a JSON document whose
tensor leaves point at `.bin` files holding the element bytes (little-endian,
C order), so any dtype torch has (float8, uint16, bits, sub-byte) round-trips
exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import os

import torch

_DTYPES = {str(v): v for v in vars(torch).values() if isinstance(v, torch.dtype)}


def dtype_from_str(name: str) -> torch.dtype:
    """`"torch.float32"` -> torch.float32."""
    return _DTYPES[name]


def composite_parts(t: torch.Tensor):
    """[(name, tensor)] components of a tensor that is not one strided view, else None.

    Sparse tensors give their index and value tensors, quantized ones their
    integer representation (a copy) and per-channel parameters, wrapper
    subclasses the inner tensors `__tensor_flatten__` names (which may be
    composite again). Comparing and restoring state goes through these.
    """
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        return [(a, getattr(t, a)) for a in attrs]
    if t.layout == torch.sparse_coo:
        return [("indices", t._indices()), ("values", t._values())]
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [("crow_indices", t.crow_indices()), ("col_indices", t.col_indices()), ("values", t.values())]
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [("ccol_indices", t.ccol_indices()), ("row_indices", t.row_indices()), ("values", t.values())]
    if t.is_quantized:
        if t.qscheme() == torch.per_tensor_affine:
            return [("int_repr", t.int_repr())]
        return [("int_repr", t.int_repr()), ("scales", t.q_per_channel_scales()),
                ("zero_points", t.q_per_channel_zero_points())]
    return None


def composite_info(t: torch.Tensor) -> dict:
    """What a composite tensor is besides its parts: layout, coalesced flag, quantization, class and context."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    info = {"layout": str(t.layout)}
    if is_traceable_wrapper_subclass(t):
        _, ctx = t.__tensor_flatten__()
        info["class"] = f"{type(t).__module__}.{type(t).__qualname__}"
        info["context"] = repr(ctx)
    elif t.layout == torch.sparse_coo:
        info["coalesced"] = bool(t.is_coalesced())
    elif t.is_quantized:
        info["qscheme"] = str(t.qscheme())
        if t.qscheme() == torch.per_tensor_affine:
            info["scale"] = float_to_json(float(t.q_scale()))
            info["zero_point"] = int(t.q_zero_point())
        else:
            info["axis"] = int(t.q_per_channel_axis())
    return info


def resolved(t: torch.Tensor) -> torch.Tensor:
    """`t` with its conjugate and negative bits applied (a copy only when one is set): the values
    it stands for, whose bytes can be read. The bits themselves are compared apart
    (`lazy_bits`), so a loader that resolves them early still differs."""
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t


def lazy_bits(t: torch.Tensor) -> dict:
    """{"is_conj": True} / {"is_neg": True} for a tensor whose conjugate or negative bit is set,
    else {}: the keys are absent for every other tensor, so its description is unchanged."""
    out = {}
    if t.is_conj():
        out["is_conj"] = True
    if t.is_neg():
        out["is_neg"] = True
    return out


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The element bytes of the values of `t` in C order (its strides do not matter, its conjugate
    and negative bits are applied); a meta tensor has none."""
    if t.numel() == 0 or t.device.type == "meta":
        return b""
    flat = resolved(t).reshape(-1)
    if flat.stride(0) != 1:  # a strided view (reshape keeps views of size-1 or dense-but-strided tensors)
        flat = torch.empty(flat.shape, dtype=flat.dtype).copy_(flat)
    return flat.view(torch.uint8).numpy().tobytes()


def tensor_digest(t: torch.Tensor) -> str:
    """sha256 of the element bytes; equal digests mean bit-identical tensors."""
    return hashlib.sha256(tensor_bytes(t)).hexdigest()


def tensor_from_bytes(data: bytes, dtype: torch.dtype, shape, stride=None) -> torch.Tensor:
    """Rebuild a tensor from C-order element bytes, with `stride` when it is dense."""
    shape = list(shape)
    if math.prod(shape) == 0:
        return torch.empty(shape, dtype=dtype) if stride is None else torch.empty_strided(shape, stride, dtype=dtype)
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)
    if stride is None or list(flat.stride()) == list(stride):
        return flat
    out = torch.empty_strided(shape, stride, dtype=dtype)
    out.copy_(flat)
    return out


def is_dense(t: torch.Tensor) -> bool:
    """True when the strides are a permutation of contiguous ones (no gaps, no overlap)."""
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def float_to_json(x: float) -> str:
    """Exact text for a float (hex keeps NaN/inf/-0.0 distinguishable)."""
    return float.hex(x)


class TreeWriter:
    """Encodes value trees into JSON, writing each tensor's bytes to `<dir>/<prefix>_<n>.bin`."""

    def __init__(self, directory: str, prefix: str):
        self.directory = directory
        self.prefix = prefix
        self.count = 0
        os.makedirs(directory, exist_ok=True)

    def encode(self, v):
        if isinstance(v, torch.Tensor):
            return {"T": self._tensor(v)}
        if v is None:
            return {"N": 0}
        if isinstance(v, bool):
            return {"b": v}
        if isinstance(v, int):
            return {"i": int(v)}
        if isinstance(v, float):
            return {"f": float_to_json(v)}
        if isinstance(v, str):
            return {"s": v}
        if isinstance(v, torch.dtype):
            return {"dtype": str(v)}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise TypeError(f"symbolic value {v!r} cannot be written as a concrete input")
        if isinstance(v, tuple):
            return {"U": [self.encode(x) for x in v]}
        if isinstance(v, list):
            return {"L": [self.encode(x) for x in v]}
        if isinstance(v, dict):
            return {"D": [[self.encode(k), self.encode(x)] for k, x in v.items()]}
        raise TypeError(f"cannot write a {type(v).__module__}.{type(v).__qualname__} leaf")

    def _tensor(self, t: torch.Tensor) -> dict:
        t = resolved(t)  # the bits are recorded by the callers that compare them (layouts, state)
        name = f"{self.prefix}_{self.count}.bin"
        self.count += 1
        with open(os.path.join(self.directory, name), "wb") as f:
            f.write(tensor_bytes(t))
        if t.device.type == "meta":  # no data: dtype, shape and strides are all there is to compare
            return {"file": name, "dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
                    "requires_grad": bool(t.requires_grad), "device": "meta"}
        dense = is_dense(t) if t.numel() else True
        return {"file": name, "dtype": str(t.dtype), "shape": list(t.shape),
                "stride": list(t.stride()) if dense else None, "requires_grad": bool(t.requires_grad)}


def decode(doc, directory: str):
    """Inverse of TreeWriter.encode: fresh tensors (never shared between calls)."""
    (tag, v), = doc.items()
    if tag == "T" and v.get("device") == "meta":
        t = torch.empty_strided(v["shape"], v["stride"], dtype=dtype_from_str(v["dtype"]), device="meta")
        return t.requires_grad_(True) if v.get("requires_grad") else t
    if tag == "T":
        with open(os.path.join(directory, v["file"]), "rb") as f:
            t = tensor_from_bytes(f.read(), dtype_from_str(v["dtype"]), v["shape"], v["stride"])
        if v.get("requires_grad"):
            t.requires_grad_(True)
        return t
    if tag == "N":
        return None
    if tag in ("b", "i", "s"):
        return v
    if tag == "f":
        return float.fromhex(v)
    if tag == "dtype":
        return dtype_from_str(v)
    if tag == "device":
        return torch.device(v)
    if tag == "U":
        return tuple(decode(x, directory) for x in v)
    if tag == "L":
        return [decode(x, directory) for x in v]
    if tag == "D":
        return {decode(k, directory): decode(x, directory) for k, x in v}
    raise ValueError(f"unknown tree tag {tag!r}")


def write_json(path: str, doc) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, sort_keys=True)


def read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
