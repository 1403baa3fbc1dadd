"""pt2format.vocab.symbols: the opaque unary sympy functions torch generates, by name."""

from __future__ import annotations

from torch.utils._sympy import functions as F

from pt2format.vocab import symbols


def test_opaque_unary_names_are_torchs_generated_classes():
    torch_names = {n[len("OpaqueUnaryFn_"):] for n in dir(F) if n.startswith("OpaqueUnaryFn_")}
    assert set(symbols.OPAQUE_UNARY) == torch_names
    assert len(set(symbols.OPAQUE_UNARY.values())) == len(symbols.OPAQUE_UNARY)
