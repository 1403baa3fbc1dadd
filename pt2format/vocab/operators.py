"""The builtin callables a graph may call, by the qualified name a file stores, and how torch names a target.

The allow-list is the only way a non-operator callable gets into (or out of)
a file: the exporter refuses other Python callables, and the loader resolves
these names by looking them up in this table, never by importing.
"""

from __future__ import annotations

import math
import operator

import torch
from torch._functorch import predispatch as _predispatch


def callable_name(target) -> str:
    """Qualified name of a function, class or operator as torch's serializer prints it."""
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        ns, name = target._schema.name.split("::", 1)
        return f"torch.ops.{ns}.{name}.{target._overloadname}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"torch.ops.higher_order.{target.name()}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or type(target).__name__
    if module.startswith("torch._ops"):
        module = module.replace("torch._ops", "torch.ops", 1)
    return f"{module}.{name}" if module else name


def _builtin_callables():
    fns = [
        operator.getitem, operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow, operator.neg, operator.pos, operator.abs, operator.eq, operator.ne,
        operator.lt, operator.le, operator.gt, operator.ge, operator.and_, operator.or_, operator.xor,
        operator.not_, operator.invert, operator.lshift, operator.rshift,
        math.sqrt, math.floor, math.ceil, math.trunc, math.exp, math.log, math.log2, math.log10,
        math.sin, math.cos, math.tan, math.sinh, math.cosh, math.tanh, math.asin, math.acos, math.atan,
        torch.sym_int, torch.sym_float, torch.sym_max, torch.sym_min, torch.sym_not, torch.sym_ite,
        torch.sym_sqrt, torch.sym_sum, torch._sym_sqrt,
        torch._C._set_grad_enabled,
        torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast,
        # vmap in the pre-dispatch IR (associative_scan's generic mode, torch.vmap): torch inserts
        # these calls itself; they take and return only tensors, ints and strings.
        _predispatch.lazy_load_decompositions, _predispatch._vmap_increment_nesting,
        _predispatch._vmap_decrement_nesting, _predispatch._add_batch_dim, _predispatch._remove_batch_dim,
    ]
    return {callable_name(f): f for f in fns}


BUILTINS: dict[str, object] = _builtin_callables()
