"""Invalid files made from schema trees: one field of a decoded golden program changed, then re-encoded."""

from __future__ import annotations

import copy

from pt2format._generated import model as m

from conformance._invalid_bytes import MARK


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


def _mixed_item_missing(p):
    """Node input 0 as a 1.1 MixedListArgument: its old value, then an item whose value union is NONE."""
    p.format_version.minor = 1
    inp = graph(p).nodes[0].inputs[0]
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value), m.Argument(value=None)])


def _mixed_item_undeclared(p):
    """Node input 0 as a 1.1 MixedListArgument: its old value, then a tensor the graph does not declare."""
    p.format_version.minor = 1
    inp = graph(p).nodes[0].inputs[0]
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value),
                                           m.Argument(value=m.TensorArgument(name="nowhere"))])


def _mixed_list_in_1_0(p):
    """Node input 0 as a MixedListArgument (a 1.1 union member) holding its old value, in a file labelled 1.0."""
    inp = graph(p).nodes[0].inputs[0]
    inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value)])


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
    # A label older than the content (§8.1): a 1.0 file using a 1.1 name, each kind once.
    ("label_older_than_field", "§8.1", "ValidationError", "Graph.custom_meta (1.1) in a file labelled 1.0",
     "mlp", _set(graph, "custom_meta", m.MapValue(entries=[])), {}),
    ("label_older_than_union_member", "§8.1", "ValidationError",
     "a node input as a MixedListArgument (a 1.1 member) in a file labelled 1.0", "mlp", _mixed_list_in_1_0, {}),
    ("label_older_than_feature_bit", "§8.1", "ValidationError",
     "required_features bit 2 (META_STORAGES, 1.1) in a file labelled 1.0", "mlp",
     _set(lambda p: p, "required_features", 4), {}),
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
    ("mixed_list_item_union_missing", "§7", "ValidationError",
     "an item of a node input's MixedListArgument whose value union is NONE", "mlp", _mixed_item_missing, {}),
    ("mixed_list_item_undeclared", "§7", "ValidationError",
     "an item of a node input's MixedListArgument names a tensor the graph does not declare", "mlp",
     _mixed_item_undeclared, {}),
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
