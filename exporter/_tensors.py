"""Real tensors -> Package.tensors rows and deduplicated Package.storages with zero-copy payloads.

Each torch storage is written once: tensors are keyed by their untyped
storage (device, data pointer, byte size), so tied weights and views of one
buffer keep sharing a storage after load. Tensors loaded from one file by
separate loads share rows and storages again through their origins
(pt2format/vocab/origins.py). A payload is a memoryview of the storage's bytes; nothing is
copied here (CPU) and the writer streams it.
"""

from __future__ import annotations

import sys

import torch

from pt2format._generated.model import Storage, Tensor
from pt2format._container.header import FEATURE_COMPOSITE_TENSORS
from pt2format.errors import ExportError

from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE, device_to_schema
from pt2format.vocab.composite import SPARSE_PARTS
from pt2format.vocab.origins import origin_of
from . import _composite


_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)


def _storage_u8(storage: torch.UntypedStorage) -> torch.Tensor:
    """A zero-copy uint8 CPU tensor over a storage's bytes (a copy for other devices)."""
    if storage.device.type != "cpu":
        storage = storage.cpu()
    return torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))


def _is_fake(t: torch.Tensor) -> bool:
    """A FakeTensor (a program exported with fake weights): saved as torch.export.save saves it, with no
    bytes. Its storage is a meta storage, so it becomes a storage without data (`Storage.meta_nbytes`);
    its row is a meta tensor whose `fake_device` is the fake tensor's device, where loaders build zeros
    as torch.export.load does."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _bytes_view(u8: torch.Tensor) -> memoryview:
    return memoryview(u8.numpy()) if u8.numel() else memoryview(b"")


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
        self._storage_u8: list[torch.Tensor] = []  # per storage: its bytes, to compare same-origin storages
        self._row_index: dict[tuple, int] = {}  # (file, row) of loaded tensors -> index in self.tensors
        self._keep_alive: list = []  # ids stay unique while we hold the objects
        self.required_features = 0  # FEATURE_COMPOSITE_TENSORS once a sparse or subclass row is added

    def add(self, t: torch.Tensor, path: str = "tensor") -> int:
        """Index in Package.tensors of `t`, adding its row (and storage) on first sight."""
        idx = self._by_object.get(id(t))
        if idx is not None:
            return idx
        self._keep_alive.append(t)
        src = t
        if type(t) not in _PLAIN_TENSOR_TYPES and not _is_fake(t):
            if _composite.is_subclass(t):
                return self._composite_row(t, path)
            raise ExportError("tensor subclass is not a traceable wrapper subclass (no __tensor_flatten__)",
                              path=path, expected="torch.Tensor, Parameter or a traceable wrapper subclass",
                              got=f"{type(t).__module__}.{type(t).__qualname__}")
        if t.layout in SPARSE_PARTS:
            return self._composite_row(t, path)
        if t.layout != torch.strided or t.is_nested:
            raise ExportError("tensors of this layout cannot be saved", path=path,
                              expected="strided, a sparse layout, quantized or a wrapper subclass", got=str(t.layout))
        if t.dtype not in DTYPE_TO_SCALAR_TYPE:
            raise ExportError("dtype has no schema value", path=path, expected="a ScalarType", got=str(t.dtype))
        if t.is_conj() or t.is_neg():
            # The lazy conj/neg bits cannot be expressed as a view; store the resolved values.
            t = t.detach().resolve_conj().resolve_neg()
            self._keep_alive.append(t)
        org = origin_of(src) if src is t else None
        storage = t.untyped_storage()
        sidx = self._storage(storage, org)
        row = Tensor(
            storage=sidx,
            dtype=DTYPE_TO_SCALAR_TYPE[t.dtype],
            sizes=[int(s) for s in t.shape],
            strides=[int(s) for s in t.stride()],
            storage_offset=int(t.storage_offset()),
            requires_grad=bool(src.requires_grad),
            device=device_to_schema(t.device),
        )
        if _is_fake(t):
            row.device, row.fake_device = device_to_schema(torch.device("meta")), row.device
        if t.is_quantized:
            row.quantization = _composite.quantization(t, self.add, path)
        if storage.device.type == "meta":
            self._cover_meta_view(sidx, t)
        if org is not None:
            idx = self._row_index.get((org.file, org.row))
            if idx is not None and self.tensors[idx] == row:
                self._by_object[id(src)] = idx
                return idx
        idx = len(self.tensors)
        self.tensors.append(row)
        self._by_object[id(src)] = idx
        if org is not None:
            self._row_index.setdefault((org.file, org.row), idx)
        return idx

    def _composite_row(self, t: torch.Tensor, path: str) -> int:
        """A sparse or wrapper-subclass tensor: its components' rows first, then its own (see _composite.py)."""
        if _composite.is_subclass(t):
            parts, subclass = _composite.subclass_parts(t, self.add, path)
            row = Tensor(dtype=self._dtype(t, path), sizes=[int(s) for s in t.shape],
                         strides=[int(s) for s in t.stride()], storage_offset=int(t.storage_offset()),
                         requires_grad=bool(t.requires_grad), device=device_to_schema(t.device),
                         parts=parts, subclass=subclass)
        else:
            parts, coalesced = _composite.sparse_parts(t, self.add, path)
            row = Tensor(dtype=self._dtype(t, path), sizes=[int(s) for s in t.shape], strides=[],
                         requires_grad=bool(t.requires_grad), device=device_to_schema(t.device),
                         layout=_composite.composite_layout(t), parts=parts, coalesced=coalesced)
        self.required_features |= FEATURE_COMPOSITE_TENSORS
        idx = len(self.tensors)
        self.tensors.append(row)
        self._by_object[id(t)] = idx
        return idx

    @staticmethod
    def _dtype(t: torch.Tensor, path: str) -> int:
        if t.dtype not in DTYPE_TO_SCALAR_TYPE:
            raise ExportError("dtype has no schema value", path=path, expected="a ScalarType", got=str(t.dtype))
        return DTYPE_TO_SCALAR_TYPE[t.dtype]

    def _storage(self, storage: torch.UntypedStorage, org) -> int:
        """Index in Package.storages of `storage`, adding it on first sight."""
        device = str(storage.device)
        if storage.device.type == "meta":
            return self._meta_storage(storage)
        key = (device, storage.data_ptr(), storage.nbytes())
        sidx = self._storage_index.get(key)
        if sidx is not None:
            return sidx
        okey = None if org is None else ("file", device, org.file, org.storage)
        u8 = _storage_u8(storage)
        if okey is not None:
            # Another map of the same file storage: one storage again if the bytes still agree.
            cand = self._storage_index.get(okey)
            if cand is not None and self._storage_u8[cand].numel() == u8.numel() \
                    and torch.equal(self._storage_u8[cand], u8):
                self._storage_index[key] = cand
                return cand
        sidx = len(self.storages)
        payload = _bytes_view(u8)
        self.storages.append(Storage(size=payload.nbytes))
        self.payloads.append(payload)
        self._storage_u8.append(u8)
        self.total_bytes += payload.nbytes
        self._storage_index[key] = sidx
        if okey is not None:
            self._storage_index.setdefault(okey, sidx)
        return sidx

    def _cover_meta_view(self, sidx: int, t: torch.Tensor) -> None:
        """Grow a meta storage's recorded size to the extent of a view of it.

        A meta storage holds no bytes, and torch does not keep its size
        consistent with its views: `torch.export.load` gives a meta constant
        a storage sized for its elements but a nonzero storage offset. The
        file's rule (a view stays inside its storage) holds for the size
        recorded here, which is the least that covers every view."""
        if t.numel() == 0:
            return
        last = int(t.storage_offset()) + sum((int(n) - 1) * int(s) for n, s in zip(t.shape, t.stride()))
        need = (last + 1) * t.element_size()
        row = self.storages[sidx]
        if need > row.meta_nbytes:
            row.meta_nbytes = need

    def _meta_storage(self, storage: torch.UntypedStorage) -> int:
        """A meta-device storage: its size and no bytes (Storage.meta_nbytes). Meta storages have no
        data pointer, so views of one are told apart from another by the storage object itself."""
        key = ("meta", storage._cdata)
        sidx = self._storage_index.get(key)
        if sidx is not None:
            return sidx
        sidx = len(self.storages)
        self._keep_alive.append(storage)  # _cdata stays unique while the storage lives
        self.storages.append(Storage(size=0, meta_nbytes=int(storage.nbytes())))
        self.payloads.append(memoryview(b""))
        self._storage_u8.append(torch.empty(0, dtype=torch.uint8))
        self._storage_index[key] = sidx
        return sidx
