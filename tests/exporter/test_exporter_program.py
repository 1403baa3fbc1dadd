"""exporter/_program.py: one ExportedProgram -> a `Program` table and a `Package`, checked against torch's program."""

from __future__ import annotations

import pytest
import torch

import pt2format
from mirror_programs import dynamic_ep, small_ep
from pt2format._generated.model import StateKind
from pt2format.errors import ExportError
from pt2format.exporter._program import export_package, export_program


def test_state_entries_are_torchs_state_with_torchs_roles():
    ep = small_ep()
    prog = export_program(ep)
    non_persistent = set(ep.graph_signature.non_persistent_buffers)
    want = {}
    for name, t in ep.state_dict.items():
        want[name] = StateKind.PARAMETER if isinstance(t, torch.nn.Parameter) else StateKind.BUFFER
    for name, c in ep.constants.items():
        want[name] = StateKind.NON_PERSISTENT_BUFFER if name in non_persistent else StateKind.TENSOR_CONSTANT
    assert {e.name: e.kind for e in prog.state} == want


def test_range_constraints_opsets_and_verifiers_are_torchs():
    ep = dynamic_ep()
    prog = export_program(ep)
    assert len(prog.range_constraints) == len(ep.range_constraints)
    (vr,) = ep.range_constraints.values()
    stored = prog.range_constraints[0].range
    assert (stored.lower, stored.upper) == (int(vr.lower), int(vr.upper))
    assert {o.namespace: o.version for o in prog.opsets}["aten"] == torch._C._get_max_operator_version()
    assert list(prog.verifiers) == [v.dialect for v in ep.verifiers]


def test_example_inputs_are_stored_as_torch_keeps_them():
    ep = small_ep()
    prog = export_program(ep)
    args, kwargs = ep.example_inputs
    top = prog.example_inputs.value
    assert top.is_tuple and len(top.items) == 2
    assert len(top.items[0].value.items) == len(args)
    assert [e.key.value.value for e in top.items[1].value.entries] == list(kwargs)
    assert export_program(ep, example_inputs=False).example_inputs is None


def test_package_header_and_shared_tables():
    ep = small_ep()
    pkg, payloads = export_package({"b": ep, "a": ep})
    # Labelled with the smallest minor defining what it uses (SPEC.md §8.1): this program uses no name of
    # the newest minor (1.2 added is_size and fake_device only).
    assert pkg.format_version.major == pt2format.FORMAT_VERSION[0]
    assert pkg.format_version.minor < pt2format.FORMAT_VERSION[1]
    assert pkg.producer.torch_version == str(torch.__version__)
    assert [p.name for p in pkg.programs] == ["a", "b"]  # name order
    single, _ = export_package(ep)
    assert len(pkg.storages) == len(single.storages)  # the same weights are stored once
    assert len(payloads) == len(pkg.storages)


def test_not_a_program_is_refused():
    with pytest.raises(ExportError, match="ExportedProgram"):
        export_program(torch.nn.Linear(2, 2))
    with pytest.raises(ExportError, match="non-empty"):
        export_package({})
