"""Every `pt2f_index` field out of range, every `pt2f_required` field absent, every `pt2f_keys` vector with
keys out of order or repeated and every `pt2f_value` field without its member or value is refused by all three
readers at the same place.

The checks are generated from the schema (schema/codegen/rules.py), so this
test starts from the schema too: it lists the attributed fields itself, needs
one case per field (a new attribute without a case here fails), puts a value
just past the range the attribute and SPEC.md state (or no value at all) into
a golden file, and expects a ValidationError whose path names that field from
the Python, C++ and TypeScript readers alike.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from conformance import make_invalid as M
from pt2format._generated import model as m

ROOT = Path(__file__).resolve().parents[2]


def _schema_rules(attribute: str) -> set:
    """(table, field) of every field with `attribute`, read from flatc's binary schema of schema/pt2format.fbs."""
    sys.path.insert(0, str(ROOT / "schema"))
    from codegen.bfbs import build_bfbs

    with tempfile.TemporaryDirectory() as d:
        s = build_bfbs(Path(d))
    return {(o.short, f.name) for o in s.objects for f in o.fields if attribute in f.attributes}


def _first_program(p):
    return p.programs[0]


def _meta0(p):
    return p.programs[0].graph.tensor_values[0].meta


# (table, field) -> (golden case, mutation, expected path, minor). Each value is the first one out of range:
# the length itself, or length + 1 for "from 1" fields; -2 for "or -1" fields would test the sign, so those
# use the length too.
def _cases():
    def state(p):
        p.programs[0].state[0].tensor = len(p.tensors)

    def weight_set(p):
        e = p.programs[0].state[0]
        p.weight_sets = [m.WeightSet(name="base", entries=[m.StateEntry(name=e.name, kind=e.kind, tensor=len(p.tensors))])]

    def unbacked(p):
        prog = _first_program(p)
        prog.graph.nodes[0].metadata.unbacked_bindings = [m.UnbackedBinding(symbol=len(prog.symbols))]

    def guard_source(p):
        prog = _first_program(p)
        prog.guard_sources = [m.GuardSource(symbol=len(prog.symbols))]

    def input_guard(p):
        prog = _first_program(p)
        prog.input_guards = [len(prog.sym_exprs)]

    def range_constraint(p):
        prog = _first_program(p)
        prog.range_constraints[0].expr = len(prog.sym_exprs)

    def sizes(p):
        _meta0(p).sizes[0].expr = len(_first_program(p).sym_exprs)

    def strides(p):
        _meta0(p).strides[0].expr = len(_first_program(p).sym_exprs)

    def storage_offset(p):
        _meta0(p).storage_offset = m.SymInt(expr=len(_first_program(p).sym_exprs), value=0)

    def sym_value(cls, sym, group):
        def mutate(p):
            g = _first_program(p).graph
            getattr(g, group).append(cls(name="s_extra", value=sym(expr=len(_first_program(p).sym_exprs))))
        return mutate

    def storage_segment(p):
        p.storages[0].segment = len(p.segments)

    def segment_file(p):
        p.segments[0].file = len(p.shard_files) + 1

    def segment_external(p):
        p.segments[0].external = len(p.external_files) + 1

    def extra_file(p):
        p.extra_files = [m.ExtraFile(name="notes.txt", storage=len(p.storages))]

    return {
        ("StateEntry", "tensor"): ("mlp", state, "programs[0].state[0].tensor", 0),
        ("StateEntry", "tensor", "weight_sets"): ("mlp", weight_set, "weight_sets[0].entries[0].tensor", 1),
        ("UnbackedBinding", "symbol"): ("dynamic_batch", unbacked,
                                        "programs[0].graph.nodes[0].metadata.unbacked_bindings[0].symbol", 0),
        ("GuardSource", "symbol"): ("dynamic_batch", guard_source, "programs[0].guard_sources[0].symbol", 1),
        ("Program", "input_guards"): ("dynamic_batch", input_guard, "programs[0].input_guards[0]", 1),
        ("RangeConstraint", "expr"): ("dynamic_batch", range_constraint, "programs[0].range_constraints[0].expr", 0),
        ("SymInt", "expr"): ("dynamic_batch", sizes, "programs[0].graph.tensor_values[0].meta.sizes[0].expr", 0),
        ("SymInt", "expr", "strides"): ("dynamic_batch", strides,
                                        "programs[0].graph.tensor_values[0].meta.strides[0].expr", 0),
        ("SymInt", "expr", "storage_offset"): ("dynamic_batch", storage_offset,
                                               "programs[0].graph.tensor_values[0].meta.storage_offset.expr", 0),
        ("SymInt", "expr", "sym_int_values"): ("dynamic_batch", sym_value(m.SymIntValue, m.SymInt, "sym_int_values"),
                                               "programs[0].graph.sym_int_values[{last}].value.expr", 0),
        ("SymFloat", "expr"): ("dynamic_batch", sym_value(m.SymFloatValue, m.SymFloat, "sym_float_values"),
                               "programs[0].graph.sym_float_values[{last}].value.expr", 0),
        ("SymBool", "expr"): ("dynamic_batch", sym_value(m.SymBoolValue, m.SymBool, "sym_bool_values"),
                              "programs[0].graph.sym_bool_values[{last}].value.expr", 0),
        ("Storage", "segment"): ("mlp", storage_segment, "storages[0].segment", 0),
        ("Segment", "file"): ("mlp", segment_file, "segments[0].file", 0),
        ("Segment", "external"): ("mlp", segment_external, "segments[0].external", 0),
        ("ExtraFile", "storage"): ("mlp", extra_file, "extra_files[0].storage", 1),
    }


def _at(p, path: str):
    """The object at a dotted path such as `programs[0].graph.nodes[0]` of a model tree."""
    for part in path.split("."):
        name, _, index = part.partition("[")
        p = getattr(p, name)
        if index:
            p = p[int(index[:-1])]
    return p


def _unset(where: str, field: str):
    def mutate(p):
        setattr(_at(p, where), field, None)
    return mutate


def _appended(where: str, group: str, make):
    def mutate(p):
        getattr(_at(p, where), group).append(make())
    return mutate


def _required_cases():
    """(table, field) -> (golden case, mutation, expected path, minor): the field absent where a golden file
    has the table, or a table with it absent appended where none has."""
    g = "programs[0].graph"
    out = {}
    for table, field, case, where in (
            ("Program", "name", "mlp", "programs[0]"), ("Program", "graph", "mlp", "programs[0]"),
            ("Program", "signature", "mlp", "programs[0]"), ("StateEntry", "name", "mlp", "programs[0].state[0]"),
            ("Node", "name", "mlp", f"{g}.nodes[0]"), ("Node", "target", "mlp", f"{g}.nodes[0]"),
            ("TensorValue", "name", "mlp", f"{g}.tensor_values[0]"),
            ("TensorValue", "meta", "mlp", f"{g}.tensor_values[0]"),
            ("Symbol", "name", "custom_op", "programs[0].symbols[0]"),
            ("GraphArgument", "graph", "cond", f"{g}.nodes[2].inputs[1].value")):
        out[(table, field)] = (case, _unset(where, field), f"{where}.{field}", 0)
    new = "{last}"
    for table, field, where, group, make, path in (
            ("WeightSet", "name", "", "weight_sets", lambda: m.WeightSet(name=None), "weight_sets[0].name"),
            ("CustomObject", "name", "programs[0]", "custom_objects", lambda: m.CustomObject(name=None),
             "programs[0].custom_objects[0].name"),
            ("SymIntValue", "name", g, "sym_int_values", lambda: m.SymIntValue(name=None, value=m.SymInt(-1, 0)),
             f"{g}.sym_int_values[{new}].name"),
            ("SymFloatValue", "name", g, "sym_float_values",
             lambda: m.SymFloatValue(name=None, value=m.SymFloat(-1, 0.0)), f"{g}.sym_float_values[{new}].name"),
            ("SymBoolValue", "name", g, "sym_bool_values",
             lambda: m.SymBoolValue(name=None, value=m.SymBool(-1, False)), f"{g}.sym_bool_values[{new}].name"),
            ("CustomObjArgument", "name", g, "custom_obj_values",
             lambda: m.CustomObjArgument(name=None, class_fqn="torch.classes.demo.Obj"),
             f"{g}.custom_obj_values[{new}].name"),
            ("TokenArgument", "name", g, "inputs", lambda: m.Argument(m.TokenArgument(name=None)),
             f"{g}.inputs[{new}].value.name"),
            ("TreeSpecArgument", "spec", g, "inputs", lambda: m.Argument(m.TreeSpecArgument(spec=None)),
             f"{g}.inputs[{new}].value.spec"),
            ("InputToConstantInputSpec", "name", "programs[0].signature", "input_specs",
             lambda: m.InputSpec(m.InputToConstantInputSpec(name=None)),
             f"programs[0].signature.input_specs[{new}].spec.name")):
        out[(table, field)] = ("mlp", _appended(where, group, make) if where else
                               (lambda group, make: lambda p: getattr(p, group).append(make()))(group, make), path, 1)
    return out


def _entries(*keys):
    return [m.StringEntry(key=k, value="v") for k in keys]


def _keys_cases():
    """(table, field) -> (golden case, mutation, expected path, minor): two elements whose keys break the
    field's `pt2f_keys` rule -- out of code point order ("sorted": "b" before "a", or the same key twice) or
    repeated ("unique") -- and the path of the second one's key."""
    import copy

    def dup_program(p):
        p.programs.append(copy.deepcopy(p.programs[0]))

    def package_metadata(p):
        p.metadata = _entries("b", "a")

    def program_metadata(p):
        p.programs[0].metadata = _entries("k", "k")

    def node_extra(p):
        node = p.programs[0].graph.nodes[0]
        if node.metadata is None:
            node.metadata = m.NodeMetadata()
        node.metadata.extra = _entries("\u00e9", "z")  # é (U+00E9) sorts after z (U+007A)

    def shards(p):
        p.shard_files = [m.ShardFile(name="w.bin"), m.ShardFile(name="w.bin")]

    def externals(p):
        p.external_files = [m.ExternalFile(name="w.bin", format=1), m.ExternalFile(name="w.bin", format=1)]

    def extra_files(p):
        p.extra_files = [m.ExtraFile(name="b.txt", storage=0), m.ExtraFile(name="a.txt", storage=0)]

    def weight_sets(p):
        p.weight_sets = [m.WeightSet(name="tuned"), m.WeightSet(name="base")]

    def weight_entries(p):
        e = p.programs[0].state[0]
        p.weight_sets = [m.WeightSet(name="base", entries=[m.StateEntry(name="w", kind=e.kind, tensor=0),
                                                           m.StateEntry(name="v", kind=e.kind, tensor=0)])]

    def parts(p):
        p.tensors[0].parts = [m.TensorPart(name="values", tensor=0), m.TensorPart(name="values", tensor=0)]

    def symbols(p):
        prog = _first_program(p)
        prog.symbols.append(copy.deepcopy(prog.symbols[0]))

    return {
        ("Package", "programs"): ("mlp", dup_program, "programs[1].name", 0),
        ("Package", "metadata"): ("mlp", package_metadata, "metadata[1].key", 0),
        ("Program", "metadata"): ("mlp", program_metadata, "programs[0].metadata[1].key", 0),
        ("NodeMetadata", "extra"): ("mlp", node_extra, "programs[0].graph.nodes[0].metadata.extra[1].key", 0),
        ("Package", "shard_files"): ("mlp", shards, "shard_files[1].name", 0),
        ("Package", "external_files"): ("mlp", externals, "external_files[1].name", 1),
        ("Package", "extra_files"): ("mlp", extra_files, "extra_files[1].name", 0),
        ("Package", "weight_sets"): ("mlp", weight_sets, "weight_sets[1].name", 1),
        ("WeightSet", "entries"): ("mlp", weight_entries, "weight_sets[0].entries[1].name", 1),
        ("Tensor", "parts"): ("mlp", parts, "tensors[0].parts[1].name", 1),
        ("Program", "symbols"): ("dynamic_batch", symbols, "programs[0].symbols[{last}].name", 0),
    }


def _set(where: str, field: str, value):
    def mutate(p):
        setattr(_at(p, where), field, value)
    return mutate


def _value_cases():
    """(table, field[, variant]) -> (golden case, mutation, expected path, minor): a `pt2f_value` field holding
    what SPEC.md forbids -- no union member, 0 (UNSPECIFIED), or a number its enum does not declare (the
    values are SPEC.md's: ChecksumKind 0-1, ExternalFormat 1-2, SymExprKind 1-10)."""
    g = "programs[0].graph"

    def external(**kw):
        def mutate(p):
            p.external_files = [m.ExternalFile(name="w.bin", **{"format": 1, **kw})]
        return mutate

    def mixed_item(p):  # a 1.1 MixedListArgument whose second item has no member
        inp = _at(p, f"{g}.nodes[0].inputs[0]")
        inp.value = m.MixedListArgument(items=[m.Argument(value=inp.value), m.Argument(value=None)])

    def map_entry(p):
        _at(p, f"{g}.nodes[0].inputs[0]").value = m.StringToArgumentMapArgument(
            entries=[m.ArgumentMapEntry(key="a", value=m.Argument(value=None))])

    return {
        ("Argument", "value"): ("mlp", mixed_item, f"{g}.nodes[0].inputs[0].value.items[1].value", 1),
        ("Argument", "value", "map entry"): ("mlp", map_entry, f"{g}.nodes[0].inputs[0].value.entries[0].value.value",
                                             0),
        ("Argument", "value", "graph output"): ("mlp", _set(f"{g}.outputs[0]", "value", None),
                                                f"{g}.outputs[0].value", 0),
        ("SymExpr", "kind"): ("dynamic_batch", _set("programs[0].sym_exprs[0]", "kind", 0),
                              "programs[0].sym_exprs[0].kind", 0),
        ("SymExpr", "kind", "undeclared"): ("dynamic_batch", _set("programs[0].sym_exprs[0]", "kind", 11),
                                            "programs[0].sym_exprs[0].kind", 0),
        ("TensorMeta", "dtype"): ("mlp", _set(f"{g}.tensor_values[0].meta", "dtype", 0),
                                  f"{g}.tensor_values[0].meta.dtype", 0),
        ("Storage", "checksum_kind"): ("mlp", _set("storages[0]", "checksum_kind", 2), "storages[0].checksum_kind", 0),
        ("ExternalFile", "format"): ("mlp", external(format=0), "external_files[0].format", 1),
        ("ExternalFile", "format", "undeclared"): ("mlp", external(format=3), "external_files[0].format", 1),
        ("ExternalFile", "checksum_kind"): ("mlp", external(checksum_kind=2), "external_files[0].checksum_kind", 1),
        ("NamedArgument", "value"): ("mlp", _set(f"{g}.nodes[0].inputs[0]", "value", None),
                                     f"{g}.nodes[0].inputs[0].value", 0),
        ("InputSpec", "spec"): ("mlp", _set("programs[0].signature.input_specs[0]", "spec", None),
                                "programs[0].signature.input_specs[0].spec", 0),
        ("OutputSpec", "spec"): ("mlp", _set("programs[0].signature.output_specs[0]", "spec", None),
                                 "programs[0].signature.output_specs[0].spec", 0),
    }


CASES = {**_cases(), **{("required",) + k: v for k, v in _required_cases().items()},
         **{("keys",) + k: v for k, v in _keys_cases().items()},
         **{("value",) + k: v for k, v in _value_cases().items()}}


def test_every_index_attribute_has_a_case():
    assert _schema_rules("pt2f_index") == {k[:2] for k in CASES if k[0] not in ("required", "keys", "value")}


def test_every_keys_attribute_has_a_case():
    assert _schema_rules("pt2f_keys") == {k[1:3] for k in CASES if k[0] == "keys"}


def test_every_value_attribute_has_a_case():
    assert _schema_rules("pt2f_value") == {k[1:3] for k in CASES if k[0] == "value"}


def test_every_required_attribute_has_a_case():
    assert _schema_rules("pt2f_required") == {k[1:3] for k in CASES if k[0] == "required"}




@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """key -> (file, expected path), one FlatBuffers file per case; and the same case in MessagePack and JSON."""
    d = tmp_path_factory.mktemp("index_rules")
    out = {}
    for key, (case, mutate, path, minor) in CASES.items():
        box = {}

        def record(p, mutate=mutate, minor=minor):
            graph, sig = p.programs[0].graph, p.programs[0].signature
            mutate(p)
            p.format_version.minor = max(p.format_version.minor, minor)  # 1.1 fields in a 1.1 file
            box["last"] = {g: len(getattr(graph, g)) - 1 for g in
                           ("sym_int_values", "sym_float_values", "sym_bool_values", "custom_obj_values", "inputs")}
            box["last"]["input_specs"] = len(sig.input_specs) - 1 if sig is not None else 0
            box["last"]["symbols"] = len(p.programs[0].symbols) - 1

        for enc in M.ENCODINGS:
            name = "_".join(key) + f"-{enc}.pt2f"
            (d / name).write_bytes(M.tree_file(case, enc, record))
            group = next((g for g in box["last"] if f".{g}[" in path), None)
            out[(key, enc)] = (d / name, path.format(last=box["last"][group]) if group else path)
    return out


def _python(file):
    import pt2format
    from pt2format.errors import Pt2FormatError

    try:
        pt2format.validate(file)
    except Pt2FormatError as e:
        return type(e).__name__, e.path
    return "OK", None


def test_python_reader(files):
    for (key, enc), (file, path) in files.items():
        assert _python(file) == ("ValidationError", path), (key, enc)


@pytest.mark.native
def test_cpp_reader(files):
    import native_util_cpp as U

    why = U.missing_toolchain()
    if why:
        pytest.fail(f"C++ toolchain missing: {why}")
    build = U.build("release")
    for (key, enc), (file, path) in files.items():
        code, line, found = U.error_at(build, file)
        assert code == U.EXIT_BAD_FILE and "ValidationError" in line, (key, enc, line)
        assert found == path, (key, enc, line)


@pytest.mark.native
def test_ts_reader(files):
    import native_util_ts as U

    why = U.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader needs Node.js: {why}")
    U.build()
    by_file = U.errors_at([f for f, _ in files.values()])
    for (key, enc), (file, path) in files.items():
        error, found, r = by_file[str(file)]
        assert error == "ValidationError" and found == path, (key, enc, r)
