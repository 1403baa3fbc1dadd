"""loaders/_signature.py: signature and module call graph tables -> torch's own objects, equal to the original."""

from __future__ import annotations

import pytest

from mirror_programs import small_ep
from pt2format.errors import LoadError
from pt2format.exporter._program import export_program
from pt2format.loaders._signature import module_call_graph, signature
from pt2format.loaders._treespec import TreeSpecLoader


def _constant(member, path):
    return getattr(member, "value", None)


def test_graph_signature_equals_torchs():
    ep = small_ep()
    prog = export_program(ep)
    assert signature(prog.signature, _constant) == ep.graph_signature


def test_module_call_graph_equals_torchs():
    ep = small_ep()
    prog = export_program(ep)
    rebuilt = module_call_graph(prog.module_call_graph, _constant, TreeSpecLoader("forward"))
    assert [e.fqn for e in rebuilt] == [e.fqn for e in ep.module_call_graph]
    ours, theirs = rebuilt[0].signature, ep.module_call_graph[0].signature
    assert ours.inputs == theirs.inputs and ours.outputs == theirs.outputs
    assert ours.in_spec == theirs.in_spec and ours.out_spec == theirs.out_spec
    assert ours.forward_arg_names == theirs.forward_arg_names


def test_a_missing_signature_is_a_load_error():
    with pytest.raises(LoadError, match="missing graph signature"):
        signature(None, _constant)


def test_a_module_path_with_an_empty_atom_is_refused():
    prog = export_program(small_ep())
    entry = prog.module_call_graph[0]
    entry.fqn = "lin..weight"  # an empty atom: no attribute path torch could have written
    with pytest.raises(LoadError) as e:
        module_call_graph([entry], _constant, TreeSpecLoader("forward"))
    assert "module_call_graph[0].fqn" in str(e.value)
