"""Package.tensors / storages -> torch tensors over the mapped file (zero-copy), on meta, or copied.

One torch storage per file storage, built with torch.frombuffer on the
storage's memoryview; every tensor row is a `set_` view of it, so tensors
that shared a storage when saved (tied weights, views) share one again.
`weights=False` builds meta-device storages of the right sizes instead and
reads no data; `copy=True` copies each storage once into owned memory.
"""

from __future__ import annotations

import threading
import warnings

import torch

from pt2format._generated.model import StateKind
from pt2format.errors import LoadError

from pt2format.vocab.origins import remember

from pt2format._generated.model import Layout
from pt2format._options import LOAD

from . import _composite
from ._names import check_fqn
from ._values import device_from_schema, dtype_from_schema

STRIDED = int(Layout.STRIDED)


def _map_device(map_location, device: torch.device) -> torch.device:
    if map_location is None or callable(map_location):
        return device  # a callable is applied to each storage (see StateLoader._storage)
    if isinstance(map_location, (str, torch.device)):
        return torch.device(map_location)
    if isinstance(map_location, dict):
        target = map_location.get(str(device), map_location.get(device.type))
        return device if target is None else torch.device(target)
    raise TypeError("map_location must be None, a str, a torch.device, a dict of device strings or a callable")


class StateLoader:
    """Builds the tensors of a package on demand; one tensor object per Package.tensors row."""

    @LOAD.lends("map_location", "weights", "copy", "allow_subclasses")
    def __init__(self, package, storage_view, *, map_location, weights: bool, copy: bool,
                 file_key: tuple | None = None, allow_subclasses):
        self.package = package
        self.allowed = _composite.allowed_classes(allow_subclasses)
        self.file_key = file_key if weights else None  # see pt2format.vocab.origins
        self.storage_view = storage_view
        self.map_location = map_location
        self.weights = weights
        self.copy = copy
        self._storages: dict[tuple, torch.UntypedStorage] = {}
        self._tensors: dict[int, torch.Tensor] = {}
        self._lock = threading.Lock()

    def _storage(self, idx: int, device: torch.device, path: str, zeros: bool = False) -> torch.UntypedStorage:
        key = (idx, str(device))
        st = self._storages.get(key)
        if st is not None:
            return st
        storages = self.package.storages
        if not 0 <= idx < len(storages):
            raise LoadError("storage index out of range", path=path, expected=f"< {len(storages)}", got=idx)
        size = storages[idx].size
        meta_nbytes = storages[idx].meta_nbytes
        if meta_nbytes and zeros and device.type != "meta":
            # A fake tensor's storage (Tensor.fake_device, weights of a program exported under
            # FakeTensorMode): torch.export.save writes no bytes for it, torch.export.load gives zeros.
            st = torch.zeros(meta_nbytes, dtype=torch.uint8, device=device).untyped_storage()
            self._storages[key] = st
            return st
        if meta_nbytes and device.type != "meta":
            # A storage without data (meta-device state) stays on meta, whatever map_location says.
            device = torch.device("meta")
            key = (idx, "meta")
            st = self._storages.get(key)
            if st is not None:
                return st
        if not self.weights or device.type == "meta":
            st = torch.empty(max(size, meta_nbytes), dtype=torch.uint8, device="meta").untyped_storage()
        else:
            view = self.storage_view(idx)
            if view.nbytes != size:
                raise LoadError("storage view has the wrong size", path=path, expected=size, got=view.nbytes)
            if size == 0:
                u8 = torch.empty(0, dtype=torch.uint8)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # read-only maps: torch warns, tensors stay usable for reads
                    u8 = torch.frombuffer(view, dtype=torch.uint8)
                if self.copy:
                    u8 = u8.clone()
            if device.type != "cpu":
                u8 = u8.to(device)
            st = u8.untyped_storage()
            if callable(self.map_location):
                # torch.load's protocol: f(storage, location) returns the storage to use (None: keep it).
                mapped = self.map_location(st, str(device))
                if mapped is not None:
                    if not isinstance(mapped, torch.UntypedStorage) or mapped.nbytes() != st.nbytes():
                        raise LoadError("map_location callable must return an UntypedStorage of the same size",
                                        path=path, got=type(mapped).__name__)
                    st = mapped
        self._storages[key] = st
        return st

    def tensor(self, idx: int, path: str = "tensor") -> torch.Tensor:
        t = self._tensors.get(idx)
        if t is not None:
            return t
        with self._lock:
            t = self._tensors.get(idx)
            if t is None:
                t = self._tensors[idx] = self._build(idx, path)
        return t

    def _build(self, idx: int, path: str) -> torch.Tensor:
        rows = self.package.tensors
        if not 0 <= idx < len(rows):
            raise LoadError("tensor index out of range", path=path, expected=f"< {len(rows)}", got=idx)
        row = rows[idx]
        p = f"tensors[{idx}]"
        if row.subclass is not None or row.layout != STRIDED:
            return self._composite(idx, row, p)
        dtype = dtype_from_schema(row.dtype, f"{p}.dtype")
        qdtype = dtype
        dtype = _composite.int_repr_dtype(dtype)
        if row.fake_device is not None and (row.device is None or row.device.type != "meta"
                                            or not 0 <= row.storage < len(self.package.storages)
                                            or not self.package.storages[row.storage].meta_nbytes):
            raise LoadError("fake_device is set on a tensor that is not a meta tensor on a storage without data",
                            path=f"{p}.fake_device", expected="device meta and Storage.meta_nbytes > 0")
        fake = row.fake_device is not None and self.weights
        saved = device_from_schema(row.fake_device if fake else row.device, f"{p}.fake_device" if fake else f"{p}.device")
        device = _map_device(self.map_location, saved)
        if len(row.sizes) != len(row.strides):
            raise LoadError("sizes and strides differ in length", path=p, expected=len(row.sizes), got=len(row.strides))
        if any(s < 0 for s in row.sizes) or any(s < 0 for s in row.strides) or row.storage_offset < 0:
            raise LoadError("negative size, stride or offset", path=p)
        st = self._storage(row.storage, device, f"{p}.storage", zeros=fake)
        try:
            t = torch.empty(0, dtype=dtype, device=st.device).set_(st, row.storage_offset, row.sizes, row.strides)
        except RuntimeError as e:
            raise LoadError(f"tensor does not fit its storage: {e}", path=p) from None
        if qdtype is not dtype or row.quantization is not None:
            if qdtype is dtype:
                raise LoadError("quantization parameters on a dtype that is not quantized", path=f"{p}.quantization",
                                got=str(dtype))
            t = _composite.quantize(t, qdtype, row.quantization, self._part_of(idx), p)
        if row.requires_grad:
            t.requires_grad_(True)
        self.remember(t, idx)
        return t

    def _part_of(self, owner: int):
        """tensor(i) for the rows `owner` is built from; only earlier rows, so building never loops."""
        def part(i: int, path: str) -> torch.Tensor:
            if not 0 <= i < owner:
                raise LoadError("a tensor part must refer to an earlier tensor row", path=path,
                                expected=f"< {owner}", got=i)
            return self._build_or_cached(i, path)
        return part

    def _build_or_cached(self, i: int, path: str) -> torch.Tensor:
        # Called with self._lock held (from _build): no second acquire.
        t = self._tensors.get(i)
        if t is None:
            t = self._tensors[i] = self._build(i, path)
        return t

    def _composite(self, idx: int, row, p: str) -> torch.Tensor:
        """A sparse or wrapper-subclass row (schema 1.1), built from earlier rows (see _composite.py)."""
        part = self._part_of(idx)
        if row.subclass is None:
            return _composite.sparse(row, part, p)
        if row.subclass.class_fqn not in self.allowed and not self.weights:
            return _composite.meta_stand_in(row, p)
        return _composite.subclass(row, part, self.allowed, p)

    def remember(self, t: torch.Tensor, idx: int) -> None:
        """Record that `t` holds row `idx` of this file, for re-saves (see pt2format.vocab.origins)."""
        row = self.package.tensors[idx]
        if row.subclass is not None or row.layout != STRIDED:
            return  # no storage of its own; its parts are remembered
        if self.file_key is not None and t.device.type != "meta":
            remember(t, self.file_key, idx, self.package.tensors[idx].storage)


def program_state(prog, state: StateLoader) -> tuple[dict, dict]:
    """(state_dict, constants) of `prog`: Parameters (one per tensor row, so ties stay ties), buffers,
    and non-persistent buffers, tensor constants and custom objects in `constants`."""
    state_dict: dict = {}
    constants: dict = {}
    params: dict[int, torch.nn.Parameter] = {}
    for i, e in enumerate(prog.state):
        p = f"state[{i}]"
        fqn = check_fqn(e.name, f"{p}.name")
        t = state.tensor(e.tensor, f"{p}.tensor")
        if e.kind == StateKind.PARAMETER:
            param = params.get(e.tensor)
            if param is None:
                param = params[e.tensor] = torch.nn.Parameter(t, requires_grad=t.requires_grad)
                state.remember(param, e.tensor)
            state_dict[fqn] = param
        elif e.kind == StateKind.BUFFER:
            state_dict[fqn] = t
        elif e.kind in (StateKind.NON_PERSISTENT_BUFFER, StateKind.TENSOR_CONSTANT):
            constants[fqn] = t
        else:
            raise LoadError("unknown state kind", path=f"{p}.kind", got=e.kind)
    for i, c in enumerate(prog.custom_objects):
        fqn = check_fqn(c.name, f"custom_objects[{i}].name")
        from ._custom_objects import rebuild_custom_object

        constants[fqn] = rebuild_custom_object(c, state.tensor, f"custom_objects[{i}]")
    return state_dict, constants
