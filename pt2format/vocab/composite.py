"""Composite tensors: the component names of each sparse layout, and how a tensor subclass is named."""

from __future__ import annotations

import torch


#: Component names of each sparse layout, in the order the loader passes them to torch.
SPARSE_PARTS = {
    torch.sparse_coo: ("indices", "values"),
    torch.sparse_csr: ("crow_indices", "col_indices", "values"),
    torch.sparse_bsr: ("crow_indices", "col_indices", "values"),
    torch.sparse_csc: ("ccol_indices", "row_indices", "values"),
    torch.sparse_bsc: ("ccol_indices", "row_indices", "values"),
}


def class_fqn(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
