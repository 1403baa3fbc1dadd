"""Every dtype export accepts, as state and as inputs/outputs, bit patterns included."""

from __future__ import annotations

import torch
import torch.nn as nn

from conformance.corpus._case import Program, case

#: Dtypes with a ScalarType in schema 1.0 that export accepts (quantized dtypes are rejected by export).
SCHEMA_DTYPES = (
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64,
    torch.complex32, torch.complex64, torch.complex128, torch.bool, torch.bfloat16, torch.uint16, torch.uint32,
    torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz,
    torch.float8_e8m0fnu, torch.float4_e2m1fn_x2, torch.bits8, torch.bits16,
)

#: Dtypes export accepts (a buffer returned as is) that schema 1.0 has no ScalarType for.
OTHER_DTYPES = (
    torch.bits1x8, torch.bits2x4, torch.bits4x2,
    torch.int1, torch.int2, torch.int3, torch.int4, torch.int5, torch.int6, torch.int7,
    torch.uint1, torch.uint2, torch.uint3, torch.uint4, torch.uint5, torch.uint6, torch.uint7,
)


def _pattern(dtype: torch.dtype, n: int = 6) -> torch.Tensor:
    """n elements whose bytes run through 0..255 (NaN, inf and subnormal patterns for float types)."""
    raw = (torch.arange(n * dtype.itemsize, dtype=torch.int64) * 37 % 256).to(torch.uint8)
    if dtype == torch.bool:
        return raw % 2 == 1
    return raw.view(dtype)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


class AllDtypes(nn.Module):
    def __init__(self, dtypes, returned_as_is: bool):
        super().__init__()
        self.names = []
        for dt in dtypes:
            self.register_buffer(f"b_{_name(dt)}", _pattern(dt))
            self.names.append(f"b_{_name(dt)}")
        self.returned_as_is = returned_as_is

    def forward(self, x):
        bufs = [getattr(self, n) for n in self.names]
        if self.returned_as_is:
            return (x + 1, *bufs)
        return (x + 1, *[b.clone() for b in bufs])


@case("dtypes_state", tags=("fast",))
def dtypes_state():
    """A buffer of every schema dtype (float8, uint16/32/64, bits, complex32 ...) filled with byte patterns."""
    return Program(AllDtypes(SCHEMA_DTYPES, returned_as_is=False), (torch.randn(2),))


@case("dtypes_sub_byte", tags=("full", "gap"))
def dtypes_sub_byte():
    """Sub-byte and bit dtypes (int1-7, uint1-7, bits1x8/2x4/4x2) that export accepts as buffers."""
    return Program(AllDtypes(OTHER_DTYPES, returned_as_is=True), (torch.randn(2),))


class DtypeIO(nn.Module):
    def forward(self, h, b, i8, u16, c64, f8, flag):
        return (h.float().sum() + b.float().sum() + i8.sum() + u16.to(torch.int64).sum(),
                c64 * 2, f8.to(torch.float32) * 2, flag & (i8 > 0), u16.clone())


@case("dtypes_io", tags=("fast",))
def dtypes_io():
    """Inputs and outputs of half, bfloat16, int8, uint16, complex64, float8 and bool dtypes."""
    return Program(DtypeIO(), (torch.randn(3).half(), torch.randn(3).bfloat16(), torch.tensor([1, -2, 3], dtype=torch.int8),
                               torch.tensor([1, 60000, 3], dtype=torch.uint16), torch.randn(3, dtype=torch.complex64),
                               torch.randn(3).to(torch.float8_e4m3fn), torch.tensor([True, False, True])))


class SpecialFloats(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("special", torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0,
                                                      5e-324, 1.7976931348623157e308], dtype=torch.float64))
        self.register_buffer("nan_payload", torch.tensor([0x7FC00001, 0xFFC12345, 0x7F800001],
                                                         dtype=torch.int64).to(torch.int32).view(torch.float32))

    def forward(self, x):
        return x * -0.0 + self.special.float().nan_to_num(0.0).sum(), self.special.clone(), self.nan_payload.clone()


@case("special_floats", tags=("fast",))
def special_floats():
    """NaN (with payloads), +-inf, -0.0, subnormal and max floats in state, plus -0.0 as an op argument."""
    return Program(SpecialFloats(), (torch.randn(3),))
