"""exporter/_signature.py: torch's ExportGraphSignature and module call graph -> tables, entry by entry."""

from __future__ import annotations

from mirror_programs import small_ep
from pt2format.exporter._program import export_program


def _member(spec):
    """(kind name, member) of an InputSpec/OutputSpec union."""
    return type(spec.spec).__name__, spec.spec


def test_input_specs_follow_torchs_kinds_names_and_targets():
    ep = small_ep()
    prog = export_program(ep)
    want = [(s.kind.name, s.arg.name, s.target, s.persistent) for s in ep.graph_signature.input_specs]
    got = []
    for spec in prog.signature.input_specs:
        kind, m = _member(spec)
        arg = getattr(m, "arg", None)
        name = getattr(getattr(arg, "value", arg), "name", None)
        target = next((getattr(m, f) for f in ("parameter_name", "buffer_name", "tensor_constant_name",
                                               "custom_obj_name") if getattr(m, f, None) is not None), None)
        got.append((kind, name, target, getattr(m, "persistent", None)))
    assert [g[1] for g in got] == [w[1] for w in want]
    assert [g[2] for g in got] == [w[2] for w in want]
    kinds = {"PARAMETER": "InputToParameterSpec", "BUFFER": "InputToBufferSpec",
             "CONSTANT_TENSOR": "InputToTensorConstantSpec", "USER_INPUT": "UserInputSpec"}
    assert [g[0] for g in got] == [kinds[w[0]] for w in want]
    for g, w in zip(got, want):
        if w[0] == "BUFFER":
            assert bool(g[3]) == w[3]  # the non-persistent buffer stays non-persistent


def test_output_specs_follow_torchs_mutations_and_user_outputs():
    ep = small_ep()
    prog = export_program(ep)
    want = [(s.kind.name, s.arg.name, s.target) for s in ep.graph_signature.output_specs]
    got = [_member(s) for s in prog.signature.output_specs]
    assert [k for k, _ in got] == [{"BUFFER_MUTATION": "BufferMutationSpec", "USER_OUTPUT": "UserOutputSpec"}[w[0]]
                                   for w in want]
    for (kind, member), (want_kind, name, target) in zip(got, want):
        if want_kind == "BUFFER_MUTATION":
            assert (member.arg.name, member.buffer_name) == (name, target)
        else:
            assert member.arg.value.name == name


def test_module_call_graph_keeps_torchs_entries_and_argument_names():
    ep = small_ep()
    prog = export_program(ep)
    assert [e.fqn for e in prog.module_call_graph] == [e.fqn for e in ep.module_call_graph]
    root = prog.module_call_graph[0].signature
    torch_root = ep.module_call_graph[0].signature
    assert list(root.forward_arg_names) == list(torch_root.forward_arg_names)
    assert [getattr(a.value, "name", None) for a in root.inputs] == [a.name for a in torch_root.inputs]
    assert len(root.outputs) == len(torch_root.outputs)
