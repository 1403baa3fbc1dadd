"""Node targets by name -> callables, through registry lookups only (no import, no eval).

`torch.ops.<ns>.<op>.<overload>` is looked up in torch's operator registry,
`torch.ops.higher_order.<name>` in the higher-order-operator table, and any
other name in pt2format's builtin allow-list. A custom operator that is not
registered in this process is a LoadError naming it.
"""

from __future__ import annotations

import threading

import torch

from pt2format.errors import LoadError

from pt2format.vocab.operators import BUILTINS

from ._names import check_dotted_identifiers
from ._opsets import TORCH_NAMESPACES

_cache: dict[str, object] = {}
_lock = threading.Lock()


def _torch_version_error(error: LoadError, operator: str) -> LoadError:
    """Mark `error` as about an operator torch itself defines: the loader adds the writer's torch version."""
    error.torch_operator = operator
    return error


def resolve_target(name, path: str = "target"):
    fn = _cache.get(name)
    if fn is not None:
        return fn
    fn = BUILTINS.get(name) if isinstance(name, str) else None
    if fn is None:
        fn = _resolve_op(name, path)
    with _lock:
        _cache[name] = fn
    return fn


def _resolve_op(name, path):
    parts = check_dotted_identifiers(name, path)
    # Operators may be dunder-named (aten.__and__); namespaces and overloads may not.
    if len(parts) > 2 and (parts[2].startswith("__") or parts[-1].startswith("__")):
        raise LoadError("operator namespaces and overloads cannot be dunder names", path=path, got=name)
    if len(parts) == 4 and parts[:3] == ["torch", "ops", "higher_order"]:
        op = torch._ops._higher_order_ops.get(parts[3])
        if not isinstance(op, torch._ops.HigherOrderOperator):
            raise _torch_version_error(LoadError(f"higher-order operator {name} does not exist in this torch "
                                                 f"({torch.__version__})", path=path, got=name), name)
        return op
    if len(parts) != 5 or parts[:2] != ["torch", "ops"] or parts[2] == "higher_order":
        raise LoadError("unknown operator target", path=path,
                        expected="torch.ops.<namespace>.<op>.<overload>, torch.ops.higher_order.<op> "
                                 "or an allow-listed builtin", got=name)
    ns, op_name, overload = parts[2:]
    qualified = f"{ns}::{op_name}"
    try:
        handle, overloads = torch._C._jit_get_operation(qualified)
    except RuntimeError:
        handle, overloads = None, []
    if handle is None:
        if ns in TORCH_NAMESPACES:  # torch's own operator: a matter of torch versions, not of imports
            raise _torch_version_error(LoadError(f"operator {qualified} does not exist in this torch "
                                                 f"({torch.__version__})", path=path, got=name), qualified)
        raise LoadError(f"operator {qualified} is not registered in this process "
                        f"(import the library that defines it before loading)", path=path, got=name)
    namespace = getattr(torch.ops, ns)
    packet = getattr(namespace, op_name, None) if isinstance(namespace, torch._ops._OpNamespace) else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        raise LoadError(f"operator {qualified} cannot be resolved", path=path, got=name)
    wanted = "" if overload == "default" else overload
    if wanted not in overloads:
        e = LoadError(f"operator {qualified} has no overload {overload!r}"
                      + (f" in this torch ({torch.__version__})" if ns in TORCH_NAMESPACES else ""), path=path,
                      expected=sorted(o or "default" for o in overloads), got=overload)
        raise _torch_version_error(e, name) if ns in TORCH_NAMESPACES else e
    op = getattr(packet, overload, None)
    if not isinstance(op, torch._ops.OpOverload):
        raise LoadError(f"operator overload {name} cannot be resolved", path=path, got=name)
    return op


_bindings: dict[object, tuple[int, frozenset, tuple] | None] = {}


def check_call_binding(target, n_args: int, kwarg_names, path: str) -> None:
    """The arguments of a call to an operator bind to its schema, as the dispatcher binds them at the call.

    torch builds a node with any keyword and any number of positional
    arguments and fails only when the graph runs ("Unknown keyword argument
    'code' for operator 'aten::zeros'"); a file gets that answer at load.
    """
    binding = _bindings.get(target, ...)
    if binding is ...:
        binding = None
        schema = getattr(target, "_schema", None) if isinstance(target, torch._ops.OpOverload) else None
        if schema is not None and not getattr(schema, "is_vararg", False):
            positional = tuple(a.name for a in schema.arguments if not a.kwarg_only)
            binding = (len(positional), frozenset(a.name for a in schema.arguments), positional)
        with _lock:
            _bindings[target] = binding
    if binding is None:
        return
    max_positional, names, positional = binding
    if n_args > max_positional:
        raise LoadError(f"too many positional arguments for {target}", path=f"{path}.inputs",
                        expected=f"<= {max_positional}", got=n_args)
    for k in kwarg_names:
        if k not in names:
            raise LoadError(f"{target} has no argument named {k!r}", path=f"{path}.inputs", got=k)
        if k in positional[:n_args]:
            raise LoadError(f"argument {k!r} of {target} is given both by position and by keyword",
                            path=f"{path}.inputs", got=k)
