"""Splits a package's storages over shard files, derives the file identity, and writes/verifies in parallel.

A sharded save writes every shard first (each atomically: temp file, fsync,
rename) and the main file last, so the main file only ever names shards that
are complete. All files carry the same 16-byte package id in their header
(SPEC.md §2) and the main program records it per shard
(`ShardFile.package_id`), so a shard left from another save, with the same
name and even the same size, is refused when it is opened.

The id is derived from the content (SHA-256 of the program encoded with the
ids zeroed, which holds every storage's CRC-32), so the same program saved
twice still gives identical bytes; without data checksums the content is not
summarised anywhere and the id is random instead.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from concurrent.futures import ThreadPoolExecutor

from pt2format._container.align import DATA_ALIGNMENT, align_up
from pt2format._container.header import (
    PACKAGE_ID_SIZE, ChecksumKind, Header, SectionEncoding, SectionEntry, SectionKind, header_length,
)
from pt2format._container.writer import DataLayout, layout_payloads, payload_checksums, write_container

# Threads for shard I/O: CRC-32 (zlib) and os.write release the GIL, so shards overlap on separate cores/disks.
MAX_IO_THREADS = 4


def shard_name(path: str, index: int, count: int) -> str:
    """`model.pt2f` -> `model-00001-of-00004.pt2shard` (1-based), a plain name in the same directory."""
    stem = os.path.basename(path)
    if stem.endswith(".pt2f"):
        stem = stem[:-5]
    return f"{stem}-{index:05d}-of-{count:05d}.pt2shard"


def plan_shards(sizes, max_shard_size: int) -> list:
    """Storage indices per shard, in order: a shard takes storages until the next would pass `max_shard_size`.

    A storage larger than the limit gets a shard of its own (storages are never split).
    """
    if not isinstance(max_shard_size, int) or isinstance(max_shard_size, bool) or max_shard_size <= 0:
        raise ValueError(f"max_shard_size must be a positive number of bytes, got {max_shard_size!r}")
    groups = []
    current = []
    used = 0
    for i, size in enumerate(sizes):
        end = align_up(used, DATA_ALIGNMENT) + size if current else size
        if current and end > max_shard_size:
            groups.append(current)
            current, end = [], size
        current.append(i)
        used = end
    if current:
        groups.append(current)
    return groups


def parse_size(value) -> int:
    """`max_shard_size` as bytes: an int, or a string like "5GB", "500MB", "2GiB" (as Hugging Face accepts)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        units = (("KIB", 1 << 10), ("MIB", 1 << 20), ("GIB", 1 << 30), ("TIB", 1 << 40), ("KB", 10 ** 3),
                 ("MB", 10 ** 6), ("GB", 10 ** 9), ("TB", 10 ** 12), ("B", 1))
        for suffix, factor in units:
            if text.endswith(suffix) and text[:-len(suffix)].isdigit():
                return int(text[:-len(suffix)]) * factor
        if text.isdigit():
            return int(text)
    raise ValueError(f"max_shard_size must be a number of bytes or a string like '5GB', got {value!r}")


def shard_header(*, format_version, required_features: int, layout: DataLayout, data_crc, package_id: bytes) -> Header:
    """The header of a shard file: one DATA section (entry 0), no program."""
    offset = shard_file_length(layout) - layout.length
    kind = ChecksumKind.NONE if data_crc is None else ChecksumKind.CRC32
    entry = SectionEntry(SectionKind.DATA, SectionEncoding.RAW, DATA_ALIGNMENT, offset, layout.length, kind,
                         data_crc or 0)
    major, minor = format_version
    return Header(major, minor, required_features, shard_file_length(layout), (entry,), package_id=package_id)


def shard_file_length(layout: DataLayout) -> int:
    """Bytes of a shard file holding `layout`: header, one section entry, padding, data."""
    return align_up(header_length(1), DATA_ALIGNMENT) + layout.length


def shard_layouts(views, groups, *, checksums: bool):
    """Per shard: (layout, per-storage CRCs or None, section CRC or None), computed in parallel."""
    def one(group):
        layout = layout_payloads([len(views[i]) for i in group], DATA_ALIGNMENT)
        if not checksums:
            return layout, None, None
        crcs, section = payload_checksums([views[i] for i in group], layout)
        return layout, crcs, section
    return run_parallel(one, groups)


def derive_package_id(program_without_ids: bytes, *, checksums: bool) -> bytes:
    """16 bytes that identify this save: from the content when it is checksummed, else random."""
    if not checksums:
        return secrets.token_bytes(PACKAGE_ID_SIZE)
    return hashlib.sha256(b"pt2format package id\0" + bytes(program_without_ids)).digest()[:PACKAGE_ID_SIZE]


def write_shards(path: str, names, headers, views, groups, layouts, *, fsync: bool) -> None:
    """Write every shard file next to `path`, each atomically, several at a time."""
    directory = os.path.dirname(os.path.abspath(path))

    def one(k):
        group = groups[k]
        write_container(os.path.join(directory, names[k]), headers[k], b"", [views[i] for i in group], layouts[k],
                        fsync=fsync, progress_callback=None)
    run_parallel(one, range(len(groups)))


def run_parallel(fn, items) -> list:
    """`[fn(x) for x in items]` on up to MAX_IO_THREADS threads; the first exception propagates."""
    items = list(items)
    if len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(MAX_IO_THREADS, len(items))) as pool:
        return list(pool.map(fn, items))
