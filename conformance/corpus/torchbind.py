"""A torchbind custom object (C++ class compiled with load_inline) held by a program."""

from __future__ import annotations

import torch
import torch.nn as nn

from conformance.corpus._case import Program, case

_LIB = ("conformance.oplibs.torchbind",)


class WithObject(nn.Module):
    def __init__(self):
        super().__init__()
        from conformance.oplibs.torchbind import make_scaler

        self.scaler = make_scaler(2.0, 1)
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = torch.ops.pt2f_tb.scaler_apply(self.scaler, self.lin(x))
        return y + self.scaler.apply(x)  # a method call: call_torchbind in the graph


@case("torchbind_object", tags=("slow",), child_imports=_LIB)
def torchbind_object():
    """A pt2f_tb::Scaler object as program state, used by a custom op and through a method call (non-strict)."""
    import conformance.oplibs.torchbind  # noqa: F401 - builds/loads the class (about 30 s uncached)

    return Program(WithObject(), (torch.randn(2, 3),))
