"""pt2format.vocab.operators: the builtin allow-list and target names, against torch's own export serializer."""

from __future__ import annotations

import math
import operator

import pytest
import torch
from torch._export.serde.serialize import GraphModuleDeserializer, GraphModuleSerializer

from pt2format.vocab.operators import BUILTINS, callable_name

_SER = GraphModuleSerializer.__new__(GraphModuleSerializer)  # serialize_operator needs no state
_DESER = GraphModuleDeserializer.__new__(GraphModuleDeserializer)


@pytest.mark.parametrize("target", [
    torch.ops.aten.add.Tensor, torch.ops.aten.convolution.default, torch.ops.higher_order.cond,
    torch.ops.higher_order.while_loop, operator.add, operator.getitem, math.sqrt, torch.sym_int, torch.sym_max,
])
def test_names_are_torchs(target):
    assert callable_name(target) == _SER.serialize_operator(target)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_is_what_torch_finds_by_that_name(name):
    # torch's deserializer resolves the same string to the same object: the file means what torch means.
    assert _DESER.deserialize_operator(name) is BUILTINS[name]


def test_operators_torch_serializes_as_symbolic_are_allowed():
    from torch._export.serde import serialize as torch_serde

    names = {callable_name(f) for f in torch_serde._SYM_OPS}
    assert names - set(BUILTINS) == set()


def test_a_string_target_is_its_own_name():
    assert callable_name("torch.ops.aten.add.Tensor") == "torch.ops.aten.add.Tensor"
