"""exporter/_tensors.py: tensors -> rows and deduplicated storages, as torch lays the tensors out in memory."""

from __future__ import annotations

import pytest
import torch

from pt2format.errors import ExportError
from pt2format.exporter._tensors import TensorTable
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE


def _bytes_of(storage_payload) -> bytes:
    return bytes(storage_payload)


def test_row_is_torchs_view_geometry_and_storage_holds_torchs_bytes():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = base[1:, ::2]
    table = TensorTable()
    i = table.add(view, "v")
    row = table.tensors[i]
    assert (list(row.sizes), list(row.strides), row.storage_offset) == \
           (list(view.shape), list(view.stride()), view.storage_offset())
    assert row.dtype == DTYPE_TO_SCALAR_TYPE[view.dtype]
    payload = table.payloads[row.storage]
    assert _bytes_of(payload) == bytes(base.untyped_storage())  # the whole storage, torch's bytes


def test_tied_tensors_and_views_share_one_storage():
    w = torch.nn.Parameter(torch.randn(3, 3))
    table = TensorTable()
    a, b, c = table.add(w, "a"), table.add(w, "b"), table.add(w.detach()[0], "c")
    assert a == b  # the same object: one row
    assert table.tensors[c].storage == table.tensors[a].storage  # a view: another row on the same storage
    assert len(table.storages) == 1
    other = table.add(torch.randn(3, 3), "d")
    assert table.tensors[other].storage != table.tensors[a].storage


def test_meta_tensor_row_has_no_bytes():
    t = torch.empty(5, 7, device="meta")
    table = TensorTable()
    row = table.tensors[table.add(t, "meta")]
    assert list(row.sizes) == [5, 7]
    assert table.storages[row.storage].size == 0 and table.storages[row.storage].meta_nbytes == t.untyped_storage().nbytes()


def test_conj_bit_is_resolved_as_torch_resolves_it():
    z = torch.tensor([1 + 2j, 3 - 4j]).conj()
    table = TensorTable()
    row = table.tensors[table.add(z, "z")]
    stored = torch.frombuffer(bytearray(table.payloads[row.storage]), dtype=z.dtype)
    assert torch.equal(stored, z.resolve_conj())


def test_nested_tensor_is_refused_by_path():
    nt = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(ExportError) as e:
        TensorTable().add(nt, "state_dict['x']")
    assert "state_dict['x']" in str(e.value)
