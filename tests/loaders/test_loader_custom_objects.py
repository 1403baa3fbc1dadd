"""loaders/_custom_objects.py: `CustomObject` rows -> torchbind objects, rebuilt by the class's own __setstate__.

The reference is a torchbind class torch itself registers
(quantized.LinearPackedParamsBase): the rebuilt object must unpack to the
same weights as torch's original.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from pt2format._generated.model import CustomObject
from pt2format.errors import LoadError
from pt2format.exporter._values import to_value
from pt2format.loaders._custom_objects import rebuild_custom_object


def _packed():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = torch.quantize_per_tensor(torch.randn(3, 4), 0.1, 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(w, torch.randn(3))


def test_rebuilt_object_is_torchs_object():
    original = _packed()
    state, fqn = original.__getstate__()
    tensors = []
    row = CustomObject(name="packed", class_fqn=fqn,
                       state=to_value(state, tensor_ref=lambda t, path: tensors.append(t) or len(tensors) - 1))
    obj = rebuild_custom_object(row, lambda i, path: tensors[i], "custom_objects[0]")
    assert obj._type().qualified_name() == original._type().qualified_name()
    (w0, b0), (w1, b1) = torch.ops.quantized.linear_unpack(original), torch.ops.quantized.linear_unpack(obj)
    assert torch.equal(w0.int_repr(), w1.int_repr()) and w0.q_scale() == w1.q_scale() and torch.equal(b0, b1)


@pytest.mark.parametrize("fqn, match", [
    ("__torch__.torch.classes.nowhere.Nothing", "not registered"),
    ("os.system", "registered torchbind class"),
    ("__torch__.torch.classes.quantized", "registered torchbind class"),
])
def test_unknown_or_malformed_classes_are_refused_by_path(fqn, match):
    row = CustomObject(name="x", class_fqn=fqn, state=to_value(None))
    with pytest.raises(LoadError, match=match) as e:
        rebuild_custom_object(row, None, "custom_objects[2]")
    assert "custom_objects[2].class_fqn" in str(e.value)


def test_state_the_class_rejects_is_a_load_error():
    fqn = _packed()._type().qualified_name()
    row = CustomObject(name="x", class_fqn=fqn, state=to_value(("not", "a", "state")))
    with pytest.raises(LoadError, match="rejected its saved state"):
        rebuild_custom_object(row, None, "custom_objects[0]")
