"""FakeTensors for a program's 20,000 values at a fraction of the cost of torch's constructor.

`FakeTensor.__new__` validates its arguments, normalizes the device and sets
twenty attributes one by one (five of them through memo descriptors) for
every value, a large share of a large program's load (benchmarks/). All values
of one device get the same attributes. So the first FakeTensor of a device
is made by torch's constructor, and later ones are made as that constructor
makes them (`Tensor._make_subclass` on their own meta tensor, the data-pointer
guard) and given a copy of its attributes: whatever torch's constructor sets,
the copy follows, in any torch version. Each value still has its own meta
tensor and storage, as torch's deserializer gives it (no aliasing between
values). tests/loaders/test_fake_tensors.py compares the result with torch's
constructor, attribute by attribute and dispatch key by dispatch key.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorConfig

_make_subclass = torch.Tensor._make_subclass
_throw_on_mutable_data_ptr = torch._C._set_throw_on_mutable_data_ptr
_warn_on_mutable_data_ptr = torch._C._set_warn_deprecated_on_mutable_data_ptr


class FakeTensorMaker:
    """`maker(meta, device)` == `FakeTensor(fake_mode, meta, device)` for a strided meta tensor."""

    def __init__(self, fake_mode):
        self.fake_mode = fake_mode
        self._state: dict[torch.device, dict] = {}  # device -> attributes torch's constructor set

    def __call__(self, meta: torch.Tensor, device: torch.device) -> FakeTensor:
        state = self._state.get(device)
        if state is None or FakeTensorConfig.debug:  # debug: each fake records its own traceback
            t = FakeTensor(self.fake_mode, meta, device)
            if not FakeTensorConfig.debug:
                self._state[device] = dict(t.__dict__)
            return t
        t = _make_subclass(FakeTensor, meta, meta.requires_grad, dispatch_device=True,
                           device_for_backend_keys=state["_fake_device"])
        if not self.fake_mode._allow_unsafe_data_ptr_access:
            _throw_on_mutable_data_ptr(t)
        else:
            _warn_on_mutable_data_ptr(t)
        t.__dict__.update(state)
        return t
