"""The FakeTensorMode of a static program, made without importing torch._dynamo.

`FakeTensorMode.__init__` reads two settings from `torch._dynamo.config`,
and importing that module runs `torch/_dynamo/__init__.py`, which imports
most of dynamo, sympy, `torch._inductor`, `torch.onnx` and
`torch.distributed`: about a second of a cold load that a program with no
symbols never uses. A symbolic program needs a ShapeEnv (which imports
dynamo anyway) and gets torch's constructor. A static program's mode is set
up as the constructor does, step for step, with dynamo's two settings read
from the environment variables that define their defaults, and with its
ShapeEnv created on first access (running the program under the mode, e.g.
run_decompositions, makes it; loading does not). tests/loaders/test_fake_mode.py compares the result
with a mode torch constructed, attribute by attribute, so a torch upgrade
that changes the constructor fails there, not silently.
"""

from __future__ import annotations

import os
import traceback

import torch
from torch._subclasses.fake_tensor import FakeTensorConverter, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode


def fake_mode(shape_env=None) -> FakeTensorMode:
    """FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True, shape_env=shape_env).

    With `shape_env=None` (a static program) the mode still has a ShapeEnv, as
    torch's deserializer gives it (higher-order ops such as while_loop use it
    when the program is run under the mode, e.g. by run_decompositions), but
    made on first access to `mode.shape_env`, which a load never makes.
    """
    if shape_env is not None:
        return FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True, shape_env=shape_env)
    return _static_fake_mode()


class _LazyShapeEnvFakeTensorMode(FakeTensorMode):
    """A FakeTensorMode until first use, then exactly one (class and all), with its ShapeEnv.

    torch dispatches higher-order operators on the mode's exact type, so the
    instance becomes a plain FakeTensorMode (with a ShapeEnv made now) as
    soon as anything enters it or asks for its ShapeEnv; loading does neither.
    """

    @property
    def shape_env(self):
        return self._materialize()

    @shape_env.setter
    def shape_env(self, value):
        self._materialize()
        self.__dict__["shape_env"] = value

    def __enter__(self):
        self._materialize()
        return FakeTensorMode.__enter__(self)

    def _materialize(self):
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        env = ShapeEnv(assume_static_by_default=True)
        self.__class__ = FakeTensorMode
        self.__dict__["shape_env"] = env
        return env


def _static_fake_mode() -> FakeTensorMode:
    import torch._functorch.config as functorch_config
    import torch.nested._internal.nested_tensor as nested_tensor

    mode = _LazyShapeEnvFakeTensorMode.__new__(_LazyShapeEnvFakeTensorMode)
    TorchDispatchMode.__init__(mode)
    mode.allow_fallback_kernels = False
    mode.propagate_real_tensors = functorch_config.fake_tensor_propagate_real_tensors
    mode.fake_tensor_converter = FakeTensorConverter(copy_data=mode.propagate_real_tensors, export=False)
    mode.static_shapes = False  # as for torch's mode with a ShapeEnv
    mode.allow_scalar_outputs = False
    mode._allow_unsafe_data_ptr_access = functorch_config.fake_tensor_allow_unsafe_data_ptr_access
    mode.allow_meta = functorch_config.fake_tensor_allow_meta
    # torch._dynamo.config's defaults, from the variables that set them.
    mode.cache_enabled = os.environ.get("TORCH_FAKE_TENSOR_DISPATCH_CACHE", "1") == "1" \
        and not mode.propagate_real_tensors
    mode.cache_crosscheck_enabled = os.environ.get("TORCH_FAKE_TENSOR_DISPATCH_CACHE_CROSSCHECK", "0") == "1"
    mode.allow_non_fake_inputs = True
    mode.in_kernel_invocation = False
    mode.enter_stack = []
    # no `shape_env` yet: _LazyShapeEnvFakeTensorMode makes it on first use
    mode._stack_trace = traceback.extract_stack()
    mode._stack = None
    mode._mode_key = torch._C._TorchDispatchModeKey.FAKE
    mode.nt_tensor_id_initial_count = nested_tensor._tensor_id_counter
    mode.nt_tensor_id_counter = mode.nt_tensor_id_initial_count
    return mode
