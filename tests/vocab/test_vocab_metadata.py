"""pt2format.vocab.metadata: the tensor_meta both directions derive, equal to torch's own derivation."""

from __future__ import annotations

import pytest
import torch
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from pt2format.vocab import metadata

@pytest.mark.parametrize("make", [lambda: torch.randn(2, 3), lambda: torch.randn(3, 2).t(),
                                  lambda: torch.randn(1, 3, 4, 4).to(memory_format=torch.channels_last),
                                  lambda: torch.zeros(0, 5, dtype=torch.int8)])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_derived_tensor_meta_is_torchs(make, requires_grad):
    t = make()
    want = _extract_tensor_metadata(t)._replace(requires_grad=requires_grad)
    for _ in range(2):  # the second answer comes from the cache
        got, static = metadata.derived_tensor_meta(t, requires_grad)
        assert got == want and static
