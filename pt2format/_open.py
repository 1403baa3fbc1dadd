"""`pt2format.open`: a lazy handle on a `.pt2f` file, in the style of safetensors' `safe_open`.

Opening decodes and validates the program section (the schema objects), maps
the data and builds nothing else: no torch program, no FX graph, no tensor
until one is asked for. `get_tensor` returns a zero-copy view of the mapped
bytes as a torch tensor (`framework="pt"`) or a numpy array (`"np"`), so
reading one weight out of a 10 GB file touches only that weight's pages.
`mmap=False` reads the file into memory instead (for files another process
may truncate; see SECURITY.md). Works without torch when `framework="np"`.

`get_slice(name)[...]` reads one slice of a tensor, as safetensors' does:
indexing the zero-copy view and copying the result touches only the pages
that hold the slice, whichever file (main, shard, external safetensors)
holds the storage. This is what a rank of a distributed load reads
(`pt2format.dcp`).
"""

from __future__ import annotations

from pt2format import _extras
from pt2format._api import read
from pt2format._external import SAFETENSORS_DTYPES
from pt2format._generated import model as m
from pt2format._options import OPEN

# numpy type strings (little-endian) for the dtypes numpy has; the rest need framework="pt".
_NUMPY_DTYPES = {
    m.ScalarType.UINT8: "u1", m.ScalarType.INT8: "i1", m.ScalarType.INT16: "<i2", m.ScalarType.INT32: "<i4",
    m.ScalarType.INT64: "<i8", m.ScalarType.FLOAT16: "<f2", m.ScalarType.FLOAT32: "<f4",
    m.ScalarType.FLOAT64: "<f8", m.ScalarType.COMPLEX64: "<c8", m.ScalarType.COMPLEX128: "<c16",
    m.ScalarType.BOOL: "?", m.ScalarType.UINT16: "<u2", m.ScalarType.UINT32: "<u4", m.ScalarType.UINT64: "<u8",
}
_FRAMEWORKS = ("pt", "np")
# ScalarType -> safetensors dtype name (what safetensors' get_dtype() returns).
_SAFETENSORS_NAMES = {getattr(m.ScalarType, v): k for k, v in SAFETENSORS_DTYPES.items()}


class LazyFile:
    """An open `.pt2f` file: programs, signatures, state names, tensors, metadata and extra files, on demand.

    Returned by `pt2format.open`; use it as a context manager. Tensors
    handed out stay valid after `close()` (they keep the map alive), but no
    new ones can be made. The schema objects (`package`, `program()`,
    `signature()`) are the classes of `pt2format.schema`.
    """

    @OPEN.check
    def __init__(self, source, *, framework, copy_on_write, verify_data, mmap, device, torch_state=None):
        # torch_state(package, storage_view) builds the tensors of framework="pt": pt2format.open passes
        # the loaders' StateLoader, so that this torch-free module never imports the torch side.
        _check_framework(framework)
        self._torch_state = torch_state
        self._framework = framework
        self._device = _check_device(device, framework)
        # Set by pt2format.dcp.StorageReader: slices read exactly their pages (see PackageFile.advise_ranges).
        self._advise_slices = False
        self._file = read(source, verify_data=verify_data, copy_on_write=copy_on_write, mmap=mmap)
        self._state_loader = None

    # -- what is in the file ------------------------------------------------

    @property
    def package(self) -> m.Package:
        """The decoded, validated `pt2format.schema.Package` tree (no torch objects)."""
        return self._file.package

    @property
    def path(self) -> str:
        """The file's path as given, or `<bytes>` / `<stream>` / the stream's name."""
        return self._file.path

    def programs(self) -> list[str]:
        """The names of the programs in the file, sorted."""
        return [p.name for p in self.package.programs]

    def program(self, name: str | None = None) -> m.Program:
        """The schema `Program` named `name` (default: the only one, or "forward"); nothing is built."""
        from pt2format._find import find_program

        return find_program(self.package, name)

    def signature(self, name: str | None = None) -> m.GraphSignature:
        """The graph signature (inputs and outputs by kind) of program `name`."""
        return self.program(name).signature

    def keys(self, program: str | None = None) -> list[str]:
        """Names of state entries (parameters, buffers, tensor constants): of one program, or of all, sorted."""
        return sorted({e.name for e in self._entries(program)})

    def _entries(self, program: str | None):
        """State entries of `program`, or of every program; a weights-only file's weight-set entries."""
        if program is not None:
            return self.program(program).state
        if self.package.programs:
            return [e for p in self.package.programs for e in p.state]
        return [e for ws in self.package.weight_sets for e in ws.entries]

    def _tensor_index(self, name: str, program: str | None) -> int:
        for e in self._entries(program):
            if e.name == name:
                return e.tensor
        raise KeyError(f"no state entry named {name!r}" + (f" in program {program!r}" if program else ""))

    # -- data -----------------------------------------------------------------

    def get_tensor(self, name: str, *, program: str | None = None, framework: str | None = None):
        """State entry `name` as a zero-copy tensor (`framework="pt"`) or numpy array (`"np"`).

        The view is read-only unless the file was opened with
        `copy_on_write=True` (then writes stay in memory). Names are looked
        up in `program`, or in every program (they share storages).
        """
        framework = self._framework if framework is None else framework
        _check_framework(framework)
        idx = self._tensor_index(name, program)
        if framework == "pt":
            t = self._torch_tensor(idx)
            return t if self._device is None else t.to(self._device)
        return self._numpy_array(idx, name)

    def get_slice(self, name: str, *, program: str | None = None, framework: str | None = None) -> TensorSlice:
        """State entry `name` as a `TensorSlice`: index it to read only that part (safetensors' `get_slice`).

        ::

            s = f.get_slice("lm_head.weight")
            s.get_shape(), s.get_dtype()      # [32000, 4096], "BF16"
            rows = s[0:512, :]                # a new tensor holding the slice only, on the handle's device
        """
        framework = self._framework if framework is None else framework
        _check_framework(framework)
        idx = self._tensor_index(name, program)
        return TensorSlice(self, idx, name, framework)

    def _torch_tensor(self, idx: int):
        if self._state_loader is None:
            if self._torch_state is None:
                raise TypeError("framework='pt' needs torch tensors: open the file with pt2format.open")
            self._state_loader = self._torch_state(self.package, self._file.storage_view)
        return self._state_loader.tensor(idx, f"tensors[{idx}]")

    def _numpy_array(self, idx: int, name: str):
        from pt2format._deps import require

        np = require("numpy", "pt2format.open(framework='np').get_tensor")

        row = self.package.tensors[idx]
        if row.subclass is not None or row.layout != m.Layout.STRIDED:
            # Its row is no view of a storage (validation checked only its parts): never map it.
            raise TypeError(f"state entry {name!r} is a {'tensor subclass' if row.subclass else 'sparse tensor'}, "
                            "which numpy lacks; use framework='pt'")
        code = _NUMPY_DTYPES.get(row.dtype)
        if code is None:
            raise TypeError(f"state entry {name!r} has dtype {m.ScalarType(row.dtype).name}, which numpy lacks; "
                            "use framework='pt'")
        dtype = np.dtype(code)
        view = self._file.storage_view(self.package.tensors[idx].storage)
        flat = np.frombuffer(view, dtype=np.uint8)
        # Validation proved the tensor lies inside its storage: sizes, strides and offset are in range.
        base = flat[row.storage_offset * dtype.itemsize:].view(dtype) if len(flat) else np.empty(0, dtype)
        if not row.sizes:
            return base[:1].reshape(())
        strides = tuple(s * dtype.itemsize for s in row.strides)
        return np.lib.stride_tricks.as_strided(base, shape=tuple(row.sizes), strides=strides,
                                               writeable=not view.readonly)

    def metadata(self) -> dict[str, str]:
        """The user metadata saved with `save(..., metadata=...)`, str -> str."""
        return _extras.metadata_dict(self.package)

    def extra_files(self) -> dict[str, bytes]:
        """The extra files saved with `save(..., extra_files=...)`, name -> bytes (copied out)."""
        return _extras.extra_files_dict(self._file)

    def extra_file(self, name: str) -> memoryview:
        """One extra file's bytes as a zero-copy, read-only view (KeyError if absent)."""
        return _extras.extra_file_view(self._file, name)

    # -- lifetime ---------------------------------------------------------------

    def close(self) -> None:
        """Release the file (maps stay alive while tensors or views handed out do)."""
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def __enter__(self) -> LazyFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LazyFile({self.path!r}, programs={self.programs()})"


class TensorSlice:
    """A tensor of the file not read yet; `slice[index]` copies out only the indexed part.

    Like safetensors' slice object: `get_shape()`, `get_dtype()` (safetensors'
    dtype names, e.g. "F32", "BF16"; ScalarType names for dtypes safetensors
    lacks) and basic indexing (ints, slices with step >= 1, `...`). The view of
    the mapped file is indexed first and the result copied, so only the pages
    holding the slice are read.
    """

    def __init__(self, file: LazyFile, idx: int, name: str, framework: str):
        self._file = file
        self._idx = idx
        self._name = name
        self._framework = framework
        self._row = file.package.tensors[idx]

    def get_shape(self) -> list:
        return list(self._row.sizes)

    def get_dtype(self) -> str:
        return _SAFETENSORS_NAMES.get(self._row.dtype) or m.ScalarType(self._row.dtype).name

    @property
    def shape(self) -> tuple:
        return tuple(self._row.sizes)

    def __len__(self) -> int:
        if not self._row.sizes:
            raise TypeError("len() of a 0-d tensor")
        return self._row.sizes[0]

    def __getitem__(self, index):
        _check_index(index, self._name)
        if self._framework == "np":
            import numpy as np

            return np.array(self._file._numpy_array(self._idx, self._name)[index], copy=True)
        import torch

        if self._file._advise_slices:
            self._file._file.advise_ranges(self._row.storage, self._byte_ranges(index))
        part = self._file._torch_tensor(self._idx)[index]
        device = self._file._device
        if device is not None and device.type != "cpu":
            return part.to(device)
        # A copy, not a view: the caller owns it, and only the slice's pages were touched.
        return part.clone(memory_format=torch.contiguous_format)

    def _byte_ranges(self, index) -> list:
        """(offset, length) in the storage of the bytes `self[index]` reads: its runs, or the whole tensor's extent."""
        from pt2format._generated.model import ITEMSIZE
        from pt2format._ranked_write import chunk_runs

        row = self._row
        itemsize = ITEMSIZE[row.dtype]
        sizes = list(row.sizes)
        whole = [(row.storage_offset * itemsize,
                  (1 + sum((n - 1) * s for n, s in zip(sizes, row.strides) if n)) * itemsize if all(sizes) else 0)]
        expected, acc = [], 1
        for n in reversed(sizes):
            expected.append(acc)
            acc *= n
        if list(row.strides) != expected[::-1] and acc > 1:
            return whole
        items = list(index) if isinstance(index, tuple) else [index]
        if None in items or items.count(Ellipsis) > 1:
            return whole
        if Ellipsis in items:
            k = items.index(Ellipsis)
            items[k:k + 1] = [slice(None)] * (len(sizes) - len(items) + 1)
        items += [slice(None)] * (len(sizes) - len(items))
        if len(items) != len(sizes):
            return whole
        offsets, counts = [], []
        for it, n in zip(items, sizes):
            if isinstance(it, int):
                i = it + n if it < 0 else it
                if not 0 <= i < n:
                    return whole
                offsets.append(i)
                counts.append(1)
            else:
                start, stop, step = it.indices(n)
                if step != 1:
                    return whole
                offsets.append(start)
                counts.append(max(0, stop - start))
        base = row.storage_offset * itemsize
        return [(base + o, n) for o, n in chunk_runs(sizes, offsets, counts, itemsize)]

    def __repr__(self) -> str:
        return f"TensorSlice({self._name!r}, shape={self.get_shape()}, dtype={self.get_dtype()!r})"


def _check_index(index, name: str) -> None:
    """Basic indexing only: a tensor or list index would gather arbitrary elements (and read them all)."""
    items = index if isinstance(index, tuple) else (index,)
    for it in items:
        if it is Ellipsis or it is None or isinstance(it, int) and not isinstance(it, bool):
            continue
        if isinstance(it, slice) and all(v is None or isinstance(v, int) and not isinstance(v, bool)
                                         for v in (it.start, it.stop, it.step)):
            if it.step is not None and it.step < 1:
                raise ValueError(f"get_slice({name!r}): slice step must be >= 1, got {it.step}")
            continue
        raise TypeError(f"get_slice({name!r}): index with ints, slices and ..., got {type(it).__name__}")


def _check_device(device, framework: str):
    if device is None:
        return None
    import torch

    device = torch.device(device)
    if framework == "np" and device.type != "cpu":
        raise ValueError(f"framework='np' gives numpy arrays, which live on the CPU; got device={device}")
    return device


def _check_framework(framework) -> None:
    if framework not in _FRAMEWORKS:
        raise ValueError(f"framework must be one of {_FRAMEWORKS} ('pt': torch, 'np': numpy), got {framework!r}")
