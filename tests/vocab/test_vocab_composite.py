"""pt2format.vocab.composite: sparse component names and subclass names, against torch's sparse API."""

from __future__ import annotations

import warnings

import pytest
import torch

from pt2format.vocab import composite

@pytest.mark.parametrize("layout", list(composite.SPARSE_PARTS), ids=str)
def test_sparse_parts_are_torchs_component_accessors(layout):
    dense = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = dense.to_sparse(layout=layout, blocksize=(1, 1) if layout in (torch.sparse_bsr, torch.sparse_bsc) else None)
        parts = [getattr(t, name)() for name in composite.SPARSE_PARTS[layout]]  # each name is torch's accessor
        ctor = torch.sparse_coo_tensor if layout is torch.sparse_coo else torch.sparse_compressed_tensor
        kw = {} if layout is torch.sparse_coo else {"layout": layout}
        rebuilt = ctor(*parts, t.shape, **kw)  # in the order the constructor takes them
    assert torch.equal(rebuilt.to_dense(), dense)


def test_class_names_are_qualified_names():
    assert composite.class_fqn(torch.nn.Parameter) == "torch.nn.parameter.Parameter"
