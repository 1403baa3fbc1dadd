"""Behaviour shared by the generated model classes: equality, repr, copying.

Kept out of the generated module so that the generator only emits data
(slots and field tables) and this logic is written and tested once.
"""

from __future__ import annotations

import math


def _same(a, b) -> bool:
    """Equality that treats NaN as equal to NaN and tells 0.0 from -0.0."""
    if type(a) is float and type(b) is float:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


class ModelObject:
    """Base of every generated table and struct class."""

    __slots__ = ()
    FIELDS: tuple = ()
    IS_STRUCT = False

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, n), getattr(other, n)) for n in self.__slots__)

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        parts = []
        for spec in self.FIELDS:
            name, default = spec[0], spec[5]
            value = getattr(self, name)
            if value is None or (spec[2] == "vector" and not value):
                continue
            if spec[2] in ("scalar", "enum") and _same(value, default):
                continue
            parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"
