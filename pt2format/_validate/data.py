"""Tensors, storages, segments and shard files: indices, alignment, byte ranges, composite rows."""

from __future__ import annotations

from pt2format._generated import limits as _limits
from pt2format._container.align import DATA_ALIGNMENT
from pt2format._container.header import (
    FEATURE_COMPOSITE_TENSORS, FEATURE_EXTERNAL_FILES, FEATURE_META_STORAGES, FEATURE_SHARD_FILES, PACKAGE_ID_SIZE,
)
from pt2format._generated import model as m
from pt2format.errors import Pt2FormatError, SegmentError

from pt2format._validate._common import _fail, _wrap
from pt2format._validate.program import _Values

# Bytes per element, from the schema's pt2f_itemsize attribute (the C++ and TypeScript readers get the same table).
ITEMSIZE = m.ITEMSIZE


def check_shard_name(name) -> None:
    """A shard file name is a plain name in the same directory: no separators, no '..', no NUL."""
    if not isinstance(name, str) or not name or name == "." or ".." in name or any(
            c in name for c in "/\\\0"):
        raise _fail("shard file name must be a plain file name (no '/', '\\', '..' or NUL)", "name",
                    expected="plain file name", got=repr(name))


def _check_data(package, lengths) -> None:
    """Shard names, segments, storages and tensors: indices, alignment and byte ranges."""
    shards = package.shard_files
    for i, shard in enumerate(shards):  # names unique within each vector: pt2f_keys, generated
        try:
            check_shard_name(shard.name)
        except Pt2FormatError as e:
            raise _wrap(e, f"shard_files[{i}]")
        # Absent (no id recorded: the shard's header id must then equal the main file's) or exactly 16 bytes.
        if len(shard.package_id) not in (0, PACKAGE_ID_SIZE):
            raise _fail(f"shard package_id must be {PACKAGE_ID_SIZE} bytes", f"shard_files[{i}].package_id",
                        expected=f"0 or {PACKAGE_ID_SIZE}", got=len(shard.package_id))
    externals = package.external_files
    shard_names = {shard.name for shard in shards}
    for i, ext in enumerate(externals):
        try:
            check_shard_name(ext.name)
        except Pt2FormatError as e:
            raise _wrap(e, f"external_files[{i}]")
        if ext.name in shard_names:  # one directory holds both kinds of data file
            raise _fail("duplicate data file name", f"external_files[{i}].name", got=repr(ext.name))
    segments = package.segments
    for i, seg in enumerate(segments):
        if seg.external:
            if not package.required_features & FEATURE_EXTERNAL_FILES:
                raise _fail("segment in an external file but required_features lacks bit 1 (external files)",
                            f"segments[{i}].external", got=seg.external)
            if seg.file or seg.section:
                raise _fail("a segment in an external file has file and section 0", f"segments[{i}]",
                            expected="file 0, section 0", got=f"file {seg.file}, section {seg.section}")
            continue
        if seg.file > 0 and not package.required_features & FEATURE_SHARD_FILES:
            raise _fail("segment in a shard file but required_features lacks bit 0 (shard files)",
                        f"segments[{i}].file", got=seg.file)
        if seg.file == 0 and lengths is not None and seg.section not in lengths:
            raise SegmentError("segment does not name a DATA section of this file", path=f"segments[{i}].section",
                               expected=f"one of {sorted(lengths)}", got=seg.section)
    storages = package.storages
    for i, st in enumerate(storages):
        seg = segments[st.segment]
        if seg.external:
            ext = externals[seg.external - 1]
            if st.offset > ext.size or st.size > ext.size - st.offset:
                raise SegmentError("storage ends past its external file", path=f"storages[{i}]",
                                   expected=f"offset + size <= {ext.size}", got=st.offset + st.size)
        elif st.offset % DATA_ALIGNMENT:
            raise SegmentError(f"storage offset is not a multiple of {DATA_ALIGNMENT}", path=f"storages[{i}].offset",
                               expected=f"multiple of {DATA_ALIGNMENT}", got=st.offset)
        if st.meta_nbytes:
            if st.size:
                raise _fail("a storage without data (meta_nbytes) holds bytes", f"storages[{i}].size",
                            expected=0, got=st.size)
            if not package.required_features & FEATURE_META_STORAGES:
                raise _fail("storage without data but required_features lacks bit 2 (meta storages)",
                            f"storages[{i}].meta_nbytes", got=st.meta_nbytes)
        if seg.file == 0 and not seg.external and lengths is not None:
            limit = lengths[seg.section]
            if st.offset + st.size > limit:
                raise SegmentError("storage ends past its segment", path=f"storages[{i}]",
                                   expected=f"offset + size <= {limit}", got=st.offset + st.size)
    _check_no_overlap(storages, segments)
    n_storages = len(storages)
    nesting = [0] * len(package.tensors)
    for i, t in enumerate(package.tensors):
        try:
            if _check_composite(package, t, i, nesting):
                continue
            if t.storage >= n_storages:
                raise _fail("tensor storage index out of range", "storage", expected=f"< {n_storages}",
                            got=t.storage)
            need = tensor_nbytes(t.dtype, t.sizes, t.strides, t.storage_offset)
            st = storages[t.storage]
            size = st.size
            if st.meta_nbytes:
                if t.device is None or t.device.type != "meta":
                    raise _fail("a tensor on a storage without data must be on the meta device", "device",
                                expected="meta", got=None if t.device is None else t.device.type)
                size = st.meta_nbytes
            if need > size:
                raise _fail("tensor reaches past the end of its storage", None,
                            expected=f"<= {size} bytes", got=f"{need} bytes")
        except Pt2FormatError as e:
            raise _wrap(e, f"tensors[{i}]")


_QUANTIZED = frozenset({m.ScalarType.QUINT8, m.ScalarType.QINT8, m.ScalarType.QINT32})


#: How deeply rows built from other rows may nest (a subclass of a subclass of sparse ...): loaders
#: build parts recursively, so a file must not make them recurse without bound.
MAX_TENSOR_NESTING = _limits.MAX_TENSOR_NESTING


def _check_composite(package, t, i: int, nesting: list, max_depth: int = _limits.MAX_DEPTH) -> bool:
    """1.1 rows (quantized, sparse, subclass): their own invariants; True when the row has no storage view.

    Every index a row holds (parts, per-channel scales and zero points) is
    smaller than the row's own, so building rows in order never loops.
    """
    q = t.quantization
    if (t.dtype in _QUANTIZED) != (q is not None) and t.subclass is None:
        raise _fail("quantized dtypes, and only they, carry quantization parameters", "quantization",
                    expected="present" if t.dtype in _QUANTIZED else "absent",
                    got="absent" if q is None else "present")
    if q is not None and q.qscheme != m.QScheme.PER_TENSOR_AFFINE:
        for name in ("scales", "zero_points"):
            if getattr(q, name) >= i:
                raise _fail("per-channel parameters must refer to an earlier tensor row", f"quantization.{name}",
                            expected=f"< {i}", got=getattr(q, name))
            nesting[i] = max(nesting[i], nesting[getattr(q, name)] + 1)
        if nesting[i] > MAX_TENSOR_NESTING:
            raise _fail("tensor parts nest too deeply", "quantization", expected=f"<= {MAX_TENSOR_NESTING} levels",
                        got=nesting[i])
    composite = t.subclass is not None or t.layout != m.Layout.STRIDED
    if t.parts and not composite:
        raise _fail("only sparse and subclass tensors have parts", "parts", got=len(t.parts))
    if not composite:
        return False
    if not package.required_features & FEATURE_COMPOSITE_TENSORS:
        raise _fail("a sparse or subclass tensor needs required_features bit 3", "required_features",
                    expected=f"bit 0x{FEATURE_COMPOSITE_TENSORS:x} set", got=f"0x{package.required_features:x}")
    if t.subclass is not None and t.subclass.context is not None:
        try:
            _Values(0, max_depth).check(t.subclass.context, 0, objects=True)  # 0 tensors: no references
        except Pt2FormatError as e:
            raise _wrap(e, "subclass.context")
    for j, part in enumerate(t.parts):  # names unique: pt2f_keys, generated
        if part.tensor >= i:
            raise _fail("a part must refer to an earlier tensor row", f"parts[{j}].tensor", expected=f"< {i}",
                        got=part.tensor)
        nesting[i] = max(nesting[i], nesting[part.tensor] + 1)
    if nesting[i] > MAX_TENSOR_NESTING:
        raise _fail("tensor parts nest too deeply", "parts", expected=f"<= {MAX_TENSOR_NESTING} levels",
                    got=nesting[i])
    return True


def _check_no_overlap(storages, segments) -> None:
    """Storages never share bytes (SPEC.md §5): aliasing tensors share one storage instead.

    Two overlapping storages would let writing one state entry change another
    behind the program's back, with every checksum still valid.
    """
    by_segment: dict = {}
    for i, st in enumerate(storages):
        if st.size:
            by_segment.setdefault(st.segment, []).append((st.offset, st.offset + st.size, i))
    for ranges in by_segment.values():
        ranges.sort()
        for (a0, a1, ai), (b0, b1, bi) in zip(ranges, ranges[1:]):
            if b0 < a1:
                raise SegmentError("storages overlap; tensors that alias must share one storage",
                                   path=f"storages[{bi}]", expected=f"offset >= {a1} (end of storages[{ai}])",
                                   got=b0)


def tensor_nbytes(dtype: int, sizes, strides, storage_offset: int) -> int:
    """Bytes of storage a strided tensor can reach, from byte 0 of its storage; 0 when it has no elements."""
    itemsize = ITEMSIZE.get(dtype)
    if itemsize is None:
        raise _fail("dtype is unspecified or unknown", "dtype", got=dtype)
    if len(sizes) != len(strides):
        raise _fail("sizes and strides differ in length", "strides", expected=len(sizes), got=len(strides))
    if storage_offset < 0:
        raise _fail("negative storage_offset", "storage_offset", got=storage_offset)
    last = storage_offset
    for d, (size, stride) in enumerate(zip(sizes, strides)):
        if size < 0:
            raise _fail("negative size", f"sizes[{d}]", got=size)
        if stride < 0:
            raise _fail("negative stride", f"strides[{d}]", got=stride)
        if size == 0:
            return 0
        last += (size - 1) * stride
    return (last + 1) * itemsize
