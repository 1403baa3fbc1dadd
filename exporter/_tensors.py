"""Real tensors -> Package.tensors rows and deduplicated Package.storages with zero-copy payloads.

Each torch storage is written once: tensors are keyed by their untyped
storage (device, data pointer, byte size), so tied weights and views of one
buffer keep sharing a storage after load. A payload is a memoryview of the
storage's bytes; nothing is copied here (CPU) and the writer streams it.
"""

from __future__ import annotations

import sys

import torch

from pt2format._generated.model import Storage, Tensor
from pt2format.errors import ExportError

from ._enums import DTYPE_TO_SCALAR_TYPE, device_to_schema

_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)


def _storage_bytes(storage: torch.UntypedStorage) -> memoryview:
    """A zero-copy byte view of a CPU storage (a copy for other devices)."""
    if storage.device.type != "cpu":
        storage = storage.cpu()
    n = storage.nbytes()
    if n == 0:
        return memoryview(b"")
    u8 = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (n,), (1,))
    return memoryview(u8.numpy())


class TensorTable:
    """Package-wide tensor and storage tables, shared by every program of a package."""

    def __init__(self):
        if sys.byteorder != "little":  # pragma: no cover - no big-endian CI
            raise ExportError("saving on a big-endian machine is not supported", expected="little", got=sys.byteorder)
        self.tensors: list[Tensor] = []
        self.storages: list[Storage] = []
        self.payloads: list[memoryview] = []
        self.total_bytes = 0
        self._by_object: dict[int, int] = {}
        self._storage_index: dict[tuple, int] = {}
        self._keep_alive: list = []  # ids stay unique while we hold the objects

    def add(self, t: torch.Tensor, path: str = "tensor") -> int:
        """Index in Package.tensors of `t`, adding its row (and storage) on first sight."""
        idx = self._by_object.get(id(t))
        if idx is not None:
            return idx
        self._keep_alive.append(t)
        src = t
        if type(t) not in _PLAIN_TENSOR_TYPES:
            raise ExportError("tensor subclasses cannot be saved", path=path, expected="torch.Tensor or Parameter",
                              got=f"{type(t).__module__}.{type(t).__qualname__}")
        if t.layout != torch.strided or t.is_quantized or t.is_nested:
            raise ExportError("only dense strided tensors have data in a file", path=path, expected="torch.strided",
                              got=str(t.layout))
        if t.device.type == "meta":
            raise ExportError("meta tensors have no data to save", path=path, expected="a device with data",
                              got="meta")
        if t.dtype not in DTYPE_TO_SCALAR_TYPE:
            raise ExportError("dtype has no schema value", path=path, expected="a ScalarType", got=str(t.dtype))
        if t.is_conj() or t.is_neg():
            # The lazy conj/neg bits cannot be expressed as a view; store the resolved values.
            t = t.detach().resolve_conj().resolve_neg()
            self._keep_alive.append(t)
        storage = t.untyped_storage()
        key = (str(storage.device), storage.data_ptr(), storage.nbytes())
        sidx = self._storage_index.get(key)
        if sidx is None:
            sidx = len(self.storages)
            payload = _storage_bytes(storage)
            self.storages.append(Storage(size=payload.nbytes))
            self.payloads.append(payload)
            self.total_bytes += payload.nbytes
            self._storage_index[key] = sidx
        row = Tensor(
            storage=sidx,
            dtype=DTYPE_TO_SCALAR_TYPE[t.dtype],
            sizes=[int(s) for s in t.shape],
            strides=[int(s) for s in t.stride()],
            storage_offset=int(t.storage_offset()),
            requires_grad=bool(src.requires_grad),
            device=device_to_schema(t.device),
        )
        idx = len(self.tensors)
        self.tensors.append(row)
        self._by_object[id(src)] = idx
        return idx
