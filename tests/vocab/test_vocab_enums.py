"""pt2format.vocab.enums: torch's dtypes, layouts, memory formats and devices <-> the schema's enums.

Checked against torch itself: every value torch's own export serializer
knows has a schema value and comes back as the same torch object, and the
element size the schema declares for each dtype is torch's.
"""

from __future__ import annotations

import pytest
import torch
from torch._export.serde import serialize as torch_serde

from pt2format._generated import model as m
from pt2format.vocab import enums


@pytest.mark.parametrize("dtype", list(torch_serde._TORCH_TO_SERIALIZE_DTYPE), ids=str)
def test_every_dtype_torch_serializes_round_trips(dtype):
    code = enums.DTYPE_TO_SCALAR_TYPE[dtype]
    assert enums.SCALAR_TYPE_TO_DTYPE[code] is dtype


@pytest.mark.parametrize("dtype", list(enums.DTYPE_TO_SCALAR_TYPE), ids=str)
def test_schema_element_size_is_torchs(dtype):
    # The schema's pt2f_itemsize (what every reader uses to find a tensor's bytes) is torch's element size.
    assert m.ITEMSIZE[enums.DTYPE_TO_SCALAR_TYPE[dtype]] == torch.empty(0, dtype=dtype).element_size()


def test_mapping_is_one_to_one():
    assert len(set(enums.DTYPE_TO_SCALAR_TYPE.values())) == len(enums.DTYPE_TO_SCALAR_TYPE)
    assert 0 not in enums.DTYPE_TO_SCALAR_TYPE.values()  # UNSPECIFIED is never written


@pytest.mark.parametrize("torch_map, ours, back", [
    (torch_serde._TORCH_TO_SERIALIZE_LAYOUT, enums.LAYOUT_TO_SCHEMA, enums.SCHEMA_TO_LAYOUT),
    (torch_serde._TORCH_TO_SERIALIZE_MEMORY_FORMAT, enums.MEMORY_FORMAT_TO_SCHEMA, enums.SCHEMA_TO_MEMORY_FORMAT),
], ids=["layout", "memory_format"])
def test_layouts_and_memory_formats_cover_torchs(torch_map, ours, back):
    assert set(torch_map) == set(ours)
    for value in torch_map:
        assert back[ours[value]] is value


@pytest.mark.parametrize("spec", ["cpu", "cuda:1", "meta", "cpu:0"])
def test_device_index_as_in_c10(spec):
    device = torch.device(spec)
    d = enums.device_to_schema(device)
    assert d.type == device.type
    assert d.index == (-1 if device.index is None else device.index)


def test_ints_gives_plain_ints():
    ns = enums.ints(m.ScalarType)
    assert type(ns.FLOAT32) is int and ns.FLOAT32 == int(m.ScalarType.FLOAT32)
