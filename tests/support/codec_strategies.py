"""Package trees for codec tests: an exhaustive deterministic builder and hypothesis strategies.

Both are driven by model.FIELDS / UNIONS / ENUMS alone, so a table, union
member or enum value added to the schema is covered without editing this file.
`exhaustive_package()` instantiates every table, every union member and every
enum value at least once (`coverage()` proves it); `packages()` draws random
trees with edge values (int64/uint64 extremes, NaN, +-inf, -0.0, empty and
unicode strings, empty and absent vectors).
"""

from __future__ import annotations

from pt2format import FORMAT_VERSION  # generated trees use every member of the working schema

import math
import struct

from hypothesis import strategies as st

from pt2format._generated import model

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "uint8": (0, (1 << 8) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1),
}
EDGE_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e300, 5e-324, 0.1,
               struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0001))[0]]  # a NaN with a payload
EDGE_STRINGS = ["", "x", "héllo wörld ✓", "a\u0000b", "\U0001F600 emoji", "tab\tquote\"back\\slash\nnl",
                "\u2028\u2029", "torch.ops.aten.add.Tensor"]
_EDGE_BY_CLASS_CANDIDATES = EDGE_STRINGS + ["layers.0.weight", "s0", "__main__.Point", "f.<locals>.g", "cpu",
                                            "shard-1.bin", "L__self__layers.0", "_tensor_constant0", "1"]


def edge_strings(string_class: str) -> list:
    """The edge strings that belong to a string class (pt2format._strings), in a fixed order."""
    from pt2format._strings import CHECKERS
    from pt2format.errors import StringClassError

    out = []
    for s in _EDGE_BY_CLASS_CANDIDATES:
        try:
            CHECKERS[string_class](s, "strategy")
        except StringClassError:
            continue
        out.append(s)
    return out


_CLASS_PATTERNS = {
    "identifier": r"[A-Za-z_][A-Za-z0-9_]{0,10}", "local_name": r"[A-Za-z_][A-Za-z0-9_]{0,10}", "optional_identifier": r"([A-Za-z_][A-Za-z0-9_]{0,10})?",
    "attr_path": r"[a-z_][a-z0-9_]{0,5}(\.([a-z_][a-z0-9_]{0,5}|[0-9]{1,2})){0,2}",
    "optional_attr_path": r"([a-z_][a-z0-9_]{0,5}(\.([a-z_][a-z0-9_]{0,5}|[0-9]{1,2})){0,2})?",
    "qualified_name": r"[A-Za-z_][A-Za-z0-9_]{0,6}(\.[A-Za-z_][A-Za-z0-9_]{0,6}){0,2}",
    "file_name": r"[A-Za-z0-9_][A-Za-z0-9._-]{0,10}", "device_type": r"[a-z][a-z0-9_]{0,6}",
    "token": r"[A-Za-z0-9_.:<>@-]{1,12}",
}


def class_text(string_class: str):
    """Strings of one class: its edge strings, and random ones that pass its checker."""
    from pt2format._strings import CHECKERS
    from pt2format.errors import StringClassError

    def ok(s):
        try:
            CHECKERS[string_class](s, "strategy")
            return True
        except StringClassError:
            return False

    pattern = _CLASS_PATTERNS.get(string_class)
    rand = st.from_regex(pattern, fullmatch=True) if pattern else st.text(max_size=12)
    return st.one_of(st.sampled_from(edge_strings(string_class)), rand.filter(ok))


# Vectors of these tables are sorted by a unique key (the schema's `(key)` attribute).
KEYED = {"StringEntry": "key"}


def _elem_scalar(f):
    elem = f[3]
    return elem.split(":", 1)[-1] if f[2] == "vector" else elem


def enum_class(f):
    return model.ENUMS[f[4]]


# ---------------------------------------------------------------------------
# Exhaustive deterministic builder
# ---------------------------------------------------------------------------

class _Rotor:
    """Hands out values round-robin per key, so repeated fields walk through all choices."""

    def __init__(self):
        self.pos = {}

    def next(self, key, choices):
        i = self.pos.get(key, 0)
        self.pos[key] = i + 1
        return choices[i % len(choices)]


def _edge_ints(scalar):
    lo, hi = INT_RANGES[scalar]
    vals = [hi, lo, 1, 7]
    if lo < 0:
        vals.append(-1)
    return vals


class _Exhaustive:
    def __init__(self):
        self.rot = _Rotor()

    def scalar(self, f, key):
        sc = _elem_scalar(f)
        if f[2] == "enum" or (f[2] == "vector" and f[3].startswith("enum:")):
            return int(self.rot.next(("enum", f[4]), list(enum_class(f))))
        if sc == "bool":
            return self.rot.next(key, [True, False])
        if sc in ("float32", "float64"):
            return self.rot.next(key, EDGE_FLOATS)
        return self.rot.next(key, _edge_ints(sc))

    def table(self, cls, stack):
        if cls.IS_STRUCT:
            return cls(*[self.scalar(f, (cls.__name__, f[0])) for f in cls.FIELDS])
        stack = stack + (cls,)
        args = []
        for f in cls.FIELDS:
            name, _, kind, elem, ref = f[:5]
            key = (cls.__name__, name)
            if kind in ("scalar", "enum"):
                args.append(self.scalar(f, key))
            elif kind == "string":
                args.append(self.rot.next(key, edge_strings(cls.STRING_CLASSES[name])))
            elif kind in ("table", "struct"):
                sub = model.TABLES[ref]
                args.append(None if sub in stack and not f[7] else self.table(sub, stack))
            elif kind == "union":
                member = model.TABLES[self.rot.next(("union", ref), model.UNIONS[ref])]
                # Re-entering a type on the stack is allowed once a level, so recursion stays finite.
                args.append(None if stack.count(member) >= 1 else self.table(member, stack))
            else:
                args.append(self.vector(f, stack, cls))
        return cls(*args)

    def vector(self, f, stack, cls=None):
        name, _, kind, elem, ref = f[:5]
        if elem == "string":
            return [self.rot.next(("vs", name), edge_strings(cls.STRING_CLASSES[name])) for _ in range(2)]
        if elem in ("table", "struct"):
            sub = model.TABLES[ref]
            if sub in stack:
                return []
            items = [self.table(sub, stack) for _ in range(2)]
            if ref in KEYED:
                k = KEYED[ref]
                for i, it in enumerate(items):
                    setattr(it, k, f"{getattr(it, k) or ''}#{i}")
                items.sort(key=lambda it: getattr(it, KEYED[ref]).encode("utf-8"))
            return items
        return [self.scalar(f, ("v", name, i)) for i in range(3)]


def exhaustive_package(max_rounds: int = 100):
    """A deterministic Package that contains every table, union member and enum value at least once."""
    ex = _Exhaustive()
    pkg = ex.table(model.Package, ())
    pkg.format_version = model.FormatVersion(*FORMAT_VERSION)
    rounds = 0
    while not coverage_complete(pkg):
        rounds += 1
        if rounds > max_rounds:
            raise AssertionError(f"exhaustive builder did not reach full coverage: {missing(pkg)}")
        # Build another package with the rotors advanced and append its vectors to ours.
        more = ex.table(model.Package, ())
        for f in model.Package.FIELDS:
            if f[2] == "vector" and f[4] not in KEYED:
                getattr(pkg, f[0]).extend(getattr(more, f[0]))
    return pkg


def coverage(tree):
    """(table names, (union, member) pairs, (enum, value) pairs) present in a tree."""
    tables, members, enums = set(), set(), set()

    def walk(obj):
        cls = type(obj)
        tables.add(cls.__name__)
        for f in cls.FIELDS:
            name, _, kind, elem, ref = f[:5]
            v = getattr(obj, name)
            if kind == "union" and v is not None:
                members.add((ref, type(v).__name__))
                walk(v)
            elif kind == "enum":
                enums.add((ref, v))
            elif kind in ("table", "struct") and v is not None:
                walk(v)
            elif kind == "vector":
                if elem in ("table", "struct"):
                    for x in v:
                        walk(x)
                elif elem.startswith("enum:"):
                    enums.update((ref, x) for x in v)

    walk(tree)
    return tables, members, enums


def expected_coverage():
    tables = set(model.TABLES)
    members = {(u, m) for u, ms in model.UNIONS.items() for m in ms}
    used_enums = {f[4] for c in model.TABLES.values() for f in c.FIELDS
                  if f[2] == "enum" or (f[2] == "vector" and str(f[3]).startswith("enum:"))}
    enums = {(e, int(v)) for e in used_enums for v in model.ENUMS[e]}
    return tables, members, enums


def missing(tree):
    got = coverage(tree)
    return tuple(sorted(map(str, want - have)) for want, have in zip(expected_coverage(), got))


def coverage_complete(tree) -> bool:
    return not any(missing(tree))


# ---------------------------------------------------------------------------
# Hypothesis strategies
# ---------------------------------------------------------------------------

def _int_strategy(scalar):
    lo, hi = INT_RANGES[scalar]
    return st.one_of(st.sampled_from(_edge_ints(scalar) + [0]), st.integers(lo, hi))


def float_strategy(fixed_decimals=None):
    """Any float64 (NaN payloads included).

    With `fixed_decimals`, only floats that survive printing in fixed notation with
    that many decimals (flatc's JSON printer uses 12), plus NaN and +-inf.
    """
    if fixed_decimals is None:
        return st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=True, allow_infinity=True))
    return st.one_of(
        st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e300, 0.125]),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: float(f"{x:.{fixed_decimals}f}") == x))


def _text():
    return st.one_of(st.sampled_from(EDGE_STRINGS), st.text(max_size=12))


class _Strategies:
    def __init__(self, max_depth, max_len, floats, unknown_enums):
        self.unknown_enums = unknown_enums
        self.max_depth = max_depth
        self.max_len = max_len
        self.floats = floats
        self.cache = {}

    def scalar(self, f):
        sc = _elem_scalar(f)
        if f[2] == "enum" or (f[2] == "vector" and f[3].startswith("enum:")):
            lo, hi = INT_RANGES[sc]
            known = [int(v) for v in enum_class(f)]
            if not self.unknown_enums:
                return st.sampled_from(known)
            # Mostly known values; sometimes a value from a newer minor version.
            return st.one_of(st.sampled_from(known), st.integers(lo, hi))
        if sc == "bool":
            return st.booleans()
        if sc in ("float32", "float64"):
            return self.floats
        return _int_strategy(sc)

    def table(self, cls, depth):
        key = (cls, depth)
        if key in self.cache:
            return self.cache[key]
        if cls.IS_STRUCT:
            s = st.builds(cls, *[self.scalar(f) for f in cls.FIELDS])
            self.cache[key] = s
            return s
        deeper = depth < self.max_depth
        parts = []
        for f in cls.FIELDS:
            name, _, kind, elem, ref = f[:5]
            if kind in ("scalar", "enum"):
                parts.append(st.one_of(st.just(f[5]), self.scalar(f)))
            elif kind == "string":
                text = class_text(cls.STRING_CLASSES[name])
                parts.append(text if f[7] else st.one_of(st.none(), text))
            elif kind in ("table", "struct"):
                sub = model.TABLES[ref]
                if f[7]:
                    parts.append(st.deferred(lambda sub=sub, d=depth: self.table(sub, d + 1)))
                elif deeper or sub.IS_STRUCT:
                    parts.append(st.one_of(st.none(), st.deferred(lambda sub=sub, d=depth: self.table(sub, d + 1))))
                else:
                    parts.append(st.none())
            elif kind == "union":
                if deeper:
                    members = [model.TABLES[m] for m in model.UNIONS[ref]]
                    parts.append(st.one_of(st.none(), st.one_of(
                        [st.deferred(lambda m=m, d=depth: self.table(m, d + 1)) for m in members])))
                else:
                    parts.append(st.none())
            else:
                parts.append(self.vector(f, depth, deeper, cls))
        s = st.builds(cls, *parts)
        self.cache[key] = s
        return s

    def vector(self, f, depth, deeper, cls=None):
        name, _, kind, elem, ref = f[:5]
        if elem == "string":
            return st.lists(class_text(cls.STRING_CLASSES[name]), max_size=self.max_len)
        if elem in ("table", "struct"):
            sub = model.TABLES[ref]
            if not (deeper or sub.IS_STRUCT):
                return st.just([])
            inner = st.deferred(lambda: self.table(sub, depth + 1))
            if ref in KEYED:
                k = KEYED[ref]
                return st.lists(inner, max_size=self.max_len, unique_by=lambda it: getattr(it, k)).map(
                    lambda items: sorted(items, key=lambda it: getattr(it, k).encode("utf-8")))
            return st.lists(inner, max_size=self.max_len)
        return st.lists(self.scalar(f), max_size=self.max_len * 2)


def packages(max_depth: int = 6, max_len: int = 3, fixed_decimals=None, unknown_enums: bool = False):
    """Random Package trees.

    `fixed_decimals=12` keeps floats that flatc's JSON printer preserves;
    `unknown_enums` also draws enum values the schema does not name (as a newer
    minor version may write; JSON spells them as integers).
    """
    s = _Strategies(max_depth, max_len, float_strategy(fixed_decimals), unknown_enums)
    return s.table(model.Package, 1)


def deep_value(depth: int):
    """A Value nested `depth` ListValues deep (each level is two tables: Value and ListValue)."""
    v = model.Value(model.IntValue(7))
    for _ in range(depth):
        v = model.Value(model.ListValue([v]))
    return v


def deep_value_package(depth: int):
    """A Package whose example inputs nest `depth` ListValues deep (2 * depth + 4 tables)."""
    return model.Package(format_version=model.FormatVersion(1, 0),
                         programs=[model.Program(example_inputs=deep_value(depth))])


def alignment_package():
    """Strings, byte vectors, int64/double vectors and struct vectors of every length around 4- and 8-byte alignment."""
    values = []
    for n in range(0, 19):
        values.append(model.Value(model.StringValue("x" * n)))
        values.append(model.Value(model.BytesValue(list(range(n)))))
    args = []
    for n in range(0, 11):
        args.append(model.NamedArgument("i" * n, model.IntListArgument(list(range(-n, 0)))))
        args.append(model.NamedArgument("", model.FloatListArgument([0.5 * k for k in range(n)])))
        args.append(model.NamedArgument("", model.BoolListArgument([k % 2 == 0 for k in range(n)])))
    metas = [model.TensorValue(f"t{n}", model.TensorMeta(sizes=[model.SymInt(k, -k) for k in range(n)],
                                                   storage_offset=model.SymInt(-1, n))) for n in range(0, 6)]
    return model.Package(format_version=model.FormatVersion(1, 0), programs=[model.Program(
        name="align", example_inputs=model.Value(model.ListValue(values)),
        graph=model.Graph(nodes=[model.Node(name="n", inputs=args)], tensor_values=metas))])


NODE_INPUT = "programs[0].graph.nodes[0].inputs[0]"


def small_package():
    """One program, one node, an int and a tensor input: the seed of most hostile-input tests."""
    return model.Package(format_version=model.FormatVersion(1, 0), programs=[model.Program(
        name="p", graph=model.Graph(nodes=[model.Node(name="n", target="t", inputs=[
            model.NamedArgument("a", model.IntArgument(3)), model.NamedArgument("b", model.TensorArgument("x"))])]))])
