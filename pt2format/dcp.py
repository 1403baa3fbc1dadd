"""`.pt2f` as a storage of `torch.distributed.checkpoint` (DCP): a `StorageReader` and a `StorageWriter`.

DCP plans which rank reads or writes which slice of which tensor, on any
world size and with resharding; these classes only move the bytes, as
torch's `HuggingFaceStorageReader`/`Writer` do for safetensors::

    import torch.distributed.checkpoint as dcp
    dcp.load(state_dict, storage_reader=pt2format.dcp.StorageReader("model.pt2f"))
    dcp.save(state_dict, storage_writer=pt2format.dcp.StorageWriter("out.pt2f", program=ep))

Reading: the checkpoint metadata (one chunk per tensor, its global shape and
dtype) is made from the file's own tensor table; each rank reads its
slices with `LazyFile.get_slice`, which touches only the pages holding
them, from the main file, a shard file or external safetensors data.

Writing: every rank writes its chunks straight into their place in shard
files next to the main file; the coordinator writes the main file last
(`pt2format._ranked_write`). With `program=` it holds that ExportedProgram
(for example one loaded with `load(..., weights=False)`), its state taken
from the checkpoint; without, it is a weights-only file (one weight set).

Errors are pt2format's typed errors. DCP collects each rank's exception and
raises a `CheckpointException` on every rank holding them
(`.failures[rank][0]`); `pt2format.load_module(..., device_mesh=...)`
re-raises the first one itself.
"""

from __future__ import annotations

import dataclasses
import os
import secrets

from pt2format._deps import require

require("torch", "pt2format.dcp")  # a MissingDependencyError with the command, not a bare ModuleNotFoundError

import torch  # noqa: E402
from torch.distributed.checkpoint import StorageReader as _DcpStorageReader  # noqa: E402
from torch.distributed.checkpoint import StorageWriter as _DcpStorageWriter  # noqa: E402
from torch.distributed.checkpoint.metadata import (  # noqa: E402
    ChunkStorageMetadata, Metadata, MetadataIndex, StorageMeta, TensorProperties, TensorStorageMetadata,
)
from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType  # noqa: E402
from torch.distributed.checkpoint.storage import WriteResult  # noqa: E402
from torch.futures import Future  # noqa: E402

from pt2format import _ranked_write  # noqa: E402
from pt2format._container.crc import crc32  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format._options import DCP_READER, DCP_WRITER  # noqa: E402
from pt2format.errors import ChecksumError, ExportError, LoadError  # noqa: E402

__all__ = ["StorageReader", "StorageWriter"]


def _done() -> Future:
    fut: Future = Future()
    fut.set_result(None)
    return fut


def _on_storage(row) -> bool:
    """A row that views its storage (composite rows have `storage` 0, unused)."""
    return row.subclass is None and row.layout == m.Layout.STRIDED


def _plain_row(row) -> bool:
    """A row DCP can read slices of: a strided view of a storage, not composite, not quantized."""
    return row.subclass is None and row.layout == m.Layout.STRIDED and row.quantization is None


@DCP_READER.configures
class StorageReader(_DcpStorageReader):
    """Reads a `.pt2f` file (single, sharded or on external safetensors data) for `dcp.load`.

    Args:
        path: the `.pt2f` file (also accepted as DCP's ``checkpoint_id``).

    Parameters, buffers and tensor constants are exposed under their state
    entry names. Rows that are no plain strided tensor (sparse, subclass,
    quantized) and meta-device state (no bytes in the file) are left out.
    """

    def __init__(self, path: str | os.PathLike[str], *, program, weight_set, verify_data, mmap):
        super().__init__()
        self.path = os.fspath(path)
        self.program = program
        self.weight_set = weight_set
        self.verify_data = verify_data
        self.mmap = mmap
        self._file = None
        self._names = None
        self._verified: set = set()
        self.load_id = None

    # -- DCP protocol ---------------------------------------------------------

    def reset(self, checkpoint_id=None) -> None:
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)
        self.close()
        self.load_id = secrets.token_hex(8)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        try:
            return os.path.isfile(checkpoint_id) and str(checkpoint_id).endswith(".pt2f")
        except TypeError:
            return False

    def read_metadata(self, *args, **kwargs) -> Metadata:
        from pt2format.loaders import dtype_from_schema

        f = self._open()
        tensors = f.package.tensors
        state: dict = {}
        storage_data: dict = {}
        for name, idx in self._entries().items():
            row = tensors[idx]
            size = torch.Size(row.sizes)
            zero = torch.Size([0] * len(size))
            dtype = dtype_from_schema(row.dtype, f"tensors[{idx}].dtype")
            state[name] = TensorStorageMetadata(properties=TensorProperties(dtype=dtype, requires_grad=row.requires_grad),
                                                size=size, chunks=[ChunkStorageMetadata(offsets=zero, sizes=size)])
            storage_data[MetadataIndex(fqn=name, offset=zero)] = name
        metadata = Metadata(state_dict_metadata=state, storage_data=storage_data)
        metadata.storage_meta = StorageMeta(checkpoint_id=self.path, load_id=self.load_id)
        return metadata

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args, **kwargs) -> None:
        self._open()

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def read_data(self, plan, planner) -> Future:
        from pt2format._open import TensorSlice

        f = self._open()
        entries = self._entries()
        for req in plan.items:
            name = req.storage_index.fqn
            if req.type != LoadItemType.TENSOR or name not in entries:
                raise LoadError("the checkpoint asks for an entry this file does not hold as a tensor", file=self.path,
                                path=repr(name))
            idx = entries[name]
            if self.verify_data:
                self._verify(idx, name)
            index = tuple(slice(o, o + n) for o, n in zip(req.storage_offsets, req.lengths))
            piece = TensorSlice(f, idx, name, "pt")[index]
            target = planner.resolve_tensor(req).detach()
            if target.size() != piece.size():
                raise LoadError("slice and destination differ in shape", file=self.path, path=repr(name),
                                expected=tuple(target.size()), got=tuple(piece.size()))
            target.copy_(piece)
            planner.commit_tensor(req, target)
        return _done()

    # -- helpers -----------------------------------------------------------------

    def _open(self):
        if self._file is None:
            import pt2format

            self._file = pt2format.open(self.path, mmap=self.mmap)
            self._file._advise_slices = True  # each rank reads its slices' pages, not its neighbours'
        return self._file

    def _entries(self) -> dict:
        """State entry name -> tensor row, for plain rows whose bytes are in the file."""
        if self._names is None:
            pkg = self._open().package
            if self.weight_set is not None:
                sets = [ws for ws in pkg.weight_sets if ws.name == self.weight_set]
                if not sets:
                    raise LoadError("no weight set of that name", file=self.path, path="weight_sets",
                                    expected=[ws.name for ws in pkg.weight_sets], got=self.weight_set)
                entries = sets[0].entries
            else:
                entries = self._file._entries(self.program)
            names = {}
            for e in entries:
                row = pkg.tensors[e.tensor]
                if _plain_row(row) and not pkg.storages[row.storage].meta_nbytes:
                    names.setdefault(e.name, e.tensor)
            self._names = names
        return self._names

    def _verify(self, idx: int, name: str) -> None:
        f = self._file
        sidx = f.package.tensors[idx].storage
        if sidx in self._verified:
            return
        st = f.package.storages[sidx]
        if st.checksum_kind == m.ChecksumKind.CRC32:
            got = crc32(f._file.storage_view(sidx))
            if got != st.checksum:
                raise ChecksumError("storage checksum mismatch", file=self.path, path=f"storages[{sidx}] ({name!r})",
                                    expected=f"0x{st.checksum:08x}", got=f"0x{got:08x}")
        self._verified.add(sidx)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None
        self._names = None
        self._verified = set()


@dataclasses.dataclass(frozen=True)
class _GlobalPlan:
    """What the coordinator tells every rank: the save's id, the shard file names and each tensor's place."""
    save_id: str
    names: tuple
    placements: dict


@DCP_WRITER.configures
class StorageWriter(_DcpStorageWriter):
    """Writes a `.pt2f` file from `dcp.save` on any number of ranks.

    Args:
        path: the main file to write (also accepted as DCP's ``checkpoint_id``);
            shard files go next to it, one per rank that writes most of some
            tensor.

    Non-tensor entries of the state dict (DCP's bytes items) are refused:
    a `.pt2f` holds tensors and programs, nothing pickled.
    """

    def __init__(self, path: str | os.PathLike[str], *, program, weight_set, encoding, fsync):
        super().__init__()
        self.path = os.fspath(path)
        self.program = program
        self.weight_set = weight_set
        self.encoding = encoding
        self.fsync = fsync
        self.is_coordinator = False
        self.save_id = None
        self._shared = None

    def reset(self, checkpoint_id=None) -> None:
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)
        self.save_id = secrets.token_hex(8)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        try:
            return str(os.fspath(checkpoint_id)).endswith(".pt2f")
        except TypeError:
            return False

    def storage_meta(self) -> StorageMeta | None:
        return StorageMeta(checkpoint_id=self.path, save_id=self.save_id)

    def set_up_storage_writer(self, is_coordinator: bool, *args, **kwargs) -> None:
        self.is_coordinator = is_coordinator

    def prepare_local_plan(self, plan):
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                raise ExportError("a .pt2f stores tensors only; this state dict entry is not a tensor",
                                  file=self.path, path=repr(item.index.fqn))
        return plan

    def prepare_global_plan(self, plans):
        sizes: dict = {}
        owners: dict = {}
        described: dict = {}
        for rank, plan in enumerate(plans):
            for item in plan.items:
                td = item.tensor_data
                itemsize = td.properties.dtype.itemsize
                nbytes = itemsize * _numel(td.size)
                fqn = item.index.fqn
                described[fqn] = (td.size, td.properties.dtype)
                if sizes.setdefault(fqn, nbytes) != nbytes:
                    raise ExportError("ranks disagree on a tensor's size", file=self.path, path=repr(fqn))
                counts = owners.setdefault(fqn, {})
                counts[rank] = counts.get(rank, 0) + itemsize * _numel(td.chunk.sizes)
        if self.program is not None:  # refuse a mismatch before any rank writes a byte
            _repoint(*_export(self.program), {fqn: _Described(size, dtype) for fqn, (size, dtype) in
                                              described.items()}, self.path)
        names, placements = _ranked_write.plan_files(sizes, owners, self.path)
        shared = self._shared = _GlobalPlan(self.save_id or secrets.token_hex(8), tuple(names), placements)
        return [dataclasses.replace(plan, storage_data=shared) for plan in plans]

    def write_data(self, plan, planner) -> Future:
        shared: _GlobalPlan = plan.storage_data
        directory = os.path.dirname(os.path.abspath(self.path))
        base = _ranked_write.data_start()
        fds: dict = {}
        results = []
        try:
            for item in plan.items:
                fqn = item.index.fqn
                td = item.tensor_data
                place = shared.placements[fqn]
                fd = fds.get(place.file)
                if fd is None:
                    name = shared.names[place.file]
                    tmp = _ranked_write.temp_name(directory, name, shared.save_id)
                    fd = fds[place.file] = _ranked_write.open_partial(tmp, os.path.join(directory, name))
                t = planner.resolve_data(item).detach().to("cpu").contiguous()
                runs = _ranked_write.chunk_runs(list(td.size), list(td.chunk.offsets), list(td.chunk.sizes),
                                                td.properties.dtype.itemsize)
                data = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
                written = _ranked_write.write_runs(fd, base, data, runs, place)
                results.append(WriteResult(index=item.index, size_in_bytes=len(data), storage_data=written))
            for fd in fds.values():
                if self.fsync:
                    os.fsync(fd)
        finally:
            for fd in fds.values():
                os.close(fd)
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata: Metadata, results) -> None:
        runs: dict = {}
        for per_rank in results:
            for r in per_rank:
                runs.setdefault(r.index.fqn, []).extend(r.storage_data)
        state = {fqn: md for fqn, md in metadata.state_dict_metadata.items() if isinstance(md, TensorStorageMetadata)}
        shared = self._shared  # the coordinator's own plan: prepare_global_plan ran in this process
        try:
            self._finish(state, runs, shared)
        except BaseException:
            directory = os.path.dirname(os.path.abspath(self.path))
            for name in shared.names:  # leave no partial shard behind
                try:
                    os.unlink(_ranked_write.temp_name(directory, name, shared.save_id))
                except FileNotFoundError:
                    pass
            raise

    def _finish(self, state, runs, shared) -> None:
        package, payloads, fqn_storage = self._package(state)
        written = set(fqn_storage.values())
        for row in package.tensors:  # rows built from meta placeholders: their bytes now exist, on the CPU
            if _on_storage(row) and row.storage in written:
                row.device = m.Device(type="cpu", index=-1)
        _ranked_write.finish_files(self.path, package, payloads, fqn_storage, shared.names, shared.placements, runs,
                                   shared.save_id, encoding=self.encoding, fsync=self.fsync)

    # -- helpers -----------------------------------------------------------------

    def _package(self, state: dict):
        """(package, payloads, fqn -> storage index) for the main file; rank-written storages have no payload."""
        if self.program is None:
            from pt2format.exporter import export_weights

            metas = {fqn: torch.empty(md.size, dtype=md.properties.dtype, device="meta") for fqn, md in state.items()}
            package, payloads = export_weights({self.weight_set: metas})
            rows = {e.name: e.tensor for e in package.weight_sets[0].entries}
            return package, list(payloads), {fqn: package.tensors[rows[fqn]].storage for fqn in state}
        package, payloads = _export(self.program)
        return (package, *_repoint(package, payloads, state, self.path))


@dataclasses.dataclass(frozen=True)
class _Described:
    """The two fields of DCP's TensorStorageMetadata that `_repoint` reads, from a plan's write items."""
    size: torch.Size
    dtype: torch.dtype

    @property
    def properties(self):
        return self


def _export(program):
    """(package, payloads as a list) of an ExportedProgram or dict of them."""
    from pt2format.exporter import export_package

    package, payloads = export_package(program)
    return package, list(payloads)


def _repoint(package, payloads: list, state: dict, path: str):
    """Give each checkpoint tensor's row a fresh contiguous storage; drop storages no row uses any more."""
    from pt2format.loaders import dtype_from_schema

    rows = {}
    for prog in package.programs:
        for e in prog.state:
            rows.setdefault(e.name, e.tensor)
    fqn_storage = {}
    for fqn, md in sorted(state.items()):
        idx = rows.get(fqn)
        if idx is None:
            raise ExportError("the checkpoint holds a tensor the program has no state entry for", file=path,
                              path=repr(fqn), expected=sorted(rows))
        row = package.tensors[idx]
        if list(row.sizes) != list(md.size) or dtype_from_schema(row.dtype) != md.properties.dtype:
            raise ExportError("checkpoint tensor differs from the program's state entry", file=path, path=repr(fqn),
                              expected=f"{list(row.sizes)} {dtype_from_schema(row.dtype)}",
                              got=f"{list(md.size)} {md.properties.dtype}")
        if not _plain_row(row):
            raise ExportError("the program's state entry is not a plain tensor", file=path, path=repr(fqn))
        row.storage = len(package.storages)
        row.storage_offset = 0
        row.strides = _contiguous_strides(row.sizes)
        package.storages.append(m.Storage(size=0))
        payloads.append(b"")
        fqn_storage[fqn] = row.storage
    used = set(fqn_storage.values())
    for row in package.tensors:
        if _on_storage(row):
            used.add(row.storage)
    keep = sorted(used)
    remap = {old: new for new, old in enumerate(keep)}
    package.storages = [package.storages[i] for i in keep]
    payloads = [payloads[i] for i in keep]
    for row in package.tensors:
        row.storage = remap[row.storage] if _on_storage(row) else 0
    return payloads, {fqn: remap[s] for fqn, s in fqn_storage.items()}


def _contiguous_strides(sizes) -> list:
    strides = []
    acc = 1
    for size in reversed(list(sizes)):
        strides.append(acc)
        acc *= max(size, 1)
    return strides[::-1]


def _numel(size) -> int:
    n = 1
    for s in size:
        n *= s
    return n
