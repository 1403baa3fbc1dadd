"""The smallest minor that defines every name a tree uses: the format_version a writer records (SPEC.md §8.1).

A reader of minor m reads a file of minor m exactly; a file labelled older
than what it uses would have its newer fields silently dropped from the dump
of every reader, and a file labelled newer than it needs would look, to tools,
as if it needed a newer reader. So a writer labels a file with this minor and
refuses a tree explicitly labelled older (`VersionError`).

Cost: a plan per table class is built once per process from the generated
minor tables: only tables that can reach a name newer than X.0 are entered,
and a table checks only its newer fields, enum fields with newer values and
union fields with newer members. The walk stops as soon as it finds a name of
the writer's own minor (nothing can raise the label further), so a program
that uses any newer name costs almost nothing; a program that uses none is
walked once over those tables.
"""

from __future__ import annotations

from pt2format._generated import container as _container
from pt2format._generated import minors as _minors
from pt2format._generated import model as m
from pt2format.errors import VersionError

_PLANS: dict | None = None


def _plans() -> dict:
    """{table class: (newer fields, enum checks, union checks, child tables to enter)}; X.0-only tables absent."""
    global _PLANS
    if _PLANS is not None:
        return _PLANS
    fields_m, values_m, members_m = _minors.FIELD_MINOR, _minors.ENUM_VALUE_MINOR, _minors.UNION_MEMBER_MINOR
    own = {}
    for name, cls in m.TABLES.items():
        newer = tuple((f[0], f[2], f[5], fields_m[name][f[0]]) for f in cls.FIELDS
                      if f[0] in fields_m.get(name, {}) and not f[6])
        enums = tuple((f[0], f[2] == "vector", values_m[f[4]], frozenset(int(v) for v in m.ENUMS[f[4]]))
                      for f in cls.FIELDS
                      if f[4] in values_m and (f[2] == "enum" or (f[2] == "vector" and f[3] == "enum")))
        unions = tuple((f[0], m.UNIONS[f[4]], members_m[f[4]]) for f in cls.FIELDS
                       if f[2] == "union" and f[4] in members_m)
        own[name] = (newer, enums, unions)
    children = {name: [(f[0], f[2] == "vector", f[4], f[2] == "union") for f in cls.FIELDS
                       if f[4] in m.TABLES or f[4] in m.UNIONS]
                for name, cls in m.TABLES.items()}

    def targets(ref, is_union):
        return m.UNIONS[ref] if is_union else (ref,)

    # A table is entered when it, or a table reachable from it, has something to check (a fixpoint).
    live = {n for n, (a, b, c) in own.items() if a or b or c}
    changed = True
    while changed:
        changed = False
        for name, kids in children.items():
            if name not in live and any(t in live for _, _, ref, u in kids for t in targets(ref, u)):
                live.add(name)
                changed = True
    _PLANS = {}
    for name in live:
        kids = tuple((attr, vec) for attr, vec, ref, u in children[name]
                     if any(t in live for t in targets(ref, u)))
        _PLANS[m.TABLES[name]] = (*own[name], kids)
    return _PLANS


def content_minor(package) -> int:
    """The smallest minor of this major that defines every field, enum value, union member and feature bit
    `package` uses. A value this schema does not define (a newer minor's, kept as its integer by a reader)
    is a `VersionError`: the writer cannot know which minor defines it."""
    top = _minors.SCHEMA_VERSION[1]
    minor = max((since[1] for bit, (_, since) in _container.FEATURES.items() if package.required_features & bit),
                default=0)
    if minor >= top:
        return minor
    plans = _plans()
    stack = [package]
    while stack:
        obj = stack.pop()
        plan = plans.get(type(obj))
        if plan is None:
            continue
        newer, enums, unions, kids = plan
        for attr, kind, default, since in newer:
            if since > minor:
                v = getattr(obj, attr)
                if v is None or (kind == "vector" and not v) or (kind in ("scalar", "enum") and v == default):
                    continue
                minor = since
        for attr, is_vector, by_value, known in enums:
            v = getattr(obj, attr)
            for x in (v if is_vector else (v,)):
                if int(x) not in known:
                    raise VersionError("the tree holds an enum value this writer's schema does not define (a newer "
                                       "minor's, kept as its integer by a reader)", path=f"{type(obj).__name__}.{attr}",
                                       got=int(x))
                got = by_value.get(int(x), 0)
                if got > minor:
                    minor = got
        for attr, member_names, by_index in unions:
            v = getattr(obj, attr)
            if v is not None:
                got = by_index.get(member_names.index(type(v).__name__) + 1, 0)
                if got > minor:
                    minor = got
        if minor >= top:
            return minor
        for attr, is_vector in kids:
            v = getattr(obj, attr)
            if v is None:
                continue
            if is_vector:
                stack.extend(x for x in v if x is not None)
            else:
                stack.append(v)
    return minor


def label(package) -> None:
    """Record the minor the tree needs (SPEC.md §8.1).

    No label: the smallest minor that defines everything the tree uses. A label
    of that minor or newer is kept (a converter keeps the label of the file it
    read). A label older than the content is refused: every reader of the
    labelled minor would drop the newer names without a word.
    """
    need = content_minor(package)
    major = _minors.SCHEMA_VERSION[0]
    fv = package.format_version
    if fv is None:
        package.format_version = m.FormatVersion(major, need)
    elif fv.major != major or fv.minor < need:
        raise VersionError("the tree's format_version is older than the names it uses", path="format_version",
                           expected=f"{major}.{need} or newer (the smallest minor that defines every name used)",
                           got=f"{fv.major}.{fv.minor}")
