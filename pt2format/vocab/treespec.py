"""Pytree names both directions share: stand-in classes, torch's constant functions, fallback dict keys."""

from __future__ import annotations


def qualified_name(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


#: Marker a loader's stand-in class carries (loaders/_standins.py): the type name the file gave.
STANDIN_ATTR = "__pt2format_standin__"


def standin_type_name(cls) -> str | None:
    """The file's type name when `cls` is a loader's stand-in class, else None (no attribute hooks run)."""
    return vars(cls).get(STANDIN_ATTR) if isinstance(cls, type) else None


#: The functions torch itself puts in a `flat_apply` node's function spec (`_ConstantFunction`), by the
#: qualified name a file stores. Loaders resolve only these (in torch, never by import).
CONSTANT_FUNCTIONS = ("torch.export.custom_ops._call_custom_autograd_function_in_pre_dispatch",)
#: torch's pytree constant class wrapping them (by name: its module is imported only where flat_apply is used)
CONSTANT_FUNCTION_TYPE = "torch._higher_order_ops.flat_apply._ConstantFunction"


class FallbackKeys(list):
    """The keys of a dict a loader built in place of a pytree class it could not find.

    `origin` keeps the file's TreeSpec node (kind, type name, field names,
    keys, context; children aside), so re-saving the loaded program writes
    the original node again. It compares equal to a plain list of the keys.
    """

    __slots__ = ("origin",)

    def __init__(self, keys, origin):
        super().__init__(keys)
        self.origin = origin

    def __reduce_ex__(self, protocol):
        return (FallbackKeys, (list(self), self.origin))
