"""The FakeTensorMode of a static program, made without importing torch._dynamo.

`FakeTensorMode.__init__` reads two settings from `torch._dynamo.config`,
and importing that module runs `torch/_dynamo/__init__.py`, which imports
most of dynamo, sympy, `torch._inductor`, `torch.onnx` and
`torch.distributed`: about a second of a cold load that a program with no
symbols never uses. When dynamo is already imported (or the program is
symbolic and needs a ShapeEnv, which imports it anyway) the constructor runs
as usual. Otherwise the mode is set up as the constructor does, step for
step, with dynamo's two settings read from the environment variables that
define their defaults. tests/loaders/test_fake_mode.py compares the result
with a mode torch constructed, attribute by attribute, so a torch upgrade
that changes the constructor fails there, not silently.
"""

from __future__ import annotations

import os
import sys
import traceback

import torch
from torch._subclasses.fake_tensor import FakeTensorConverter, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode


def fake_mode(shape_env=None) -> FakeTensorMode:
    """FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True, shape_env=shape_env)."""
    if shape_env is not None or "torch._dynamo.config" in sys.modules:
        return FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True, shape_env=shape_env)
    return _static_fake_mode()


def _static_fake_mode() -> FakeTensorMode:
    import torch._functorch.config as functorch_config
    import torch.nested._internal.nested_tensor as nested_tensor

    mode = FakeTensorMode.__new__(FakeTensorMode)
    TorchDispatchMode.__init__(mode)
    mode.allow_fallback_kernels = False
    mode.propagate_real_tensors = functorch_config.fake_tensor_propagate_real_tensors
    mode.fake_tensor_converter = FakeTensorConverter(copy_data=mode.propagate_real_tensors, export=False)
    mode.static_shapes = True
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
    mode.shape_env = None
    mode._stack_trace = traceback.extract_stack()
    mode._stack = None
    mode._mode_key = torch._C._TorchDispatchModeKey.FAKE
    mode.nt_tensor_id_initial_count = nested_tensor._tensor_id_counter
    mode.nt_tensor_id_counter = mode.nt_tensor_id_initial_count
    return mode
