"""Mappings between torch's dtypes, layouts, memory formats, devices and the schema's enums.

Shared by the exporter and the loader so that both directions come from one
table: the schema numbers its enums itself (they are not torch's values).
"""

from __future__ import annotations

import types

import torch

from pt2format._generated import model as _m
from pt2format._generated.model import Device


def ints(enum_cls) -> types.SimpleNamespace:
    """An enum's members as plain ints: the model trees hold ints, never IntEnum members."""
    return types.SimpleNamespace(**{m.name: int(m.value) for m in enum_cls})


ScalarType = ints(_m.ScalarType)
Layout = ints(_m.Layout)
MemoryFormat = ints(_m.MemoryFormat)

DTYPE_TO_SCALAR_TYPE: dict[torch.dtype, int] = {
    torch.uint8: ScalarType.UINT8,
    torch.int8: ScalarType.INT8,
    torch.int16: ScalarType.INT16,
    torch.int32: ScalarType.INT32,
    torch.int64: ScalarType.INT64,
    torch.float16: ScalarType.FLOAT16,
    torch.float32: ScalarType.FLOAT32,
    torch.float64: ScalarType.FLOAT64,
    torch.complex32: ScalarType.COMPLEX32,
    torch.complex64: ScalarType.COMPLEX64,
    torch.complex128: ScalarType.COMPLEX128,
    torch.bool: ScalarType.BOOL,
    torch.bfloat16: ScalarType.BFLOAT16,
    torch.uint16: ScalarType.UINT16,
    torch.uint32: ScalarType.UINT32,
    torch.uint64: ScalarType.UINT64,
    torch.float8_e4m3fn: ScalarType.FLOAT8_E4M3FN,
    torch.float8_e5m2: ScalarType.FLOAT8_E5M2,
    torch.float8_e4m3fnuz: ScalarType.FLOAT8_E4M3FNUZ,
    torch.float8_e5m2fnuz: ScalarType.FLOAT8_E5M2FNUZ,
    torch.float8_e8m0fnu: ScalarType.FLOAT8_E8M0FNU,
    torch.float4_e2m1fn_x2: ScalarType.FLOAT4_E2M1FN_X2,
    torch.bits8: ScalarType.BITS8,
    torch.bits16: ScalarType.BITS16,
    torch.bits1x8: ScalarType.BITS1X8,
    torch.bits2x4: ScalarType.BITS2X4,
    torch.bits4x2: ScalarType.BITS4X2,
    **{getattr(torch, f"uint{k}"): getattr(ScalarType, f"UINT{k}") for k in range(1, 8)},
    **{getattr(torch, f"int{k}"): getattr(ScalarType, f"INT{k}") for k in range(1, 8)},
    torch.quint8: ScalarType.QUINT8,
    torch.qint8: ScalarType.QINT8,
    torch.qint32: ScalarType.QINT32,
}
SCALAR_TYPE_TO_DTYPE: dict[int, torch.dtype] = {int(v): k for k, v in DTYPE_TO_SCALAR_TYPE.items()}

LAYOUT_TO_SCHEMA: dict[torch.layout, int] = {
    torch.strided: Layout.STRIDED,
    torch.sparse_coo: Layout.SPARSE_COO,
    torch.sparse_csr: Layout.SPARSE_CSR,
    torch.sparse_csc: Layout.SPARSE_CSC,
    torch.sparse_bsr: Layout.SPARSE_BSR,
    torch.sparse_bsc: Layout.SPARSE_BSC,
    torch._mkldnn: Layout.MKLDNN,  # type: ignore[attr-defined]
}
SCHEMA_TO_LAYOUT: dict[int, torch.layout] = {int(v): k for k, v in LAYOUT_TO_SCHEMA.items()}

MEMORY_FORMAT_TO_SCHEMA: dict[torch.memory_format, int] = {
    torch.contiguous_format: MemoryFormat.CONTIGUOUS_FORMAT,
    torch.channels_last: MemoryFormat.CHANNELS_LAST,
    torch.channels_last_3d: MemoryFormat.CHANNELS_LAST_3D,
    torch.preserve_format: MemoryFormat.PRESERVE_FORMAT,
}
SCHEMA_TO_MEMORY_FORMAT: dict[int, torch.memory_format] = {int(v): k for k, v in MEMORY_FORMAT_TO_SCHEMA.items()}


def device_to_schema(device: torch.device) -> Device:
    """torch.device -> Device; a missing index is -1 as in c10."""
    return Device(type=device.type, index=-1 if device.index is None else device.index)
