"""The smallest minor that defines every name a tree uses: the format_version a writer records (SPEC.md §8.1).

A reader of minor m reads a file of minor m exactly; a file labelled older
than what it uses would have its newer fields silently dropped from the dump
of every reader, and a file labelled newer than it needs would look, to tools,
as if it needed a newer reader. So a writer labels a file with this minor and
refuses a tree explicitly labelled older (`VersionError`).

Cost: a plan per (table class, minor already found) is built once per
process from the generated minor tables: only tables that can reach a name
newer than the minor found so far are entered, and a table checks only those
newer fields, enum values and union members. A walk stops at the first newer
name and restarts with the smaller plan of what is newer still, so the walks
are at most one per minor, each usually ends within the first node, and the
last one visits only the tables that can hold the newest names (none, when
the label reached the writer's own minor). benchmarks/bench_label.py measures
it on the 20,001-node program and GPT-2.
"""

from __future__ import annotations

from pt2format._generated import container as _container
from pt2format._generated import minors as _minors
from pt2format._generated import model as m
from pt2format.errors import VersionError

_PLANS: dict = {}


def _plans(floor: int) -> dict:
    """{table class: (newer fields, enum checks, union checks, child tables to enter)} for names newer than
    minor `floor`; tables that cannot reach one are absent, so they are never entered."""
    if floor in _PLANS:
        return _PLANS[floor]
    fields_m = {t: {f: v for f, v in fs.items() if v > floor} for t, fs in _minors.FIELD_MINOR.items()}
    values_m = {e: {k: v for k, v in vs.items() if v > floor} for e, vs in _minors.ENUM_VALUE_MINOR.items()}
    members_m = {u: {k: v for k, v in ms.items() if v > floor} for u, ms in _minors.UNION_MEMBER_MINOR.items()}
    fields_m, values_m, members_m = ({k: v for k, v in d.items() if v} for d in (fields_m, values_m, members_m))
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
    plans = {}
    for name in live:
        kids = tuple((attr, vec) for attr, vec, ref, u in children[name]
                     if any(t in live for t in targets(ref, u)))
        plans[m.TABLES[name]] = (*own[name], kids)
    _PLANS[floor] = plans
    return plans


def content_minor(package) -> int:
    """The smallest minor of this major that defines every field, enum value, union member and feature bit
    `package` uses. An enum value this schema does not define (a newer minor's, kept as its integer by a
    reader) met on the way is a `VersionError`: the writer cannot know which minor defines it. (Only
    where a walk looks: `convert` refuses newer files before it gets here, SPEC.md §8.2.)"""
    top = _minors.SCHEMA_VERSION[1]
    minor = max((since[1] for bit, (_, since) in _container.FEATURES.items() if package.required_features & bit),
                default=0)
    while minor < top:
        found = _walk(package, _plans(minor), minor)
        if found == minor:
            break
        minor = found  # restart with the smaller plan of the names newer than what was found
    return minor


def _walk(package, plans: dict, floor: int) -> int:
    """The first minor above `floor` found in the tree (it stops there), or `floor` when there is none."""
    stack = [package]
    while stack:
        obj = stack.pop()
        plan = plans.get(type(obj))
        if plan is None:
            continue
        newer, enums, unions, kids = plan
        for attr, kind, default, since in newer:
            v = getattr(obj, attr)
            if v is None or (kind == "vector" and not v) or (kind in ("scalar", "enum") and v == default):
                continue
            return since
        found = floor
        for attr, is_vector, by_value, known in enums:
            v = getattr(obj, attr)
            for x in (v if is_vector else (v,)):
                if int(x) not in known:
                    raise VersionError("the tree holds an enum value this writer's schema does not define (a newer "
                                       "minor's, kept as its integer by a reader)", path=f"{type(obj).__name__}.{attr}",
                                       got=int(x))
                found = max(found, by_value.get(int(x), 0))
        for attr, member_names, by_index in unions:
            v = getattr(obj, attr)
            if v is not None:
                found = max(found, by_index.get(member_names.index(type(v).__name__) + 1, 0))
        if found > floor:
            return found
        for attr, is_vector in kids:
            v = getattr(obj, attr)
            if v is None:
                continue
            if is_vector:
                stack.extend(x for x in v if x is not None)
            else:
                stack.append(v)
    return floor


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
