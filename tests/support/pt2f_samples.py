"""Small hand-built Package trees and raw-file helpers shared by the container/API/damage tests.

Trees are built from the generated model classes directly (no exporter, no
torch), so the container tests do not depend on other areas' code. `write_raw`
bypasses write_package's validation so tests can plant broken trees; `patch`
rewrites a header field and re-seals the header checksum so each damage test
reaches the check it is aimed at.
"""

from __future__ import annotations

import struct
import zlib

from pt2format._container.align import align_up
from pt2format._container.header import (
    HEADER_SIZE, SECTION_ENTRY_SIZE, ChecksumKind, Header, SectionEntry, SectionKind, SectionEncoding,
    header_length, pack_header,
)
from pt2format._generated import model as m

ENCODINGS = ("flatbuffers", "msgpack", "json")


def meta(n: int, dtype=m.ScalarType.FLOAT32):
    return m.TensorMeta(dtype=dtype, sizes=[m.SymInt(-1, n)], strides=[m.SymInt(-1, 1)],
                        storage_offset=m.SymInt(-1, 0), device=m.Device("cpu"))


def tiny_package(sizes=(2,), *, name="forward"):
    """One program `y = x + w0 (+ w1 ...)`, one FLOAT32 parameter per entry of `sizes` (elements)."""
    params = [f"w{i}" for i in range(len(sizes))]
    n = sizes[0] if sizes else 1
    inputs = [m.Argument(m.TensorArgument("x"))] + [m.Argument(m.TensorArgument(p)) for p in params]
    nodes = []
    prev = "x"
    for i, p in enumerate(params):
        out = f"add_{i}"
        nodes.append(m.Node(name=out, target="torch.ops.aten.add.Tensor",
                            inputs=[m.NamedArgument("self", m.TensorArgument(prev), m.ArgumentKind.POSITIONAL),
                                    m.NamedArgument("other", m.TensorArgument(p), m.ArgumentKind.POSITIONAL)],
                            outputs=[m.Argument(m.TensorArgument(out))]))
        prev = out
    values = [m.TensorValue("x", meta(n))] + [m.TensorValue(p, meta(s)) for p, s in zip(params, sizes)]
    values += [m.TensorValue(node.name, meta(n)) for node in nodes]
    graph = m.Graph(inputs=inputs, outputs=[m.Argument(m.TensorArgument(prev))], nodes=nodes, tensor_values=values)
    sig = m.GraphSignature(
        input_specs=[m.InputSpec(m.UserInputSpec(m.Argument(m.TensorArgument("x"))))]
        + [m.InputSpec(m.InputToParameterSpec(m.TensorArgument(p), p)) for p in params],
        output_specs=[m.OutputSpec(m.UserOutputSpec(m.Argument(m.TensorArgument(prev))))])
    program = m.Program(name=name, graph=graph, signature=sig,
                        state=[m.StateEntry(p, m.StateKind.PARAMETER, i) for i, p in enumerate(params)])
    return m.Package(format_version=m.FormatVersion(1, 0), producer=m.Producer("pt2format-tests", "0"),
                     programs=[program],
                     tensors=[m.Tensor(storage=i, dtype=m.ScalarType.FLOAT32, sizes=[s], strides=[1])
                              for i, s in enumerate(sizes)],
                     storages=[m.Storage() for _ in sizes])


def float_payloads(sizes=(2,)):
    """Distinct little-endian float32 bytes per storage: storage i holds i*100 + 0, 1, 2, ..."""
    return [struct.pack(f"<{s}f", *[i * 100.0 + k for k in range(s)]) for i, s in enumerate(sizes)]


def write_raw(path, package, payloads=(), *, encoding="flatbuffers", program_bytes=None, data_alignment=64):
    """Write a container holding `package` exactly as given (no validation, no filling of storages).

    Storages are placed back to back at 64-byte multiples like write_package,
    but their fields are left as the caller set them. `program_bytes` replaces
    the encoded program (for undecodable payloads).
    """
    from pt2format import _codecs
    from pt2format._container.writer import build_header, layout_payloads, write_container

    if program_bytes is None:
        program_bytes = _codecs.encode(package, encoding)
    enc = {"flatbuffers": 1, "msgpack": 2, "json": 3}[encoding]
    layout = layout_payloads([len(p) for p in payloads], data_alignment) if payloads else None
    data_crc = None
    if layout is not None:
        from pt2format._container.writer import payload_checksums

        _, data_crc = payload_checksums([memoryview(p) for p in payloads], layout)
    fv = package.format_version if package is not None and package.format_version is not None else m.FormatVersion(1, 0)
    features = package.required_features if package is not None else 0
    header = build_header(format_version=(fv.major, fv.minor), required_features=features,
                          program_length=len(program_bytes), program_crc=zlib.crc32(program_bytes), encoding=enc,
                          data_layout=layout, data_crc=data_crc)
    write_container(path, header, program_bytes, [memoryview(p) for p in payloads], layout, fsync=False,
                    progress_callback=None)


def write_shard(path, payloads, *, format_version=(1, 0)) -> int:
    """A shard file: one DATA section holding `payloads` back to back at 64-byte multiples; returns its size."""
    body = bytearray()
    for p in payloads:
        body += bytes(align_up(len(body), 64) - len(body)) + bytes(p)
    offset = align_up(header_length(1), 64)
    entry = SectionEntry(SectionKind.DATA, SectionEncoding.RAW, 64, offset, len(body), ChecksumKind.CRC32,
                         zlib.crc32(body))
    header = Header(format_version[0], format_version[1], 0, offset + len(body), (entry,))
    head = pack_header(header)
    data = head + bytes(offset - len(head)) + bytes(body)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def reseal(buf: bytearray) -> bytearray:
    """Recompute the header checksum in place (after a deliberate edit of the header or table)."""
    count = struct.unpack_from("<H", buf, 10)[0]
    length = min(HEADER_SIZE + SECTION_ENTRY_SIZE * count, len(buf))
    struct.pack_into("<I", buf, 40, 0)
    struct.pack_into("<I", buf, 40, zlib.crc32(bytes(buf[:length])))
    return buf


def reseal_sections(buf: bytearray) -> bytearray:
    """Recompute every section checksum (CRC-32 ones) and then the header checksum."""
    count = struct.unpack_from("<H", buf, 10)[0]
    for i in range(count):
        at = HEADER_SIZE + SECTION_ENTRY_SIZE * i
        if at + SECTION_ENTRY_SIZE > len(buf):
            break
        _kind, _enc, _align, offset, length, ck_kind, _ck = struct.unpack_from("<HHIQQII", buf, at)
        if ck_kind == 1 and offset + length <= len(buf):
            struct.pack_into("<I", buf, at + 28, zlib.crc32(bytes(buf[offset:offset + length])))
    return reseal(buf)


def patch(buf, offset: int, fmt: str, value, *, seal: bool = True) -> bytearray:
    """Copy of `buf` with `value` packed at `offset`, header checksum re-sealed unless `seal=False`."""
    out = bytearray(buf)
    struct.pack_into(fmt, out, offset, value)
    return reseal(out) if seal else out


def entry_offset(index: int) -> int:
    """File offset of section-table entry `index`."""
    return HEADER_SIZE + SECTION_ENTRY_SIZE * index
