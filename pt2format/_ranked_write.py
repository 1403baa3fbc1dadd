"""Writing one `.pt2f` from several processes: where each tensor goes, each rank's byte runs, and the final files.

Used by `pt2format.dcp.StorageWriter`. A `.pt2f` storage is one contiguous
row-major tensor, so a tensor saved as chunks by several ranks (a DTensor's
shards) is still one storage: the coordinator plans, before any byte is
written, which shard file and which offset each tensor gets; each rank then
writes its chunk straight into place (a chunk of a row-major tensor is a set
of contiguous runs: one for a `Shard(0)` chunk, one per row for `Shard(1)`),
and returns the CRC-32 of each run. The coordinator combines those CRCs into
the storage and section checksums (`crc32_combine`, no byte read again),
writes the shard headers and the main file last. The result is an ordinary
file: any reader, in any language, at any world size, reads it.

Shard files are written under temporary names and renamed once complete, and
the main file is written atomically after them, as a one-process sharded save
does (`_shards`). No torch here: the torch side is `pt2format.dcp`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pt2format._container.align import DATA_ALIGNMENT
from pt2format._container.crc import crc32, crc32_combine, crc32_zeros
from pt2format._container.header import FEATURE_META_STORAGES, FEATURE_SHARD_FILES, NO_PACKAGE_ID, pack_header
from pt2format._container.page_cache import release_cache_of_replaced
from pt2format._container.writer import byte_view, layout_payloads, payload_checksums, put_in_place
from pt2format._generated import model as m
from pt2format.errors import ExportError


@dataclass(frozen=True)
class Placement:
    """Where the storage of one tensor goes: shard file `file` (0-based), byte `offset` in its DATA section."""
    file: int
    offset: int
    nbytes: int


def plan_files(tensors: dict, owners: dict, path: str) -> tuple:
    """(file names, fqn -> Placement): one shard file per rank that writes most of some tensor.

    `tensors` maps fqn -> nbytes; `owners` maps fqn -> {rank: bytes that rank
    writes}. A tensor goes to the file of the rank writing most of it, so
    replicated or whole tensors, which DCP has one rank write, stay in that
    rank's own file; evenly split tensors are spread so files are about the
    same size. The other ranks write their chunks of it into that file.
    """
    from pt2format._shards import shard_name

    by_rank: dict = {}
    load: dict = {}
    for fqn in sorted(tensors, key=lambda f: (-tensors[f], f)):  # largest first, then by name: deterministic
        counts = owners.get(fqn) or {0: 0}
        most = max(counts.values())
        # Among the ranks writing most of it, the one whose file is smallest so far (balances even shards).
        rank = min((r for r in counts if counts[r] == most), key=lambda r: (load.get(r, 0), r))
        load[rank] = load.get(rank, 0) + tensors[fqn]
        by_rank.setdefault(rank, []).append(fqn)
    for fqns in by_rank.values():
        fqns.sort()
    ranks = sorted(by_rank)
    names = [shard_name(path, k + 1, len(ranks)) for k in range(len(ranks))]
    placements = {}
    for k, rank in enumerate(ranks):
        fqns = by_rank[rank]
        layout = layout_payloads([tensors[f] for f in fqns], DATA_ALIGNMENT)
        for fqn, offset in zip(fqns, layout.offsets):
            placements[fqn] = Placement(k, offset, tensors[fqn])
    return names, placements


def chunk_runs(global_sizes, offsets, sizes, itemsize: int) -> list:
    """Byte (offset in the storage, length) of each contiguous run of a chunk of a row-major tensor, in chunk order.

    The chunk's own row-major bytes are these runs back to back.
    """
    n = len(global_sizes)
    if any(s == 0 for s in sizes):
        return []
    if n == 0:
        return [(0, itemsize)]
    strides = [1] * n
    for j in range(n - 2, -1, -1):
        strides[j] = strides[j + 1] * global_sizes[j + 1]
    k = max((j for j in range(n) if sizes[j] != global_sizes[j]), default=-1)
    if k < 0:
        total = strides[0] * global_sizes[0]
        return [(0, total * itemsize)]
    run = sizes[k] * strides[k]
    runs = []
    lead = [0] * k
    while True:
        elem = sum((offsets[j] + lead[j]) * strides[j] for j in range(k)) + offsets[k] * strides[k]
        runs.append((elem * itemsize, run * itemsize))
        j = k - 1
        while j >= 0:
            lead[j] += 1
            if lead[j] < sizes[j]:
                break
            lead[j] = 0
            j -= 1
        if j < 0:
            return runs


def temp_name(directory: str, name: str, save_id: str) -> str:
    """The name a shard file has while ranks write into it (renamed by `finish_files`)."""
    return os.path.join(directory, f".{name}.{save_id}.partial")


def open_partial(path: str, replaces: str | None = None) -> int:
    """A write descriptor on a partial shard of this save, shared by the ranks (so no O_EXCL).

    The name holds the save's random id, so nothing else has it; still, it
    is never followed through a symlink and must be a regular file. A rank
    about to write its chunks names the shard file this one will replace as
    `replaces`: its page cache is dropped first (`page_cache`), on the rank's
    own host, so the new bytes reuse that memory.
    """
    import stat

    if replaces is not None:
        release_cache_of_replaced(replaces)

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ExportError("a partial shard file is not a regular file", file=path)
    return fd


def data_start() -> int:
    """Offset of the DATA section in every shard file (fixed: the header has one section entry)."""
    from pt2format._container.align import align_up
    from pt2format._container.header import header_length

    return align_up(header_length(1), DATA_ALIGNMENT)


def write_runs(fd: int, base: int, data, runs, placement: Placement) -> list:
    """pwrite `data` (the chunk's row-major bytes) as `runs` into the storage at `placement`; (offset, length, CRC) each."""
    view = byte_view(data)
    out = []
    cursor = 0
    for offset, length in runs:
        piece = view[cursor:cursor + length]
        pos = base + placement.offset + offset
        done = 0
        while done < length:
            done += os.pwrite(fd, piece[done:], pos + done)
        out.append((offset, length, crc32(piece)))
        cursor += length
    if cursor != len(view):
        raise AssertionError(f"chunk has {len(view)} bytes, its runs cover {cursor}")
    return out


def storage_crc(fqn: str, runs, nbytes: int) -> int:
    """CRC-32 of a storage from the CRCs of its runs; ExportError when they do not tile it exactly."""
    crc = 0
    cursor = 0
    for offset, length, run_crc in sorted(runs):
        if offset != cursor:
            what = "overlap" if offset < cursor else "leave a gap"
            raise ExportError(f"the chunks saved for this tensor {what} at byte {min(offset, cursor)}",
                              path=repr(fqn), expected=f"chunks covering {nbytes} bytes once")
        crc = crc32_combine(crc, run_crc, length)
        cursor += length
    if cursor != nbytes:
        raise ExportError("the chunks saved for this tensor do not cover it", path=repr(fqn),
                          expected=f"{nbytes} bytes", got=cursor)
    return crc


def finish_files(path: str, package, payloads, fqn_storage: dict, names, placements: dict, runs: dict,
                 save_id: str, *, encoding: str, fsync: bool) -> None:
    """Checksums, shard headers and renames, then the main file: the last step of a multi-rank save (coordinator).

    `package` holds every storage; `fqn_storage` maps each rank-written
    tensor to its storage index, whose bytes are in shard file
    `placements[fqn].file`; the other storages' bytes are `payloads` (they
    go into the main file's DATA section).
    """
    from pt2format import _codecs, _shards
    from pt2format._generated.string_check import check_package as check_strings
    from pt2format._container.header import ENCODING_BY_NAME
    from pt2format._container.writer import build_header
    from pt2format._target import write_target
    from pt2format._validate import validate_package

    directory = os.path.dirname(os.path.abspath(path))
    check_strings(package)  # never write a string a reader would refuse (SPEC.md §9)
    storages = package.storages
    rank_written = {idx for idx in fqn_storage.values()}
    segments = []
    per_file = [[] for _ in names]
    for fqn, idx in fqn_storage.items():
        p = placements[fqn]
        st = storages[idx]
        st.meta_nbytes = 0
        st.segment = p.file
        st.offset = p.offset
        st.size = p.nbytes
        st.checksum_kind = m.ChecksumKind.CRC32
        st.checksum = storage_crc(fqn, runs.get(fqn, []), p.nbytes)
        per_file[p.file].append(idx)
    lengths = []
    section_crcs = []
    for k in range(len(names)):
        order = sorted(per_file[k], key=lambda i: storages[i].offset)
        section, cursor = 0, 0
        for i in order:
            st = storages[i]
            section = crc32_combine(crc32_zeros(st.offset - cursor, section), st.checksum, st.size)
            cursor = st.offset + st.size
        lengths.append(cursor)
        section_crcs.append(section)
        segments.append(m.Segment(file=k + 1, section=0))
    internal = [i for i in range(len(storages)) if i not in rank_written and not storages[i].meta_nbytes]
    views = {i: byte_view(payloads[i]) for i in internal}
    layout = data_crc = None
    if internal:
        layout = layout_payloads([len(views[i]) for i in internal], DATA_ALIGNMENT)
        crcs, data_crc = payload_checksums([views[i] for i in internal], layout)
        for k, i in enumerate(internal):
            st = storages[i]
            st.segment, st.offset, st.size = len(segments), layout.offsets[k], layout.sizes[k]
            st.checksum_kind, st.checksum = m.ChecksumKind.CRC32, crcs[k]
        segments.append(m.Segment(file=0, section=1))
    for st in storages:
        if st.meta_nbytes:
            st.segment, st.offset, st.size, st.checksum_kind, st.checksum = 0, 0, 0, m.ChecksumKind.NONE, 0
    shard_lengths = [data_start() + n for n in lengths]
    package.segments = segments
    package.external_files = []
    package.shard_files = [m.ShardFile(name=n, size=size, package_id=list(NO_PACKAGE_ID))
                           for n, size in zip(names, shard_lengths)]
    package.required_features &= ~(FEATURE_SHARD_FILES | FEATURE_META_STORAGES)
    if names:
        package.required_features |= FEATURE_SHARD_FILES
    if any(st.meta_nbytes for st in storages):
        package.required_features |= FEATURE_META_STORAGES
    validate_package(package, data_section_lengths={1: layout.length} if layout else {})
    program = _codecs.encode(package, encoding)
    package_id = _shards.derive_package_id(program, checksums=True)
    for shard in package.shard_files:
        shard.package_id = list(package_id)
    program = _codecs.encode(package, encoding)
    fv = package.format_version
    for k, name in enumerate(names):
        layout_k = _Layout(lengths[k])
        header = _shards.shard_header(format_version=(fv.major, fv.minor), required_features=package.required_features,
                                      layout=layout_k, data_crc=section_crcs[k], package_id=package_id)
        tmp = temp_name(directory, name, save_id)
        fd = open_partial(tmp)
        try:
            os.ftruncate(fd, shard_lengths[k])
            os.pwrite(fd, pack_header(header), 0)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        # The old shard is unlinked in the background, as a one-file save's is; the main file's write
        # below fsyncs the directory, which makes these renames durable too.
        put_in_place(tmp, os.path.join(directory, name), os.path.join(directory, f".{name}.{save_id}.old"),
                     fsync=False)
    header = build_header(format_version=(fv.major, fv.minor), required_features=package.required_features,
                          program_length=len(program), program_crc=crc32(program),
                          encoding=ENCODING_BY_NAME[encoding], data_layout=layout, data_crc=data_crc,
                          package_id=package_id)
    write_target(path, header, program, [views[i] for i in internal] if layout else (), layout, fsync=fsync,
                 progress_callback=None)


@dataclass(frozen=True)
class _Layout:
    """The one field of a DataLayout that `shard_header` reads."""
    length: int
