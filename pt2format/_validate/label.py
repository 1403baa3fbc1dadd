"""A file's label is not older than its content: every name it uses is defined by its own minor (SPEC.md §8.1).

A writer records the smallest minor that defines every field, enum value,
union member and feature bit the file uses, and refuses a tree labelled
older (`pt2format._content_minor`). A reader refuses such a file too, with a
`ValidationError` naming the field and the minor that defines it: every
reader of the labelled minor would read it without the newer names, and the
canonical dump (which renders what the label's minor defines) would drop
them without a word.

Only names this reader knows are checked: a name of a minor newer than the
reader's is §8.2's business (ignored, kept, or refused). A file labelled
with the reader's own minor is not walked at all; an older label walks only
the tables that can reach a newer name (the writer's plans). That is still
most of a program when the newest minor added a field to a common table, so
`validate` and the canonical dump run it (what every reader must refuse),
and `read`/`load` do not: this reader knows the newer names and reads them
right, and a load pays only for the graph it builds.
"""

from __future__ import annotations

from pt2format._content_minor import _plans
from pt2format._generated import container as _container
from pt2format._generated import minors as _minors
from pt2format.errors import ValidationError


def check_label(package) -> None:
    """Raise ValidationError when `package` uses a name newer than its `format_version` (of this major)."""
    fv = package.format_version
    major, top = _minors.SCHEMA_VERSION
    if fv is None or fv.major != major or fv.minor >= top:
        return
    label = fv.minor
    for bit, (name, since) in sorted(_container.FEATURES.items()):
        if package.required_features & bit and since[1] > label:
            raise _older(label, since[1], f"feature bit {name} (0x{bit:x})", "required_features")
    found = _first_newer(package, _plans(label))
    if found is not None:
        what, since, path = found
        raise _older(label, since, what, path)


def _older(label: int, since: int, what: str, path: str) -> ValidationError:
    major = _minors.SCHEMA_VERSION[0]
    return ValidationError(f"{what} is defined by format {major}.{since}, newer than the file's format_version, "
                           "which a reader of the labelled minor does not know (SPEC.md §8.1)", path=path,
                           expected=f"format_version {major}.{since} or newer", got=f"{major}.{label}")


def _first_newer(package, plans: dict):
    """(what, minor, field path) of the first name newer than the plans' floor met in a walk, or None.

    Paths are kept as (parent, attribute, index) links and written out only
    for the name found.
    """
    stack = [(package, None)]
    while stack:
        obj, link = stack.pop()
        plan = plans.get(type(obj))
        if plan is None:
            continue
        newer, enums, unions, kids = plan
        owner = type(obj).__name__
        for attr, kind, default, since in newer:
            v = getattr(obj, attr)
            if v is None or (kind == "vector" and not v) or (kind in ("scalar", "enum") and v == default):
                continue
            return f"field {owner}.{attr}", since, _path((link, attr, None))
        for attr, is_vector, by_value, _known in enums:
            v = getattr(obj, attr)
            for i, x in enumerate(v if is_vector else (v,)):
                since = by_value.get(int(x))  # a value unknown to this reader is kept (§8.2), not checked here
                if since is not None:
                    return (f"enum value {int(x)} of {owner}.{attr}", since,
                            _path((link, attr, i if is_vector else None)))
        for attr, member_names, by_index in unions:
            v = getattr(obj, attr)
            if v is not None:
                index = member_names.index(type(v).__name__) + 1
                since = by_index.get(index)
                if since is not None:
                    return (f"union member {type(v).__name__} of {owner}.{attr}", since,
                            _path((link, attr + "_type", None)))
        for attr, is_vector in reversed(kids):  # in field order, as the other checks report
            v = getattr(obj, attr)
            if v is None:
                continue
            if is_vector:
                stack.extend((x, (link, attr, i)) for i, x in reversed(list(enumerate(v))) if x is not None)
            else:
                stack.append((v, (link, attr, None)))
    return None


def _path(link) -> str:
    parts = []
    while link is not None:
        link, attr, index = link
        parts.append(attr if index is None else f"{attr}[{index}]")
    return ".".join(reversed(parts))


__all__ = ["check_label"]
