"""pt2format.vocab.inputs: user-input placeholders and the key paths torch's module() gives them."""

from __future__ import annotations

import inspect

from torch.export import _unlift

from mirror_programs import small_ep
from pt2format.vocab import inputs


def test_input_paths_are_torchs():
    ep = small_ep()
    # what torch's module() computes, from the unlifted module's own forward signature
    want = _unlift._get_input_paths(ep.example_inputs, inspect.signature(ep.module().forward))
    assert inputs.input_paths(ep) == want


def test_user_input_placeholders_follow_the_signature():
    ep = small_ep()
    names = [n.name for n in inputs.user_input_placeholders(ep)]
    assert names == list(ep.graph_signature.user_inputs)
