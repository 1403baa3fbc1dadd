"""loaders/_program.py: a `Package` -> an ExportedProgram equal to torch's: state, constants, signature, ranges."""

from __future__ import annotations

import pytest
import torch

from mirror_programs import dynamic_ep, small_ep, small_inputs
from pt2format.errors import LoadError, VersionError
from pt2format.exporter import export_package
from pt2format.loaders import build_program
from pt2format.vocab import origins


def _load(ep, **kw):
    pkg, payloads = export_package(ep)
    copies = [memoryview(bytearray(p)) for p in payloads]
    return pkg, build_program(pkg, None, lambda i: copies[i], **kw)


def test_state_and_constants_are_torchs_bit_for_bit():
    ep = small_ep()
    _, loaded = _load(ep)
    assert list(loaded.state_dict) == list(ep.state_dict)
    for k, v in ep.state_dict.items():
        assert type(loaded.state_dict[k]) is type(v) and torch.equal(loaded.state_dict[k], v)
    assert set(loaded.constants) == set(ep.constants)
    for k, v in ep.constants.items():
        assert torch.equal(loaded.constants[k], v)
    assert loaded.graph_signature == ep.graph_signature
    assert [v.dialect for v in loaded.verifiers] == [v.dialect for v in ep.verifiers]


def test_module_behaves_as_torchs_including_the_buffer_it_mutates():
    ep = small_ep()
    _, loaded = _load(ep)
    args, kwargs = small_inputs()
    ours, theirs = loaded.module(), ep.module()
    a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
    assert torch.equal(a["out"], b["out"]) and torch.equal(a["aux"][0], b["aux"][0])
    assert torch.equal(ours.count, theirs.count)


def test_example_inputs_and_ranges_are_torchs():
    ep = dynamic_ep()
    _, loaded = _load(ep)
    (x,), _ = loaded.example_inputs
    assert torch.equal(x, ep.example_inputs[0][0])
    assert {str(k): (v.lower, v.upper) for k, v in loaded.range_constraints.items()} == \
           {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}


def test_weights_false_gives_meta_state_of_torchs_shapes():
    ep = small_ep()
    pkg, _ = export_package(ep)
    loaded = build_program(pkg, None, None, weights=False)
    for k, v in ep.state_dict.items():
        t = loaded.state_dict[k]
        assert t.is_meta and t.shape == v.shape and t.dtype == v.dtype


def test_loaded_tensors_remember_their_file_row():
    ep = small_ep()
    pkg, payloads = export_package(ep)
    copies = [memoryview(bytearray(p)) for p in payloads]
    loaded = build_program(pkg, None, lambda i: copies[i], file_key=("f", 1, 2, 3))
    o = origins.origin_of(loaded.state_dict["lin.weight"])
    assert o is not None and o.file == ("f", 1, 2, 3)


def test_newer_major_and_missing_views_are_refused():
    pkg, _ = export_package(small_ep())
    with pytest.raises(LoadError, match="storage_view"):
        build_program(pkg, None, None)
    pkg.format_version.major += 1
    with pytest.raises(VersionError):
        build_program(pkg, None, None, weights=False)
