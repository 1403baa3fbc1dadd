"""Write `conformance/invalid/`: files that each break exactly one rule of SPEC.md, tagged with the error class.

Every reader (Python, C++, TypeScript) must refuse each file with the tagged
class (SPEC.md §7); `tests/conformance/test_invalid_corpus.py` holds them to
it. The files start from golden files (`conformance/golden/1.0/`) and change
one thing, written the way an attacker would: straight from the schema
objects or the raw bytes, with everything else (checksums, header, layout)
sealed, so that the one change is the only thing a reader can object to.

Run `python conformance/make_invalid.py` to regenerate; the output is
deterministic and a drift test checks that the committed files equal it.

`MANIFEST.json` lists one entry per file:

    {"file": "...pt2f", "rule": "§3", "encoding": "flatbuffers|msgpack|json",
     "error": "<class name in pt2format.errors>", "description": "..."}

`error` is the exact class (not a base class) the file must be refused with.
"""

from __future__ import annotations

import argparse
import copy
import json
import struct
import zlib
from pathlib import Path

from pt2format import _codecs
from pt2format._container.align import DATA_ALIGNMENT, align_up
from pt2format._container.header import ENCODING_NAMES, pack_header, unpack_header
from pt2format._container.reader import ContainerFile
from pt2format._container.writer import build_header, layout_payloads, payload_checksums
from pt2format._generated import model as m

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "conformance" / "golden" / "1.0"
OUT = ROOT / "conformance" / "invalid"
ENCODINGS = ("flatbuffers", "msgpack", "json")
ENCODING_IDS = {"flatbuffers": 1, "msgpack": 2, "json": 3}

# Header field offsets (SPEC.md §2) and section entry field offsets (§3).
H_VERSION, H_COUNT, H_LENGTH, H_MAJOR, H_MINOR, H_FEATURES, H_FILE_LENGTH, H_CRC = 8, 10, 12, 16, 18, 24, 32, 40
E_KIND, E_ENCODING, E_ALIGN, E_OFFSET, E_LENGTH, E_CK_KIND, E_CK, E_FLAGS = 0, 2, 4, 8, 16, 24, 28, 32
ENTRY0, ENTRY_SIZE = 64, 48

# A marker placed in a string so the encoded bytes can be patched afterwards (same length).
MARK = "ZQXJMARKZQXJ"


# ---------------------------------------------------------------------------
# Bases and assembly

def golden(case: str, encoding: str = "flatbuffers") -> Path:
    return GOLDEN / f"{case}-{encoding}" / "program.pt2f"


def decode(case: str):
    """(package tree, storage payloads) of a golden case (its FlatBuffers file: the tree is the same in all)."""
    container = ContainerFile(golden(case))
    try:
        package = _codecs.decode(container.section_view(0), ENCODING_NAMES[container.header.sections[0].encoding])
        payloads = []
        for st in package.storages:
            view = container.section_view(package.segments[st.segment].section)
            payloads.append(bytes(view[st.offset:st.offset + st.size]))
        package_id = container.header.package_id
        return package, payloads, package_id
    finally:
        container.close()


def assemble(program: bytes, payloads, encoding: str, *, fmt=(1, 0), features: int = 0,
             package_id: bytes = bytes(16)) -> bytes:
    """A well-formed container (the reference writer's layout) holding exactly `program` and `payloads`."""
    layout = layout_payloads([len(p) for p in payloads], DATA_ALIGNMENT) if payloads else None
    data_crc = payload_checksums([memoryview(p) for p in payloads], layout)[1] if layout else None
    header = build_header(format_version=fmt, required_features=features, program_length=len(program),
                          program_crc=zlib.crc32(program), encoding=ENCODING_IDS[encoding], data_layout=layout,
                          data_crc=data_crc, package_id=package_id)
    out = bytearray(pack_header(header))
    for entry in header.sections:
        out += bytes(entry.offset - len(out))
        if entry.kind == 1:
            out += program
        else:
            base = len(out)
            for p, off in zip(payloads, layout.offsets):
                out += bytes(base + off - len(out))
                out += p
    assert len(out) == header.file_length
    return bytes(out)


def tree_file(case: str, encoding: str, mutate, *, features=None, fmt=None, patch=None) -> bytes:
    """Golden `case` with `mutate(package)` applied, encoded in `encoding`; header version/features from the tree.

    `patch(program_bytes) -> bytes` edits the encoded program (for what the model cannot express).
    """
    package, payloads, package_id = decode(case)
    package = copy.deepcopy(package)
    mutate(package)
    program = _codecs.encode(package, encoding)
    if patch is not None:
        program = patch(program)
    fv = package.format_version
    return assemble(program, payloads, encoding,
                    fmt=fmt or (fv.major, fv.minor),
                    features=package.required_features if features is None else features,
                    package_id=package_id)


def reseal(buf: bytearray) -> bytes:
    """Recompute the header checksum of `buf` (the header as edited stays otherwise unchanged)."""
    length = struct.unpack_from("<I", buf, H_LENGTH)[0]
    length = min(length, len(buf))
    struct.pack_into("<I", buf, H_CRC, 0)
    struct.pack_into("<I", buf, H_CRC, zlib.crc32(bytes(buf[:length])))
    return bytes(buf)


def header_edit(src: bytes, fmt: str, offset: int, value, *, seal: bool = True) -> bytes:
    buf = bytearray(src)
    struct.pack_into(fmt, buf, offset, value)
    return reseal(buf) if seal else bytes(buf)


def entry_edit(src: bytes, index: int, fmt: str, field: int, value) -> bytes:
    return header_edit(src, fmt, ENTRY0 + ENTRY_SIZE * index + field, value)


def entry(src: bytes, index: int):
    """(kind, encoding, alignment, offset, length, checksum_kind, checksum, flags) of section `index`."""
    return struct.unpack_from("<HHIQQIII", src, ENTRY0 + ENTRY_SIZE * index)


def replace_program(src: bytes, program: bytes) -> bytes:
    """`src` (a golden file without data, or whose data follows) with its program bytes replaced; layout redone."""
    h = unpack_header(src)
    enc = {v: k for k, v in ENCODING_IDS.items()}[h.sections[0].encoding]
    payloads = []
    if len(h.sections) > 1:
        package, payloads, _ = decode_bytes(src)
    return assemble(program, payloads, enc, fmt=(h.format_major, h.format_minor), features=h.required_features,
                    package_id=h.package_id)


def decode_bytes(src: bytes):
    h = unpack_header(src)
    p0 = h.sections[0]
    package = _codecs.decode(memoryview(src)[p0.offset:p0.offset + p0.length], ENCODING_NAMES[p0.encoding])
    payloads = []
    for st in package.storages:
        s = h.sections[package.segments[st.segment].section]
        payloads.append(src[s.offset + st.offset:s.offset + st.offset + st.size])
    return package, payloads, h.package_id


def patch_mark(replacement: bytes):
    """A program patch replacing the encoded bytes of MARK by `replacement` (same length in every encoding)."""
    def patch(program: bytes) -> bytes:
        raw = MARK.encode()
        assert program.count(raw) == 1, "marker must occur exactly once"
        assert len(replacement) == len(raw)
        return program.replace(raw, replacement)
    return patch


# ---------------------------------------------------------------------------
# Mutations of the tree (each applied in every encoding)

def prog(p):
    return p.programs[0]


def graph(p):
    return p.programs[0].graph


def _set(path_fn, attr, value):
    def mutate(p):
        setattr(path_fn(p), attr, value)
    return mutate


def _apply_expr(op, args):
    return m.SymExpr(kind=m.SymExprKind.APPLY, op=op, args=list(args))


def _append_exprs(*exprs):
    def mutate(p):
        prog(p).sym_exprs.extend(exprs)
    return mutate


def _nest_list(depth):
    def mutate(p):
        v = m.Value(m.IntValue(1))
        for _ in range(depth):
            v = m.Value(m.ListValue([v]))
        prog(p).example_inputs = v
    return mutate


def _example_key(key):
    def mutate(p):
        entry = m.MapEntry(m.Value(m.StringValue(key)), m.Value(m.IntValue(1)))
        prog(p).example_inputs = m.Value(m.MapValue([entry]))
    return mutate


def _overlap(p):
    p.storages[1].offset = p.storages[0].offset  # same bytes as storage 0 (both inside the segment, aligned)


def _meta_storage(*, size=None, meta_nbytes=None, features=True, device=None):
    """A 1.1 file whose last parameter's storage holds no data (SPEC.md §5, storages without data).

    With no arguments the result is valid (the control the four cases below each break once): the
    storage's `size` 0 and `meta_nbytes` its old size, its checksum that of no bytes (as the writer
    writes), bit 2 set and its tensor on the meta device. The payload stays in the DATA section,
    covered by no storage, which no rule forbids.
    """
    def mutate(p):
        p.format_version.minor = 1
        idx = next(e.tensor for e in reversed(prog(p).state) if e.kind == m.StateKind.PARAMETER)
        t = p.tensors[idx]
        st = p.storages[t.storage]
        old = st.size
        st.meta_nbytes = old if meta_nbytes is None else meta_nbytes
        st.size = 0 if size is None else size
        if not st.size:
            st.checksum = 0  # CRC-32 of no bytes
        if features:
            p.required_features |= 4
        t.device = m.Device(type="meta", index=-1) if device is None else device
    return mutate


def _first_parameter_tensor(p):
    """The Package.tensors row of program 0's first parameter."""
    return p.tensors[next(e.tensor for e in prog(p).state if e.kind == m.StateKind.PARAMETER)]


def _param_reshaped(p):
    t = _first_parameter_tensor(p)
    n = 1
    for s in t.sizes:
        n *= s
    t.sizes, t.strides = [n] + [1] * (len(t.sizes) - 1), [1] * len(t.sizes)  # same bytes, another shape


def _param_retyped(p):
    t = _first_parameter_tensor(p)
    assert t.dtype == m.ScalarType.FLOAT32
    t.dtype = m.ScalarType.INT32  # same element size, another type


def _swap_programs(p):
    p.programs.reverse()


def _dup_program(p):
    p.programs[1].name = p.programs[0].name


def _node_input(name):
    def mutate(p):
        graph(p).nodes[0].inputs[0].value.name = name
    return mutate


def _tensor_meta(attr, value):
    def mutate(p):
        setattr(graph(p).tensor_values[0].meta, attr, value)
    return mutate


def _meta_size_expr(p):
    graph(p).tensor_values[0].meta.sizes[0].expr = 99


def _metadata(entries):
    def mutate(p):
        p.metadata = [m.StringEntry(k, v) for k, v in entries]
    return mutate


def _shard(name, pid=b"", features=1):
    def mutate(p):
        p.shard_files = [m.ShardFile(name=name, size=64, package_id=pid)]
        p.required_features = features
    return mutate


def _extra_meta_key(key):
    def mutate(p):
        graph(p).nodes[0].metadata.extra = [m.StringEntry(key, "x")]
    return mutate


def _weight_sets(mutate_ws):
    def mutate(p):
        p.weight_sets = [m.WeightSet(name="a", entries=[m.StateEntry(name="w", kind=m.StateKind.PARAMETER, tensor=0)])]
        mutate_ws(p.weight_sets)
    return mutate


def _extra_files(files):
    def mutate(p):
        p.extra_files = [m.ExtraFile(name=n, storage=s) for n, s in files]
    return mutate


def _dup_node_names(p):
    graph(p).nodes[1].name = graph(p).nodes[0].name


def _dup_tensor_values(p):
    graph(p).tensor_values[1].name = graph(p).tensor_values[0].name


def _drop_input_spec(p):
    prog(p).signature.input_specs.pop()


def _symbol(attr, value):
    def mutate(p):
        setattr(prog(p).symbols[0], attr, value)
    return mutate


def _float_symbol_nan(p):
    s = prog(p).symbols[0]
    s.kind = m.SymbolKind.FLOAT
    s.float_hint = float("nan")


def _dup_symbol(p):
    prog(p).symbols.append(copy.deepcopy(prog(p).symbols[0]))


def _storage_past_segment(p):
    p.storages[-1].size += 64


def _segment(attr, value, features=None):
    def mutate(p):
        setattr(p.segments[0], attr, value)
        if features is not None:
            p.required_features = features
    return mutate


def _long_name(p):
    graph(p).nodes[0].name = "n" * 1025


def _union_missing(p):
    graph(p).nodes[0].inputs[0].value = None


def _state_kind_unspecified(p):
    prog(p).state[0].kind = m.StateKind.UNSPECIFIED


def _range_expr(p):
    prog(p).range_constraints[0].expr = 7


def _denominator(p):
    prog(p).sym_exprs.append(m.SymExpr(kind=m.SymExprKind.RATIONAL, int_value=1, denominator=1))


def _huge_pow(p):
    e = prog(p).sym_exprs
    e.append(m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=3))
    e.append(m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=1 << 40))
    e.append(_apply_expr(m.SymOp.POW, [len(e) - 2, len(e) - 1]))


def _int_overflow(p):
    e = prog(p).sym_exprs
    e.append(m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=(1 << 62)))
    e.append(_apply_expr(m.SymOp.ADD, [len(e) - 1, len(e) - 1]))


def _shared_chain(p):
    e = prog(p).sym_exprs  # e[0] is the batch symbol: Max(e, e) 30 deep, 30 nodes and a tree of 2**31 - 1
    for _ in range(30):
        e.append(_apply_expr(m.SymOp.MAX, [len(e) - 1, len(e) - 1]))


# (name, rule, error, description, case, mutate, extra kwargs for tree_file)
TREE_CASES = [
    # Package / header agreement (§8, §7)
    ("format_version_mismatch", "§8", "ValidationError", "Package.format_version 1.1 in a 1.0 header",
     "mlp", _set(lambda p: p.format_version, "minor", 1), {"fmt": (1, 0)}),
    ("required_features_mismatch", "§8.3", "ValidationError", "Package.required_features 1, header 0",
     "mlp", _set(lambda p: p, "required_features", 1), {"features": 0}),
    ("package_unknown_feature", "§8.3", "UnsupportedFeatureError", "header and package set unknown feature bit 7",
     "mlp", _set(lambda p: p, "required_features", 1 << 7), {}),
    # Data (§5)
    ("segment_not_data", "§5", "SegmentError", "Segment.section names the PROGRAM section",
     "mlp", _segment("section", 0), {}),
    ("segment_section_out_of_range", "§5", "SegmentError", "Segment.section past the section table",
     "mlp", _segment("section", 9), {}),
    ("segment_file_out_of_range", "§5", "ValidationError", "Segment.file 1 without shard files (bit 0 set)",
     "mlp", _segment("file", 1, features=1), {}),
    ("segment_shard_without_feature", "§5", "ValidationError",
     "a segment in a shard file but required_features lacks bit 0",
     "mlp", lambda p: (_shard("x.bin", features=0)(p), _segment("file", 1)(p)), {}),
    ("segment_external_out_of_range", "§5", "ValidationError", "Segment.external 1 without external files",
     "mlp", _segment("external", 1, features=2), {}),
    ("storage_segment_out_of_range", "§5", "ValidationError", "Storage.segment past Package.segments",
     "mlp", _set(lambda p: p.storages[0], "segment", 5), {}),
    ("storage_misaligned", "§5", "SegmentError", "Storage.offset not a multiple of 64",
     "mlp", _set(lambda p: p.storages[1], "offset", 8), {}),
    ("storage_past_segment", "§5", "SegmentError", "the last storage ends past its DATA section",
     "mlp", _storage_past_segment, {}),
    ("storage_overlap", "§5", "SegmentError", "two storages share bytes",
     "mlp", _overlap, {}),
    ("storage_checksum_kind", "§5", "ValidationError", "Storage.checksum_kind 5 (unknown)",
     "mlp", _set(lambda p: p.storages[0], "checksum_kind", 5), {}),
    ("meta_storage_holds_bytes", "§5", "ValidationError", "a storage with meta_nbytes whose size is not 0",
     "mlp", _meta_storage(size=16), {}),
    ("meta_storage_without_feature", "§5", "ValidationError",
     "a storage with meta_nbytes but required_features lacks bit 2", "mlp", _meta_storage(features=False), {}),
    ("meta_storage_tensor_not_meta", "§5", "ValidationError",
     "a tensor on a storage without data whose device is cpu, not meta",
     "mlp", _meta_storage(device=m.Device(type="cpu", index=-1)), {}),
    ("meta_storage_tensor_past_end", "§5", "ValidationError",
     "a meta tensor reaching past its storage's meta_nbytes", "mlp", _meta_storage(meta_nbytes=8), {}),
    ("tensor_storage_out_of_range", "§5", "ValidationError", "Tensor.storage past Package.storages",
     "mlp", _set(lambda p: p.tensors[0], "storage", 99), {}),
    ("tensor_past_storage", "§5", "ValidationError", "a tensor reaches past the end of its storage",
     "mlp", _set(lambda p: p.tensors[0], "sizes", [64, 8]), {}),
    ("tensor_negative_stride", "§5", "ValidationError", "a negative stride",
     "mlp", _set(lambda p: p.tensors[0], "strides", [8, -1]), {}),
    ("tensor_rank_mismatch", "§5", "ValidationError", "sizes and strides differ in length",
     "mlp", _set(lambda p: p.tensors[0], "strides", [1]), {}),
    ("tensor_negative_offset", "§5", "ValidationError", "a negative storage_offset",
     "mlp", _set(lambda p: p.tensors[0], "storage_offset", -1), {}),
    ("tensor_dtype_unspecified", "§5", "ValidationError", "Tensor.dtype UNSPECIFIED",
     "mlp", _set(lambda p: p.tensors[0], "dtype", 0), {}),
    ("tensor_dtype_unknown", "§8.2", "ValidationError", "Tensor.dtype 200: kept as an integer, no element size",
     "mlp", _set(lambda p: p.tensors[0], "dtype", 200), {}),
    ("state_sizes_unlike_placeholder", "§5", "ValidationError",
     "a parameter stored with other sizes (same bytes) than its placeholder declares", "mlp", _param_reshaped, {}),
    ("state_dtype_unlike_placeholder", "§5", "ValidationError",
     "a parameter stored as INT32 where its placeholder declares FLOAT32", "mlp", _param_retyped, {}),
    ("shard_name_dup", "§5", "ValidationError", "two shard files with the same name",
     "mlp", lambda p: (_shard("a.bin")(p), p.shard_files.append(copy.deepcopy(p.shard_files[0]))), {}),
    ("shard_package_id_other", "§5", "StaleShardError", "ShardFile.package_id differs from the main header's",
     "mlp", _shard("a.bin", pid=bytes(range(16))), {}),
    ("shard_name_path", "§9", "StringClassError", "shard name with a directory separator (file_name)",
     "mlp", _shard("../a.bin"), {}),
    ("shard_name_hidden", "§9", "StringClassError", "shard name starting with a dot (file_name)",
     "mlp", _shard(".a"), {}),
    ("external_format_unknown", "§5", "ValidationError", "ExternalFile.format 9",
     "mlp", _set(lambda p: p, "external_files", [m.ExternalFile(name="w.bin", size=8, format=9)]), {}),
    ("weight_set_tensor_out_of_range", "§5", "ValidationError", "a weight set entry names tensor 99",
     "mlp", _weight_sets(lambda ws: setattr(ws[0].entries[0], "tensor", 99)), {}),
    ("weight_set_entries_unsorted", "§5", "ValidationError", "weight set entries not sorted by name",
     "mlp", _weight_sets(lambda ws: ws[0].entries.insert(0, m.StateEntry(name="z", kind=m.StateKind.PARAMETER, tensor=0))), {}),
    ("weight_sets_unsorted", "§5", "ValidationError", "weight set names not sorted",
     "mlp", _weight_sets(lambda ws: ws.insert(0, m.WeightSet(name="b", entries=[]))), {}),
    ("extra_file_storage_out_of_range", "§5", "ValidationError", "ExtraFile.storage past Package.storages",
     "mlp", _extra_files([("a.txt", 99)]), {}),
    ("extra_files_unsorted", "§5", "ValidationError", "extra file names not strictly increasing",
     "mlp", _extra_files([("b.txt", 0), ("a.txt", 1)]), {}),
    ("extra_file_name_control", "§9", "StringClassError", "an extra file name with a control character",
     "mlp", _extra_files([("a\x01", 0)]), {}),
    # Metadata maps (§5, §9)
    ("metadata_unsorted", "§5", "ValidationError", "Package.metadata keys not sorted",
     "mlp", _metadata([("b", "1"), ("a", "2")]), {}),
    ("metadata_duplicate", "§5", "ValidationError", "Package.metadata key twice",
     "mlp", _metadata([("a", "1"), ("a", "2")]), {}),
    ("metadata_key_control", "§9", "StringClassError", "a metadata key with a control character (metadata_key)",
     "mlp", _metadata([("a\x07", "1")]), {}),
    ("metadata_key_empty", "§9", "StringClassError", "an empty metadata key (metadata_key)",
     "mlp", _metadata([("", "1")]), {}),
    # Programs (§7)
    ("programs_unsorted", "§7", "ValidationError", "program names not sorted",
     "multi_program", _swap_programs, {}),
    ("programs_duplicate", "§7", "ValidationError", "two programs with the same name",
     "multi_program", _dup_program, {}),
    ("program_name_missing", "§7", "ValidationError", "Program.name absent",
     "mlp", _set(prog, "name", None), {}),
    ("program_graph_missing", "§7", "ValidationError", "Program.graph absent",
     "mlp", _set(prog, "graph", None), {}),
    ("program_signature_missing", "§7", "ValidationError", "Program.signature absent",
     "mlp", _set(prog, "signature", None), {}),
    ("signature_count", "§7", "ValidationError", "one input spec fewer than graph inputs",
     "mlp", _drop_input_spec, {}),
    ("state_kind_unspecified", "§7", "ValidationError", "StateEntry.kind UNSPECIFIED",
     "mlp", _state_kind_unspecified, {}),
    ("state_tensor_out_of_range", "§7", "ValidationError", "StateEntry.tensor past Package.tensors",
     "mlp", _set(lambda p: prog(p).state[0], "tensor", 99), {}),
    # Graphs (§7)
    ("node_input_undeclared", "§7", "ValidationError", "a node input names a tensor the graph does not declare",
     "mlp", _node_input("nowhere"), {}),
    ("node_names_duplicate", "§7", "ValidationError", "two nodes with the same name",
     "mlp", _dup_node_names, {}),
    ("tensor_values_duplicate", "§7", "ValidationError", "two tensor values with the same name",
     "mlp", _dup_tensor_values, {}),
    ("node_target_missing", "§7", "ValidationError", "Node.target absent",
     "mlp", _set(lambda p: graph(p).nodes[0], "target", None), {}),
    ("argument_union_missing", "§7", "ValidationError", "a node input whose value union is NONE",
     "mlp", _union_missing, {}),
    ("tensor_meta_dtype_unspecified", "§7", "ValidationError", "TensorMeta.dtype UNSPECIFIED",
     "mlp", _tensor_meta("dtype", 0), {}),
    ("tensor_meta_missing", "§7", "ValidationError", "TensorValue.meta absent",
     "mlp", _set(lambda p: graph(p).tensor_values[0], "meta", None), {}),
    ("sym_size_expr_out_of_range", "§7", "ValidationError", "a symbolic size names expression 99",
     "dynamic_batch", _meta_size_expr, {}),
    # Symbolic expressions (§11)
    ("symbol_index_out_of_range", "§11.3", "ValidationError", "a SYMBOL expression names symbol 9",
     "dynamic_batch", _set(lambda p: prog(p).sym_exprs[0], "symbol", 9), {}),
    ("sym_expr_forward_ref", "§11", "ValidationError", "an APPLY argument refers to a later expression",
     "dynamic_batch", _append_exprs(_apply_expr(m.SymOp.ADD, [0, 5])), {}),
    ("sym_expr_self_ref", "§11", "ValidationError", "an APPLY argument refers to itself",
     "dynamic_batch", _append_exprs(_apply_expr(m.SymOp.ADD, [0, 1])), {}),
    ("sym_expr_kind_unspecified", "§11", "ValidationError", "SymExpr.kind UNSPECIFIED",
     "dynamic_batch", _append_exprs(m.SymExpr()), {}),
    ("sym_expr_kind_unknown", "§11", "ValidationError", "SymExpr.kind 200 (unknown)",
     "dynamic_batch", _append_exprs(m.SymExpr(kind=200)), {}),
    ("sym_expr_op_unknown", "§11.4", "ValidationError", "APPLY with op 250",
     "dynamic_batch", _append_exprs(_apply_expr(250, [0])), {}),
    ("sym_expr_is_multiple", "§11.4", "ValidationError", "APPLY IS_MULTIPLE (reserved, never written)",
     "dynamic_batch", _append_exprs(_apply_expr(m.SymOp.IS_MULTIPLE, [0, 0])), {}),
    ("sym_expr_no_args", "§11.4", "ValidationError", "APPLY without arguments",
     "dynamic_batch", _append_exprs(_apply_expr(m.SymOp.ADD, [])), {}),
    ("sym_expr_arity", "§11.4", "ValidationError", "FLOOR_DIV with three operands",
     "dynamic_batch", _append_exprs(_apply_expr(m.SymOp.FLOOR_DIV, [0, 0, 0])), {}),
    ("sym_rational_denominator", "§11.1", "ValidationError", "RATIONAL with denominator 1",
     "dynamic_batch", _denominator, {}),
    ("sym_pow_huge", "§11.6", "LimitError", "3 ** 2**40: an integer beyond 64 bits",
     "dynamic_batch", _huge_pow, {}),
    ("sym_add_overflow", "§11.6", "LimitError", "2**62 + 2**62 overflows int64",
     "dynamic_batch", _int_overflow, {}),
    ("sym_expanded_size", "§11.6", "LimitError", "Max(e, e) chained 30 deep: expanded size 2**31 - 1 > 4096",
     "dynamic_batch", _shared_chain, {}),
    ("range_constraint_out_of_range", "§11.3", "ValidationError", "RangeConstraint.expr past the pool",
     "dynamic_batch", _range_expr, {}),
    ("symbol_duplicate", "§11.3", "ValidationError", "two symbols with the same name",
     "dynamic_batch", _dup_symbol, {}),
    ("symbol_float_hint_nan", "§11.3", "ValidationError", "a float symbol whose hint is NaN",
     "dynamic_batch", _float_symbol_nan, {}),
    # Nesting (§10)
    ("value_nesting", "§10", "LimitError", "example inputs nested 200 lists deep",
     "mlp", _nest_list(200), {}),
    # String classes (§9)
    ("node_name_space", "§9", "StringClassError", "Node.name with a space (local_name)",
     "mlp", _set(lambda p: graph(p).nodes[0], "name", "a b"), {}),
    ("node_name_self", "§9", "StringClassError", "Node.name 'self' (local_name)",
     "mlp", _set(lambda p: graph(p).nodes[0], "name", "self"), {}),
    ("node_name_keyword", "§9", "StringClassError", "Node.name 'lambda' (a Python keyword)",
     "mlp", _set(lambda p: graph(p).nodes[0], "name", "lambda"), {}),
    ("node_name_dunder", "§9", "StringClassError", "Node.name '__class__' (a dunder)",
     "mlp", _set(lambda p: graph(p).nodes[0], "name", "__class__"), {}),
    ("node_name_too_long", "§9", "StringClassError", "Node.name of 1025 characters",
     "mlp", _long_name, {}),
    ("node_name_not_nfkc", "§9", "StringClassError", "Node.name not in NFKC (U+FB01, which Python compiles as 'fi')",
     "mlp", _set(lambda p: graph(p).nodes[0], "name", "\ufb01x"), {}),
    ("state_name_fullwidth_reserved", "§9", "StringClassError",
     "StateEntry.name with a fullwidth 'forward' (NFKC makes it the reserved name)",
     "mlp", _set(lambda p: prog(p).state[0], "name", "\uff46orward"), {}),
    ("node_target_call", "§9", "StringClassError", "Node.target with parentheses (qualified_name)",
     "mlp", _set(lambda p: graph(p).nodes[0], "target", "os.system('x')"), {}),
    ("state_name_reserved", "§9", "StringClassError", "StateEntry.name 'forward' (attr_path reserved name)",
     "mlp", _set(lambda p: prog(p).state[0], "name", "forward"), {}),
    ("state_name_component", "§9", "StringClassError", "StateEntry.name with an empty component",
     "mlp", _set(lambda p: prog(p).state[0], "name", "net..weight"), {}),
    ("device_type_upper", "§9", "StringClassError", "Device.type 'CPU' (device_type)",
     "mlp", _set(lambda p: p.tensors[0].device, "type", "CPU"), {}),
    ("program_name_dunder", "§9", "StringClassError", "Program.name '__init__' (identifier)",
     "mlp", _set(prog, "name", "__init__"), {}),
    ("module_stack_key_newline", "§9", "StringClassError", "ModuleStackEntry.key with a line break (token)",
     "mlp", _set(lambda p: graph(p).nodes[0].metadata.nn_module_stack[0], "key", "L\nx"), {}),
    ("module_call_fqn_call_zero", "§9", "StringClassError", "ModuleCallEntry.fqn 'net@0' (module_call_path)",
     "mlp", _set(lambda p: prog(p).module_call_graph[0], "fqn", "net@0"), {}),
    ("module_stack_path_reserved", "§9", "StringClassError", "ModuleStackEntry.path 'training' (optional_attr_path)",
     "mlp", _set(lambda p: graph(p).nodes[0].metadata.nn_module_stack[1], "path", "training"), {}),
    ("argument_name_keyword", "§9", "StringClassError", "NamedArgument.name 'class' (identifier)",
     "mlp", _set(lambda p: graph(p).nodes[0].inputs[0], "name", "class"), {}),
    ("producer_name_ok_type_bad", "§9", "StringClassError", "Device.type with a slash",
     "mlp", _set(lambda p: p.tensors[0].device, "type", "c/pu"), {}),
    ("extra_meta_key_reserved", "§9", "StringClassError", "NodeMetadata.extra key 'val' (reserved)",
     "mlp", _extra_meta_key("val"), {}),
    ("extra_meta_key_not_identifier", "§9", "StringClassError", "NodeMetadata.extra key 'a-b'",
     "mlp", _extra_meta_key("a-b"), {}),
    ("example_input_key", "§9", "StringClassError", "a dict key of the example inputs that is not an identifier",
     "mlp", _example_key("x'y"), {}),
    ("symbol_name_space", "§9", "StringClassError", "Symbol.name with a space (identifier)",
     "dynamic_batch", _symbol("name", "s 1"), {}),
]

# Strings that break UTF-8 or Unicode, written into a free-text field through MARK (same length).
INVALID_UTF8 = [
    ("utf8_continuation", b"ZQXJ\x80ARKZQXJ", "a lone continuation byte"),
    ("utf8_overlong", b"ZQXJ\xc0\xafRKZQXJ", "an overlong encoding of '/'"),
    ("utf8_surrogate", b"ZQXJ\xed\xa0\x80KZQXJ", "a UTF-8 encoded surrogate U+D800"),
    ("utf8_truncated", b"ZQXJMARKZQX\xe2", "a sequence cut short at the end of the string"),
]


def _free_text(p):
    graph(p).nodes[0].metadata.stack_trace = MARK


# ---------------------------------------------------------------------------
# Encoding-specific mutations of the program bytes

def _msgpack_int(value: int) -> bytes:
    if value < 0:
        return b"\xd3" + struct.pack(">q", value)
    return b"\xcf" + struct.pack(">Q", value)


def _encoding_cases():
    """(name, rule, encoding, error, description, bytes) of files broken inside the program encoding."""
    out = []
    mlp_fb = golden("mlp").read_bytes()
    mlp_pkg, mlp_payloads, mlp_id = decode("mlp")

    def program_of(encoding, mutate=None):
        p = copy.deepcopy(mlp_pkg)
        if mutate:
            mutate(p)
        return _codecs.encode(p, encoding)

    def wrap(encoding, program, features=0):
        return assemble(program, mlp_payloads, encoding, package_id=mlp_id, features=features)

    # Undecodable bytes.
    fb = program_of("flatbuffers")
    out.append(("fb_bad_identifier", "§4", "flatbuffers", "EncodingError", "file identifier is not P2FP",
                wrap("flatbuffers", fb[:4] + b"XXXX" + fb[8:])))
    out.append(("fb_root_offset", "§4", "flatbuffers", "EncodingError", "root offset points past the buffer",
                wrap("flatbuffers", struct.pack("<I", len(fb) + 100) + fb[4:])))
    out.append(("fb_truncated", "§4", "flatbuffers", "EncodingError", "the buffer cut in half (verifier)",
                wrap("flatbuffers", fb[:len(fb) // 2])))
    mp = program_of("msgpack")
    out.append(("msgpack_truncated", "§4", "msgpack", "EncodingError", "MessagePack cut short",
                wrap("msgpack", mp[:len(mp) // 2])))
    out.append(("msgpack_trailing", "§4", "msgpack", "EncodingError", "bytes after the root object",
                wrap("msgpack", mp + b"\xc0")))
    out.append(("msgpack_not_array", "§4", "msgpack", "EncodingError", "the root is a map, not a table array",
                wrap("msgpack", b"\x80")))
    out.append(("msgpack_reserved_byte", "§4", "msgpack", "EncodingError", "the never-used byte 0xc1",
                wrap("msgpack", b"\xc1")))
    js = program_of("json")
    out.append(("json_truncated", "§4", "json", "EncodingError", "JSON cut short",
                wrap("json", js[:len(js) // 2])))
    out.append(("json_trailing", "§4", "json", "EncodingError", "text after the root object",
                wrap("json", js + b" x")))
    out.append(("json_not_object", "§4", "json", "EncodingError", "the root is an array",
                wrap("json", b"[]")))
    out.append(("json_bom", "§4", "json", "EncodingError", "a UTF-8 byte order mark before the document",
                wrap("json", b"\xef\xbb\xbf" + js)))
    # Integers (§10).
    big = "1" + "0" * 5000
    out.append(("json_int_5000_digits", "§10", "json", "LimitError", "an integer of 5001 digits",
                wrap("json", js.replace(
                    b"{", b'{"required_features":' + big.encode() + b",", 1))))
    out.append(("json_int_out_of_range", "§10", "json", "EncodingError", "2**64 in a uint64 field",
                wrap("json", js.replace(b"{", b'{"required_features":18446744073709551616,', 1))))
    out.append(("json_negative_unsigned", "§10", "json", "EncodingError", "-1 in a uint64 field",
                wrap("json", js.replace(b"{", b'{"required_features":-1,', 1))))
    out.append(("json_float_for_int", "§4", "json", "EncodingError", "1.5 in an integer field",
                wrap("json", js.replace(b"{", b'{"required_features":1.5,', 1))))
    out.append(("json_string_for_int", "§4", "json", "EncodingError", "a string in an integer field",
                wrap("json", js.replace(b"{", b'{"required_features":"1",', 1))))
    out.append(("json_bad_float_string", "§4", "json", "EncodingError", "a float written as the string \"bogus\"",
                wrap("json", _json_float_field(js, b'"bogus"'))))
    # NaN spellings (§4): "nan:0x" + 16 lowercase hex digits of a NaN other than the canonical one.
    for name, spelling, what in (
            ("json_nan_canonical_long", b'"nan:0x7ff8000000000000"', "the canonical NaN spelled long (it is \"nan\")"),
            ("json_nan_not_a_nan", b'"nan:0x7ff0000000000000"', "\"nan:0x\" bits of +inf, not a NaN"),
            ("json_nan_uppercase", b'"nan:0x7FF8000000000001"', "uppercase hex digits"),
            ("json_nan_short", b'"nan:0x7ff800000001"', "fewer than 16 hex digits"),
            ("json_nan_prefix", b'"NaN:0x7ff8000000000001"', "\"NaN:\" instead of \"nan:\"")):
        out.append((name, "§4", "json", "EncodingError", f"a float written as {what}",
                    wrap("json", _json_float_field(js, spelling))))
    # Unknown enum value name / union member (§8.2).
    out.append(("json_enum_name_unknown", "§8.2", "json", "VersionError", "an enum value name the reader does not know",
                wrap("json", js.replace(b'"dtype": "FLOAT32"', b'"dtype": "FLOAT99"', 1))))
    out.append(("json_union_name_unknown", "§8.2", "json", "VersionError", "a union member name the reader does not know",
                wrap("json", js.replace(b'"value_type": "TensorArgument"', b'"value_type": "FutureArgument"', 1))))
    out.append(("json_union_index_unknown", "§8.2", "json", "VersionError", "a union member index 200",
                wrap("json", js.replace(b'"value_type": "TensorArgument"', b'"value_type": 200', 1))))
    # Lone surrogate escapes (§9).
    p = copy.deepcopy(mlp_pkg)
    _free_text(p)
    js_mark = _codecs.encode(p, "json")
    out.append(("json_lone_surrogate", "§9", "json", "EncodingError", "a \\ud800 escape without its pair",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\ud800cd", 1))))
    out.append(("json_lone_low_surrogate", "§9", "json", "EncodingError", "a \\udc00 escape without its pair",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\udc00cd", 1))))
    out.append(("json_raw_control", "§4", "json", "EncodingError", "a raw control character inside a string",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\x01cd", 1))))
    out.append(("json_bad_escape", "§4", "json", "EncodingError", "the escape \\q",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\qcd", 1))))
    # JSON syntax and types Python's json module and the decoder refuse (§4, §7).
    def js_sub(old, new):
        assert js.count(old) >= 1, old
        return wrap("json", js.replace(old, new, 1))

    out.append(("json_duplicate_key", "§4", "json", "EncodingError", "a key twice in one object",
                js_sub(b'"producer": {"name": "pt2format",', b'"producer": {"name": "pt2format", "name": "pt2format",')))
    out.append(("json_bare_nan", "§4", "json", "EncodingError", "the bare constant NaN under an unknown key",
                js_sub(b"{", b'{"zz_unknown": NaN,')))
    out.append(("json_struct_missing_field", "§4", "json", "EncodingError", "a SymInt struct without its value",
                js_sub(b'{"expr": -1,\n"value": 16}', b'{"expr": -1}')))
    out.append(("json_struct_extra_field", "§4", "json", "EncodingError", "a SymInt struct with a third key",
                js_sub(b'{"expr": -1,\n"value": 16}', b'{"expr": -1,\n"value": 16, "x": 1}')))
    out.append(("json_bool_for_int", "§4", "json", "EncodingError", "true in the uint64 required_features",
                js_sub(b"{", b'{"required_features": true,')))
    out.append(("json_union_member_without_type", "§4", "json", "EncodingError",
                "a union member without its _type key", js_sub(b'"value_type": "TensorArgument",\n', b"")))
    out.append(("json_unknown_key_too_deep", "§10", "json", "LimitError",
                "2000 nested arrays under a key the schema does not define",
                js_sub(b"{", b'{"zz_unknown": ' + b"[" * 2000 + b"]" * 2000 + b",")))
    # MessagePack integers out of a field's type (§10).
    mp_list = _codecs.encode(mlp_pkg, "msgpack")
    out.append(("msgpack_negative_unsigned", "§10", "msgpack", "EncodingError", "-1 in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, _msgpack_int(-1)))))
    out.append(("msgpack_string_for_int", "§4", "msgpack", "EncodingError", "a string in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xa1x"))))
    out.append(("msgpack_bool_for_int", "§4", "msgpack", "EncodingError", "true in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xc3"))))
    out.append(("msgpack_ext_for_int", "§4", "msgpack", "EncodingError", "an ext value in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xd4\x01\x00"))))
    out.append(("msgpack_map_for_table", "§4", "msgpack", "EncodingError", "a map where the Producer table belongs",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 1, b"\x80"))))
    out.append(("msgpack_too_deep", "§10", "msgpack", "LimitError",
                "2000 nested arrays in a position the schema does not define",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 40, b"\x91" * 2000 + b"\xc0"))))
    out.append(("msgpack_union_type_without_member", "§4", "msgpack", "EncodingError",
                "a union type index with a nil member", wrap("msgpack", _msgpack_first_union(mp_list, 2, member=None))))
    # FlatBuffers union member unknown to the reader: IntValue(x) and FloatValue(bits of x) encode to the
    # same bytes but for the union type byte; that byte, set to 200, is a newer minor's member (§8.2).
    bits = 0x4000000000000000

    def with_example(value):
        def mutate(p):
            prog(p).example_inputs = m.Value(value)
        return mutate

    fb_int = program_of("flatbuffers", with_example(m.IntValue(bits)))
    fb_float = program_of("flatbuffers", with_example(m.FloatValue(struct.unpack("<d", struct.pack("<Q", bits))[0])))
    diff = [i for i, (a, b) in enumerate(zip(fb_int, fb_float)) if a != b]
    assert len(fb_int) == len(fb_float) and len(diff) == 1 and fb_int[diff[0]] == 3, diff
    out.append(("fb_union_index_unknown", "§8.2", "flatbuffers", "VersionError", "a union type index 200",
                wrap("flatbuffers", fb_int[:diff[0]] + bytes([200]) + fb_int[diff[0] + 1:])))
    # Union members (§8.2): an index past the reader's members.
    out.append(("msgpack_union_index_unknown", "§8.2", "msgpack", "VersionError", "a union type index 200",
                wrap("msgpack", _msgpack_first_union(mp_list, 200))))
    return out


def _json_float_field(js: bytes, replacement: bytes) -> bytes:
    """Add a float symbol to programs[0] (mlp has no float field) whose hint is `replacement`."""
    needle = b'"programs": [{"name": "forward"'
    assert js.count(needle) == 1
    return js.replace(needle, needle + b',"symbols":[{"name":"s0","kind":"FLOAT","float_hint":' + replacement + b"}]")


def _msgpack_set_package_field(program: bytes, field_id: int, value: bytes) -> bytes:
    """Re-encode the root array with position `field_id` replaced by the raw msgpack `value`."""
    items, end = _msgpack_array_items(program, 0)
    assert end == len(program)
    while len(items) <= field_id:
        items.append(b"\xc0")
    items[field_id] = value
    return _msgpack_array_header(len(items)) + b"".join(items)


def _msgpack_array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + struct.pack(">H", n)
    return b"\xdd" + struct.pack(">I", n)


def _msgpack_array_items(buf: bytes, pos: int):
    """Raw bytes of each element of the array at `pos`, and the end position."""
    b = buf[pos]
    if 0x90 <= b <= 0x9f:
        n, pos = b & 15, pos + 1
    elif b == 0xdc:
        n, pos = struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    elif b == 0xdd:
        n, pos = struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    else:
        raise ValueError("not an array")
    items = []
    for _ in range(n):
        end = _msgpack_skip(buf, pos)
        items.append(buf[pos:end])
        pos = end
    return items, pos


def _msgpack_skip(buf: bytes, pos: int) -> int:
    import msgpack

    unpacker = msgpack.Unpacker(raw=True, strict_map_key=False)
    unpacker.feed(buf[pos:])
    unpacker.skip()
    return pos + unpacker.tell()


def _msgpack_first_union(program: bytes, index: int, member=...) -> bytes:
    """The first node input's union type index (Argument: [type, member]) set to `index` (and member to `member`)."""
    import msgpack

    tree = msgpack.unpackb(program, raw=False, strict_map_key=False)
    # The first [type, member] pair of an Argument whose member is a TensorArgument (type index 2).
    done = []

    def walk(x):
        if done:
            return x
        if isinstance(x, list):
            if len(x) == 2 and x[0] == 2 and isinstance(x[1], list) and len(x[1]) >= 1 and isinstance(x[1][0], str):
                done.append(True)
                return [index, x[1] if member is ... else member]
            return [walk(e) for e in x]
        return x

    out = msgpack.packb(walk(tree), use_bin_type=True)
    assert done
    return out


# ---------------------------------------------------------------------------
# Container mutations (§2, §3): byte edits of the golden mlp file, header resealed

def _container_cases():
    src = golden("mlp").read_bytes()
    k0 = entry(src, 0)
    k1 = entry(src, 1)
    size = len(src)
    out = []

    def add(name, rule, error, description, data):
        out.append((name, rule, "flatbuffers", error, description, data))

    add("short_file", "§2.1", "HeaderError", "a file of 40 bytes", src[:40])
    add("bad_magic", "§2.2", "HeaderError", "magic byte 1 changed", reseal(bytearray(src[:1] + b"Q" + src[2:])))
    add("header_version_0", "§2.3", "HeaderError", "header_version 0", header_edit(src, "<H", H_VERSION, 0))
    add("header_version_2", "§2.3", "VersionError", "header_version 2", header_edit(src, "<H", H_VERSION, 2))
    add("section_count_0", "§2.4", "HeaderError", "section_count 0 (header_length 64)",
        header_edit(header_edit(src, "<H", H_COUNT, 0), "<I", H_LENGTH, 64))
    add("header_length_wrong", "§2.4", "HeaderError", "header_length not 64 + 48 * count",
        header_edit(src, "<I", H_LENGTH, 64 + 48 * 2 + 8))
    add("header_past_file", "§2.5", "HeaderError", "section_count 200: the table runs past the file",
        header_edit(header_edit(src, "<H", H_COUNT, 200), "<I", H_LENGTH, 64 + 48 * 200))
    add("header_checksum", "§2.6", "HeaderError", "header checksum off by one",
        header_edit(src, "<I", H_CRC, (struct.unpack_from("<I", src, H_CRC)[0] + 1) & 0xFFFFFFFF, seal=False))
    add("file_length_short", "§2.7", "HeaderError", "file_length one less than the file",
        header_edit(src, "<Q", H_FILE_LENGTH, size - 1))
    add("file_extended", "§2.7", "HeaderError", "64 bytes appended, file_length unchanged", src + bytes(64))
    add("format_major_2", "§2.8", "VersionError", "format_major 2", header_edit(src, "<H", H_MAJOR, 2))
    add("format_major_0", "§2.8", "VersionError", "format_major 0", header_edit(src, "<H", H_MAJOR, 0))
    add("header_unknown_feature", "§2.9", "UnsupportedFeatureError", "required_features bit 40 in the header",
        header_edit(src, "<Q", H_FEATURES, 1 << 40))
    add("section_kind_unknown", "§3", "HeaderError", "DATA entry turned into kind 9 without OPTIONAL",
        entry_edit(src, 1, "<H", E_KIND, 9))
    add("program_encoding_unknown", "§3", "EncodingError", "PROGRAM encoding 9",
        entry_edit(src, 0, "<H", E_ENCODING, 9))
    add("data_encoding_not_raw", "§3", "EncodingError", "DATA encoding 1",
        entry_edit(src, 1, "<H", E_ENCODING, 1))
    add("alignment_not_power", "§3", "SegmentError", "PROGRAM alignment 24", entry_edit(src, 0, "<I", E_ALIGN, 24))
    add("program_alignment_small", "§3", "SegmentError", "PROGRAM alignment 4", entry_edit(src, 0, "<I", E_ALIGN, 4))
    add("data_alignment_small", "§3", "SegmentError", "DATA alignment 32", entry_edit(src, 1, "<I", E_ALIGN, 32))
    bad_align = 1 << 20
    add("offset_misaligned", "§3", "SegmentError", "DATA alignment 2**20: its offset is not a multiple",
        entry_edit(src, 1, "<I", E_ALIGN, bad_align))
    add("checksum_kind_unknown", "§3", "HeaderError", "DATA checksum_kind 2", entry_edit(src, 1, "<I", E_CK_KIND, 2))
    add("program_checksum_none", "§3", "HeaderError", "PROGRAM checksum_kind 0",
        entry_edit(entry_edit(src, 0, "<I", E_CK, 0), 0, "<I", E_CK_KIND, 0))
    add("checksum_without_kind", "§3", "HeaderError", "DATA checksum_kind 0 with a non-zero checksum",
        entry_edit(src, 1, "<I", E_CK_KIND, 0))
    add("two_programs", "§3", "HeaderError", "the DATA entry marked PROGRAM",
        entry_edit(entry_edit(src, 1, "<H", E_KIND, 1), 1, "<H", E_ENCODING, 1))
    # Swap the entries: DATA first, PROGRAM second (offsets then out of order as well, but the
    # PROGRAM-is-entry-0 rule is checked first, with the entries).
    buf = bytearray(src)
    e0 = bytes(buf[ENTRY0:ENTRY0 + ENTRY_SIZE])
    e1 = bytes(buf[ENTRY0 + ENTRY_SIZE:ENTRY0 + 2 * ENTRY_SIZE])
    buf[ENTRY0:ENTRY0 + ENTRY_SIZE] = e1
    buf[ENTRY0 + ENTRY_SIZE:ENTRY0 + 2 * ENTRY_SIZE] = e0
    add("program_not_first", "§3", "HeaderError", "DATA entry before the PROGRAM entry", reseal(buf))
    add("sections_overlap", "§3", "SegmentError", "DATA section starts inside the PROGRAM section",
        entry_edit(src, 1, "<Q", E_OFFSET, k1[3] - 64))
    add("section_before_table", "§3", "SegmentError", "PROGRAM offset 64: inside the section table",
        entry_edit(src, 0, "<Q", E_OFFSET, 64))
    # Non-zero padding between PROGRAM and DATA.
    pad_at = k0[3] + k0[4]
    assert pad_at < k1[3], "mlp golden file needs padding before its DATA section"
    add("padding_nonzero", "§3", "SegmentError", "a non-zero byte in the padding before DATA",
        reseal(bytearray(src[:pad_at] + b"\x01" + src[pad_at + 1:])))
    # A hole: DATA moved 64 bytes later (file grown, file_length updated).
    grown = src[:k1[3]] + bytes(64) + src[k1[3]:]
    grown = header_edit(header_edit(grown, "<Q", H_FILE_LENGTH, size + 64), "<Q", ENTRY0 + ENTRY_SIZE + E_OFFSET,
                        k1[3] + 64)
    add("padding_too_long", "§3", "SegmentError", "64 zero bytes of padding before a 64-aligned DATA section",
        grown)
    add("section_past_end", "§3", "SegmentError", "DATA length 64 bytes past the end of the file",
        entry_edit(src, 1, "<Q", E_LENGTH, k1[4] + 64))
    add("trailing_bytes", "§3", "SegmentError", "64 bytes after the last section (file_length updated)",
        header_edit(src + bytes(64), "<Q", H_FILE_LENGTH, size + 64))
    # Checksums (§3).
    for enc in ENCODINGS:
        s = golden("mlp", enc).read_bytes()
        e = entry(s, 0)
        flip = e[3] + e[4] // 2
        out.append((f"program_checksum-{enc}", "§3", enc, "ChecksumError", "one program byte flipped",
                    s[:flip] + bytes([s[flip] ^ 0x20]) + s[flip + 1:]))
    d = k1[3] + 3
    add("data_checksum", "§3", "ChecksumError", "one data byte flipped (DATA section CRC)",
        src[:d] + bytes([src[d] ^ 1]) + src[d + 1:])
    # Storage checksum: flip a data byte and reseal the section CRC, so only Storage.checksum catches it.
    buf = bytearray(src)
    buf[d] ^= 1
    struct.pack_into("<I", buf, ENTRY0 + ENTRY_SIZE + E_CK, zlib.crc32(bytes(buf[k1[3]:k1[3] + k1[4]])))
    add("storage_checksum", "§5", "ChecksumError", "one storage byte flipped, DATA section CRC updated", reseal(buf))
    return out


# ---------------------------------------------------------------------------

def build():
    """{file name: bytes} and the manifest entries, in a fixed order."""
    files = {}
    manifest = []

    def add(name, rule, encoding, error, description, data):
        fname = f"{name}.pt2f"
        assert fname not in files, fname
        files[fname] = data
        manifest.append({"file": fname, "rule": rule, "encoding": encoding, "error": error,
                         "description": description})

    for case in _container_cases():
        add(*case)
    for name, rule, error, description, case, mutate, kw in TREE_CASES:
        for enc in ENCODINGS:
            add(f"{name}-{enc}", rule, enc, error, description, tree_file(case, enc, mutate, **kw))
    for name, raw, description in INVALID_UTF8:
        for enc in ENCODINGS:
            add(f"{name}-{enc}", "§9", enc, "EncodingError", f"invalid UTF-8 in a free-text string: {description}",
                tree_file("mlp", enc, _free_text, patch=patch_mark(raw)))
    for case in _encoding_cases():
        add(*case)
    manifest_bytes = (json.dumps({"comment": "Generated by conformance/make_invalid.py; do not edit.",
                                  "files": manifest}, indent=1, ensure_ascii=False) + "\n").encode()
    return files, manifest_bytes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    files, manifest = build()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.pt2f"):
        if old.name not in files:
            old.unlink()
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    (args.out / "MANIFEST.json").write_bytes(manifest)
    print(f"{len(files)} files in {args.out.name}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
