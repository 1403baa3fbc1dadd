"""Reads and writes whole `.pt2f` files without torch: `read`, `write_package`, `validate`, `convert`.

`read` maps the file, checks header and program checksum, decodes the program
with the codec its section names, and always validates the tree; data stays in
the map and is handed out as zero-copy memoryviews; shard and external files
are opened when first needed (several at a time by `open_all_shards` and
`verify_data`). `write_package` lays the storages out in one DATA section (or
in shard files, or points them into external files: `_shards`, `_external`),
fills in where each one lives, and streams everything to the file atomically.
"""

from __future__ import annotations

import os
import threading

from pt2format import FORMAT_VERSION, _codecs, _content_minor, _options
from pt2format._container.align import DATA_ALIGNMENT
from pt2format._container.crc import crc32, crc32_combine
from pt2format._container.header import (
    ENCODING_BY_NAME, ENCODING_NAMES, FEATURE_EXTERNAL_FILES, FEATURE_META_STORAGES, FEATURE_SHARD_FILES, NO_PACKAGE_ID,
    ChecksumKind, SectionKind,
)
from pt2format._container.reader import ContainerFile
from pt2format._container.writer import (
    LayoutChanged, build_header, byte_view, layout_payloads, payload_checksums,
)
from pt2format._generated import model as m
from pt2format._generated.string_check import check_package as check_strings
from pt2format._source import resolve_source, unreadable
from pt2format._target import is_stream_target, write_path_data_first, write_target
from pt2format._validate import check_shard_name, validate_package
from pt2format._validate.label import check_label
from pt2format.errors import (
    ChecksumError, HeaderError, LimitError, Pt2FormatError, SegmentError, StaleShardError, ValidationError,
    VersionError,
)

#: Bytes per MADV_WILLNEED call in PackageFile.advise_ranges: Linux reads at most max(readahead window, io_pages)
#: per call (force_page_cache_ra), so a larger range is asked for in pieces no larger than a small window.
_WILLNEED_STEP = 2 << 20


class PackageFile:
    """An open `.pt2f` file: the decoded `Package` tree plus zero-copy access to its data.

    Views returned by `storage_view` stay valid after `close()` (the map is
    released when the last view is dropped); `close()` only stops new views.
    """

    def __init__(self, container: ContainerFile, package, *, copy_on_write: bool, in_memory: bool = False,
                 use_mmap: bool = True):
        self._main = container
        self._in_memory = in_memory  # read from bytes or a stream: no directory to find shards in
        self._use_mmap = use_mmap  # False: shard and external files are read into memory too
        self._shards = {}
        self._copy_on_write = copy_on_write
        self._lock = threading.RLock()
        self.package = package
        self.path = container.path
        self.header = container.header

    @property
    def file_key(self) -> tuple | None:
        """(st_dev, st_ino, st_size, st_mtime_ns) of the file as opened (None for bytes and streams).

        Taken from the opened descriptor, so it names the file whose bytes
        were read, even if the path now names another.
        """
        st = self._main.stat
        return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    # -- data access -----------------------------------------------------

    def _container(self, file_index: int) -> ContainerFile:
        if file_index == 0:
            return self._main
        if file_index < 0:  # external raw file -k - 1 (see _section_view)
            with self._lock:
                ext = self._shards.get(file_index)
                if ext is None:
                    from pt2format._external import open_external

                    ext = self._shards[file_index] = open_external(self.package, -file_index - 1, self.path,
                                                                   copy_on_write=self._copy_on_write,
                                                                   use_mmap=self._use_mmap)
            return ext
        with self._lock:
            shard = self._shards.get(file_index)
            if shard is None:
                shard = self._open_shard(file_index)
                self._shards[file_index] = shard
        return shard

    def _open_shard(self, file_index: int) -> ContainerFile:
        entry = self.package.shard_files[file_index - 1]
        if self._in_memory:
            raise SegmentError("data is in a shard file, and a file read from bytes or a stream has no directory "
                               "to find it in; read it from its path", file=self.path,
                               path=f"shard_files[{file_index - 1}]", got=entry.name)
        check_shard_name(entry.name)  # validated on read; re-checked because this opens a path
        path = os.path.join(os.path.dirname(os.path.abspath(self.path)), entry.name)
        try:
            shard = ContainerFile(path, shard=True, copy_on_write=self._copy_on_write, mmap=self._use_mmap)
        except OSError as e:  # a symlink loop, no permission, too many open files, an I/O error, ...
            raise unreadable(e, path, what="shard file", where=f"shard_files[{file_index - 1}]") from e
        if shard.size != entry.size:
            shard.close()
            raise HeaderError("shard file size differs from shard_files entry", file=path,
                              path=f"shard_files[{file_index - 1}].size", expected=entry.size, got=shard.size)
        recorded = bytes(entry.package_id) or self.header.package_id
        if shard.header.package_id != recorded or recorded != self.header.package_id:
            shard.close()
            raise StaleShardError("shard file belongs to another save (package_id differs)", file=path,
                                  section="header", offset=44, path=f"shard_files[{file_index - 1}].package_id",
                                  expected=recorded.hex(), got=shard.header.package_id.hex())
        if (shard.header.format_major, shard.header.format_minor) != self.header.format_version:
            shard.close()
            raise HeaderError("shard file format version differs from the main file's", file=path,
                              expected=self.header.format_version,
                              got=(shard.header.format_major, shard.header.format_minor))
        lengths = shard.data_section_lengths()
        for i, seg in enumerate(self.package.segments):
            if seg.file != file_index:
                continue
            if seg.section not in lengths:
                shard.close()
                raise SegmentError("segment does not name a DATA section of its shard file", file=path,
                                   path=f"segments[{i}].section", expected=f"one of {sorted(lengths)}",
                                   got=seg.section)
        for i, st in enumerate(self.package.storages):
            seg = self.package.segments[st.segment]
            if seg.file == file_index and st.offset + st.size > lengths[seg.section]:
                shard.close()
                raise SegmentError("storage ends past its segment", file=path, path=f"storages[{i}]",
                                   expected=f"offset + size <= {lengths[seg.section]}", got=st.offset + st.size)
        return shard

    def _section_view(self, segment_index: int) -> tuple:
        seg = self.package.segments[segment_index]
        container = self._container(-seg.external if seg.external else seg.file)
        return container, seg.section, container.section_view(seg.section)

    def storage_view(self, index: int) -> memoryview:
        """The bytes of `Package.storages[index]`: a read-only view into the mapped file (no copy)."""
        st = self.package.storages[index]
        _, _, view = self._section_view(st.segment)
        return view[st.offset:st.offset + st.size]

    def advise_ranges(self, index: int, ranges) -> None:
        """Read ahead exactly `ranges` ((offset, length) within storage `index`) of a mapped file, and nothing around them.

        The kernel's readahead on a mapped file reads megabytes past each
        fault, so a rank reading its slices would read its neighbours' too.
        The mapping is switched to MADV_RANDOM (no readahead) and the wanted
        pages are asked for with MADV_WILLNEED, in large reads. For files read
        into memory, or where madvise is missing, nothing is done.
        """
        import mmap as _mmap

        st = self.package.storages[index]
        container, sec, _ = self._section_view(st.segment)
        mm = getattr(container, "_mm", None)
        if mm is None or not hasattr(mm, "madvise") or not hasattr(_mmap, "MADV_WILLNEED"):
            return
        if not getattr(container, "_random_access", False):
            mm.madvise(_mmap.MADV_RANDOM)
            container._random_access = True
        base = container.header.sections[sec].offset + st.offset
        page = _mmap.PAGESIZE
        merged = []
        for off, n in sorted(ranges):
            if n <= 0:
                continue
            if merged and off <= merged[-1][1] + page:
                merged[-1][1] = max(merged[-1][1], off + n)
            else:
                merged.append([off, off + n])
        step = _WILLNEED_STEP  # the kernel reads at most its readahead window per call: ask piece by piece
        for b, e in merged:
            start = (base + b) // page * page
            end = base + e
            while start < end:
                n = min(step, end - start)
                mm.madvise(_mmap.MADV_WILLNEED, start, n)
                start += n

    def open_all_shards(self) -> None:
        """Open (and check) every shard and external file that a segment uses, several at a time."""
        from pt2format._shards import run_parallel

        keys = sorted({-seg.external if seg.external else seg.file for seg in self.package.segments})
        run_parallel(self._container, keys)

    def verify_data(self) -> None:
        """Check every DATA section checksum and every storage checksum; raise ChecksumError on a mismatch.

        Each byte is read once: a section's CRC is combined from its storages'
        CRCs and the CRCs of the bytes between them.
        """
        self.open_all_shards()
        by_section = {}
        for i, st in enumerate(self.package.storages):
            seg = self.package.segments[st.segment]
            by_section.setdefault((seg.file, seg.section), []).append(i)
        from pt2format._shards import run_parallel

        jobs = []
        for seg in self.package.segments:  # storages in external files are verified with their file
            if seg.external:
                by_section.pop((seg.file, seg.section), None)
        for i, st in enumerate(self.package.storages):
            seg = self.package.segments[st.segment]
            if seg.external:
                by_section.setdefault((-seg.external, 0), []).append(i)
        files = [(0, self._main)] + sorted(self._shards.items())
        for file_index, container in files:
            for sec_index, entry in enumerate(container.header.sections):
                if entry.kind == SectionKind.DATA:
                    jobs.append((container, sec_index, by_section.get((file_index, sec_index), [])))
        # Largest first, so a big shard does not start last; zlib releases the GIL, so shards overlap.
        jobs.sort(key=lambda j: -j[0].header.sections[j[1]].length)
        run_parallel(lambda job: self._verify_section(*job), jobs)

    def _verify_section(self, container: ContainerFile, sec_index: int, storage_indices: list) -> None:
        entry = container.header.sections[sec_index]
        view = container.section_view(sec_index)
        storages = self.package.storages
        order = sorted(storage_indices, key=lambda i: (storages[i].offset, storages[i].size))
        section_crc = 0
        cursor = 0
        for i in order:
            st = storages[i]
            crc = crc32(view[st.offset:st.offset + st.size])
            if st.checksum_kind == m.ChecksumKind.CRC32 and crc != st.checksum:
                raise ChecksumError("storage checksum mismatch", file=container.path, section=entry.label(sec_index),
                                    offset=entry.offset + st.offset, path=f"storages[{i}]",
                                    expected=f"0x{st.checksum:08x}", got=f"0x{crc:08x}")
            if st.offset >= cursor:  # disjoint from what came before: extend the running section CRC
                section_crc = crc32(view[cursor:st.offset], section_crc)
                section_crc = crc32_combine(section_crc, crc, st.size)
                cursor = st.offset + st.size
            elif st.offset + st.size > cursor:  # overlaps the previous storage: take only the new tail
                section_crc = crc32(view[cursor:st.offset + st.size], section_crc)
                cursor = st.offset + st.size
        if entry.checksum_kind != ChecksumKind.CRC32:
            return
        section_crc = crc32(view[cursor:], section_crc)
        if section_crc != entry.checksum:
            raise ChecksumError("section checksum mismatch", file=container.path, section=entry.label(sec_index),
                                offset=entry.offset, expected=f"0x{entry.checksum:08x}", got=f"0x{section_crc:08x}")

    # -- lifetime ----------------------------------------------------------

    def close(self) -> None:
        """Stop handing out views and release the maps (at once, or when the last view is dropped)."""
        for shard in self._shards.values():
            shard.close()
        self._shards.clear()
        self._main.close()

    @property
    def closed(self) -> bool:
        return self._main.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PackageFile({self.path!r}, programs={[p.name for p in self.package.programs]})"


@_options.READ.implements
def read(path, *, verify_data: bool, max_program_bytes: int, max_depth: int, copy_on_write: bool,
         json_schema: bool, mmap: bool) -> PackageFile:
    """Open a `.pt2f` file: check it, decode and validate its program tree, map its data.

    `path` is a path, a bytes-like object or a binary file object (see
    `pt2format._source`): a path is mapped; bytes and streams are used in
    memory, without mmap. `mmap=False` reads a path (and its shard and
    external files, when first needed) into memory instead of mapping it:
    a mapped file that another process truncates kills the process with
    SIGBUS on the next access to the lost pages; a file read into memory
    cannot, and one that shrinks while it is read is a FormatError.

    `copy_on_write=True` maps the file privately so data views are writable
    (writes stay in memory); by default views are read-only. A JSON program is
    always type-checked field by field while it is decoded (the checks the
    generated JSON Schema states); `json_schema=True` also runs the jsonschema
    library over it, a slow pass over every object, so `validate()` does it
    and `read()` does not by default.
    """
    source = resolve_source(path, writable=copy_on_write)
    container = ContainerFile(source.name, max_program_bytes=max_program_bytes, copy_on_write=copy_on_write,
                              data=source.data, mmap=mmap)
    try:
        program = container.header.sections[0]
        encoding = ENCODING_NAMES[program.encoding]
        try:
            package = _codecs.decode(container.section_view(0), encoding, max_depth=max_depth,
                                     max_bytes=max_program_bytes, json_schema=json_schema)
        except VersionError as e:  # a newer minor's union member or enum value name (SPEC.md section 8)
            e.detail += (f"; the file is format {container.header.format_major}.{container.header.format_minor}, "
                         f"this reader reads {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}")
            raise e.with_context(file=container.path, section=program.label(0))
        except Pt2FormatError as e:
            raise e.with_context(file=container.path, section=program.label(0))
        except RecursionError as e:  # Python's own stack is a depth limit too; report it as one
            raise LimitError("program nested too deeply for this reader", file=container.path,
                             section=program.label(0), expected=f"depth <= {max_depth}") from e
        _check_against_header(package, container)
        try:
            validate_package(package, data_section_lengths=container.data_section_lengths(), max_depth=max_depth)
        except Pt2FormatError as e:
            raise e.with_context(file=container.path, section=program.label(0))
        result = PackageFile(container, package, copy_on_write=copy_on_write, in_memory=not source.is_path,
                             use_mmap=mmap)
    except BaseException:
        container.close()
        raise
    if verify_data:
        try:
            result.verify_data()
        except BaseException:
            result.close()
            raise
    return result


def _check_against_header(package, container: ContainerFile) -> None:
    header = container.header
    fv = package.format_version
    label = header.sections[0].label(0)
    if fv is None:
        raise ValidationError("required field is missing", file=container.path, section=label, path="format_version")
    if (fv.major, fv.minor) != header.format_version:
        raise ValidationError("Package.format_version differs from the header's", file=container.path, section=label,
                              path="format_version", expected="%d.%d" % header.format_version,
                              got=f"{fv.major}.{fv.minor}")
    for i, shard in enumerate(package.shard_files):
        if shard.package_id and bytes(shard.package_id) != header.package_id:
            raise StaleShardError("shard_files entry names another save than this file's header", file=container.path,
                                  section=label, path=f"shard_files[{i}].package_id", expected=header.package_id.hex(),
                                  got=bytes(shard.package_id).hex())
    if package.required_features != header.required_features:
        raise ValidationError("Package.required_features differs from the header's", file=container.path,
                              section=label, path="required_features", expected=f"0x{header.required_features:x}",
                              got=f"0x{package.required_features:x}")


def validate(path, **options) -> None:
    """Check everything: header, program, invariants, shard files, every data checksum, the label's minor."""
    with read(path, verify_data=True, json_schema=True, **options) as f:
        try:
            # No name newer than the label (SPEC.md §8.1). Not on every read: the walk costs a sixth of
            # reading a large program, and a reader that knows the names reads them right.
            check_label(f.package)
        except Pt2FormatError as e:
            raise e.with_context(file=f.path, section=f.header.sections[0].label(0))


@_options.SAVE.lends("encoding", "fsync", "max_shard_size")
def write_package(path, package, storage_payloads, *, encoding: str, fsync: bool, data_checksums: bool = True,
                  progress_callback=None, max_shard_size, external=None) -> None:
    """Write `package` with `storage_payloads[i]` as the bytes of `package.storages[i]`, atomically.

    `path` is a path (written atomically, through symlinks, keeping the
    file's mode) or a writable binary file object (same bytes, in order; see
    `pt2format._target`). `progress_callback(bytes_written)` follows the write.
    `encoding`, `fsync` and `max_shard_size` default as for `pt2format.save`.

    Fills in (overwriting) every Storage's segment/offset/size/checksum and
    `Package.segments`, `shard_files` and `external_files`. By default all
    data goes in one DATA section of this file; `max_shard_size` (bytes, or
    a string like "5GB") puts it in shard files next to `path` instead
    (`pt2format._shards`); `external` (a plan from `pt2format._external`)
    points storages at byte ranges of existing raw files instead of copying
    them. The package is validated before anything is written; payloads are
    any C-contiguous buffers and are never copied.
    """
    from pt2format import _shards

    if encoding not in ENCODING_BY_NAME:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {sorted(ENCODING_BY_NAME)}")
    check_strings(package)  # never write a string a reader would refuse (SPEC.md §9)
    storages = package.storages
    if len(storage_payloads) != len(storages):
        raise ValueError(f"{len(storage_payloads)} payloads for {len(storages)} storages")
    views = [byte_view(p) for p in storage_payloads]
    package.shard_files = []
    package.external_files = []
    package.required_features &= ~(FEATURE_SHARD_FILES | FEATURE_EXTERNAL_FILES | FEATURE_META_STORAGES)
    if any(st.meta_nbytes for st in storages):
        package.required_features |= FEATURE_META_STORAGES
    segments = []
    placed = {} if external is None else external.placements
    if placed:
        package.external_files = list(external.files)
        package.required_features |= FEATURE_EXTERNAL_FILES
        segments = [m.Segment(external=e + 1) for e in range(len(external.files))]
        for i, (e, offset, crc) in placed.items():
            _place(storages[i], e, offset, len(views[i]), crc if data_checksums else None)
    # The smallest minor that defines everything the tree uses (bits 0-1 set below are 1.0's): SPEC.md §8.1.
    _content_minor.label(package)
    internal = [i for i in range(len(storages)) if i not in placed]
    if is_stream_target(path):
        if max_shard_size is not None or placed:
            raise ValueError("shard files and external data need a path to write next to, not a file object")
    else:
        path = os.fspath(path)
    layout = data_crc = None
    shards = []
    if max_shard_size is None:
        if internal:
            layout = layout_payloads([len(views[i]) for i in internal], DATA_ALIGNMENT)
            if (data_checksums and encoding in _DATA_FIRST_ENCODINGS and not is_stream_target(path)
                    and layout.length >= DATA_FIRST_MIN_BYTES and hasattr(os, "pwrite")):
                try:
                    return _write_data_first(path, package, encoding, views, internal, layout, segments,
                                             fsync=fsync, progress_callback=progress_callback)
                except LayoutChanged:
                    pass  # a checksum changed the program's length (almost never): write it the two-pass way
            crcs, data_crc = payload_checksums([views[i] for i in internal], layout) if data_checksums else (None, None)
            for k, i in enumerate(internal):
                _place(storages[i], len(segments), layout.offsets[k], layout.sizes[k], crcs[k] if crcs else None)
            segments.append(m.Segment(file=0, section=1))
    elif internal:
        groups = [[internal[k] for k in g] for g in
                  _shards.plan_shards([len(views[i]) for i in internal], _shards.parse_size(max_shard_size))]
        shards = _shards.shard_layouts(views, groups, checksums=data_checksums)
        names = [_shards.shard_name(path, k + 1, len(groups)) for k in range(len(groups))]
        package.required_features |= FEATURE_SHARD_FILES
        for k, (group, (slayout, crcs, _)) in enumerate(zip(groups, shards)):
            for j, i in enumerate(group):
                _place(storages[i], len(segments), slayout.offsets[j], slayout.sizes[j], crcs[j] if crcs else None)
            segments.append(m.Segment(file=k + 1, section=0))
            size = _shards.shard_file_length(slayout)
            package.shard_files.append(m.ShardFile(name=names[k], size=size, package_id=list(NO_PACKAGE_ID)))
    package.segments = segments
    validate_package(package, data_section_lengths={1: layout.length} if layout else {})
    program = _codecs.encode(package, encoding)
    package_id = _shards.derive_package_id(program, checksums=data_checksums)
    if package.shard_files:  # the id goes into the program too: encode again with it
        for shard in package.shard_files:
            shard.package_id = list(package_id)
        program = _codecs.encode(package, encoding)
    fv = package.format_version
    if shards:
        headers = [_shards.shard_header(format_version=(fv.major, fv.minor), required_features=package.required_features,
                                        layout=slayout, data_crc=section_crc, package_id=package_id)
                   for slayout, _, section_crc in shards]
        _shards.write_shards(path, names, headers, views, groups, [s[0] for s in shards], fsync=fsync)
    header = build_header(format_version=(fv.major, fv.minor), required_features=package.required_features,
                          program_length=len(program), program_crc=crc32(program),
                          encoding=ENCODING_BY_NAME[encoding], data_layout=layout, data_crc=data_crc,
                          package_id=package_id)
    write_target(path, header, program, [views[i] for i in internal] if layout else (), layout, fsync=fsync,
                 progress_callback=progress_callback)


#: Encodings whose checksum fields have a length independent of their value (for CRCs >= 2**16 in
#: MessagePack), so a program encoded with provisional checksums fixes the data section's offset.
_DATA_FIRST_ENCODINGS = ("flatbuffers", "msgpack")
#: Below this much data, a separate checksum pass costs less than encoding the program twice.
DATA_FIRST_MIN_BYTES = 32 << 20
_PROVISIONAL_CRC = 0xFFFFFFFF


def _write_data_first(path, package, encoding, views, internal, layout, segments, *, fsync,
                      progress_callback) -> None:
    """Save with the checksums computed while the data is written (writer.write_container_data_first).

    The program is encoded once with provisional checksums to fix where the
    data section starts, then again with the real ones; if that changes its
    length, LayoutChanged sends the caller to the two-pass path.
    """
    from pt2format import _shards

    for k, i in enumerate(internal):
        _place(package.storages[i], len(segments), layout.offsets[k], layout.sizes[k], _PROVISIONAL_CRC)
    package.segments = segments + [m.Segment(file=0, section=1)]
    validate_package(package, data_section_lengths={1: layout.length})
    fv = package.format_version
    enc = ENCODING_BY_NAME[encoding]

    def header_for(program_length, program_crc, data_crc, package_id):
        return build_header(format_version=(fv.major, fv.minor), required_features=package.required_features,
                            program_length=program_length, program_crc=program_crc, encoding=enc,
                            data_layout=layout, data_crc=data_crc, package_id=package_id)

    provisional = _codecs.encode(package, encoding)
    data_offset = header_for(len(provisional), 0, _PROVISIONAL_CRC, NO_PACKAGE_ID).sections[1].offset
    del provisional

    def finish(crcs, data_crc):
        for k, i in enumerate(internal):
            package.storages[i].checksum = crcs[k]
        program = _codecs.encode(package, encoding)
        package_id = _shards.derive_package_id(program, checksums=True)
        return header_for(len(program), crc32(program), data_crc, package_id), program

    write_path_data_first(path, data_offset, [views[i] for i in internal], layout, finish, fsync=fsync,
                          progress_callback=progress_callback)


def _place(storage, segment: int, offset: int, size: int, crc) -> None:
    storage.segment = segment
    storage.offset = offset
    storage.size = size
    storage.checksum_kind = m.ChecksumKind.NONE if crc is None else m.ChecksumKind.CRC32
    storage.checksum = 0 if crc is None else crc


@_options.SAVE.lends("fsync")
def convert(src, dst, encoding: str, *, fsync: bool) -> None:
    """Rewrite `src` at `dst` with the program in `encoding`; data (shards included) is copied into `dst`.

    `src` is read as a `.pt2f` by pt2format's reader, whatever its bytes: a
    torch archive is refused, never handed to torch (see `_interop.from_torch`).

    A file of a newer minor than this reader's is refused (`VersionError`,
    SPEC.md §8.2): the reader has dropped the fields and sections it does not
    know, and writing the rest under the file's label would change the
    program without a word.
    """
    with read(src, verify_data=True) as f:  # never launder corrupt data under fresh checksums
        if f.header.format_version > tuple(FORMAT_VERSION):
            major, minor = f.header.format_version
            raise VersionError("cannot convert a file of a newer minor: this reader would drop what that minor "
                               "added", file=f.path, section="header",
                               path="format_minor", expected=f"at most {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]} "
                               f"(this reader)", got=f"{major}.{minor} (the file)")
        if encoding == "flatbuffers":  # a tree from JSON or MessagePack: one object per equal shared-table object
            from pt2format._codecs.share import share_equal

            share_equal(f.package)
        views = [f.storage_view(i) for i in range(len(f.package.storages))]
        write_package(dst, f.package, views, encoding=encoding, fsync=fsync,
                      data_checksums=_had_checksums(f.package))
        del views


def _had_checksums(package) -> bool:
    return not package.storages or all(s.checksum_kind == m.ChecksumKind.CRC32 for s in package.storages)
