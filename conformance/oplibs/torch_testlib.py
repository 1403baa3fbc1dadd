"""The custom operators PyTorch's own export tests call (test/export/test_export.py), namespace `pt2f_testlib`.

torch defines them as `testlib::*` (and `mylib::foo_unbacked`) at the top of
its test module; they are declared here the same way (schema string,
CompositeImplicitAutograd or CPU kernel, fake kernel), under a namespace of
our own so that nothing clashes with torch's test library if both are loaded.
The corpus cases in corpus/torch_export_tests.py call them; the fresh loader
process imports this module as a runtime links a kernel library.
"""

from __future__ import annotations

import torch

torch.library.define("pt2f_testlib::returns_tensor_symint", "(Tensor x) -> (Tensor, SymInt)")
torch.library.define("pt2f_testlib::foo", "(Tensor(a!) x, Tensor(b!) z) -> (Tensor, Tensor, Tensor)",
                     tags=torch.Tag.pt2_compliant_tag)
torch.library.define("pt2f_testlib::foo_mutated", "(Tensor(a!) x) -> (Tensor, Tensor)",
                     tags=torch.Tag.pt2_compliant_tag)
torch.library.define("pt2f_testlib::foo_functional", "(Tensor x) -> (Tensor)", tags=torch.Tag.pt2_compliant_tag)


@torch.library.impl("pt2f_testlib::returns_tensor_symint", "cpu")
@torch.library.register_fake("pt2f_testlib::returns_tensor_symint")
def _returns_tensor_symint(x):
    return x, x.shape[0]


@torch.library.impl("pt2f_testlib::foo", "cpu")
@torch._dynamo.disable
def _foo(x, z):
    x.add_(5)
    z.add_(5)
    return x, z, x + z


@torch.library.register_fake("pt2f_testlib::foo")
def _foo_fake(x, z):
    return x, z, x + z


@torch.library.impl("pt2f_testlib::foo_mutated", "CompositeImplicitAutograd")
def _foo_mutated(x):
    a, b, c = torch.ops.pt2f_testlib.foo(x, x.cos())
    return a, a.cos()


@torch.library.impl("pt2f_testlib::foo_functional", "CompositeImplicitAutograd")
def _foo_functional(x):
    a, b, c = torch.ops.pt2f_testlib.foo(x.cos(), x.cos())
    return a.cos()


@torch.library.custom_op("pt2f_testlib::foo_unbacked", mutates_args={})
def foo_unbacked(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # torch's kernel returns a[b.item()], whose shape disagrees with its own fake kernel (torch only
    # exports the op, never runs it); this one returns what the fake promises: a multiple of 10 rows.
    return a[: (b.item() // 10) * 10].clone()


@foo_unbacked.register_fake
def _foo_unbacked_fake(a, b):
    ctx = torch.library.get_ctx()
    u = ctx.new_dynamic_size(min=0, max=len(a) // 10) * 10
    return torch.empty(u, a.shape[1], dtype=a.dtype)
