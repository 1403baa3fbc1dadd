"""loaders/_fake_tensors.py makes the FakeTensor torch's constructor makes, attribute by attribute.

A torch upgrade that changes what `FakeTensor.__new__` sets or how it makes
the tensor fails here, not silently.
"""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from pt2format.loaders._fake_tensors import FakeTensorMaker


def _meta(requires_grad=False, dtype=torch.float32):
    m = torch.empty_strided((4, 8), (8, 1), dtype=dtype, device="meta")
    return m.requires_grad_(True) if requires_grad else m


def _facts(t: FakeTensor):
    return (type(t), dict(vars(t)), str(torch._C._dispatch_keys(t)), t.device, t.dtype, t.shape, t.stride(),
            t.requires_grad, t.is_leaf, t._version)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_later_fakes_of_a_device_are_torchs(requires_grad):
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    make = FakeTensorMaker(mode)
    cpu = torch.device("cpu")
    first = make(_meta(), cpu)  # torch's constructor; the ones after are made by the maker's path
    later = make(_meta(requires_grad), cpu)
    theirs = FakeTensor(mode, _meta(requires_grad), cpu)
    assert _facts(first)[1] == _facts(theirs)[1]
    assert _facts(later) == _facts(theirs)


def test_each_fake_has_its_own_storage_and_memos():
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    make = FakeTensorMaker(mode)
    a, b, c = (make(_meta(), torch.device("cpu")) for _ in range(3))
    storages = {id(x.untyped_storage()) for x in (a, b, c)}
    ptrs = {x.untyped_storage()._cdata for x in (a, b, c)}
    assert len(storages) == 3 and len(ptrs) == 3
    b.nonzero_memo = 5  # a memo set on one value stays on that value
    assert a.nonzero_memo is None and c.nonzero_memo is None


def test_fakes_run_under_their_mode_as_torchs_do():
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    make = FakeTensorMaker(mode)
    make(_meta(), torch.device("cpu"))
    x = make(_meta(), torch.device("cpu"))
    with mode:
        y = (x @ x.T).relu()
    assert mode.is_our_fake(y) and y.shape == (4, 4) and y.device == torch.device("cpu")


def test_the_data_pointer_guard_is_torchs():
    # The mode's default only warns, once per process (not observable twice); refusing is observable.
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    mode._allow_unsafe_data_ptr_access = False
    make = FakeTensorMaker(mode)
    make(_meta(), torch.device("cpu"))
    for t in (make(_meta(), torch.device("cpu")), FakeTensor(mode, _meta(), torch.device("cpu"))):
        with pytest.raises(RuntimeError, match="data pointer"):
            t.data_ptr()
