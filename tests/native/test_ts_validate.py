"""The TypeScript reader's string classes and validation (loaders/ts/src/strings.ts, validate.ts, symeval.ts)
agree with Python's (`pt2format._strings.CHECKERS`, `pt2format._validate`, `pt2format._symeval`).

The expectation is always the Python reader's verdict on the same input:
for strings, Python's checker on the same (class, string) pair; for files,
`pt2format._dump.dump` (read, decode, validate) on the same bytes, in every
program encoding. The inputs are hostile strings (the injection payloads,
reserved names, keywords, odd Unicode, lengths at the limits) and random
hypothesis trees of `codec_strategies`, whose random indices break many
invariants, so both readers must agree on the first broken rule's class.
"""

from __future__ import annotations

from pt2format import FORMAT_VERSION  # generated trees use every member of the working schema

import json
import subprocess
import zlib

import pytest

import name_samples
import native_util_ts as U

from pt2format._generated import model as m

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]

ENCODINGS = {"flatbuffers": U.FLATBUFFERS, "msgpack": U.MSGPACK, "json": U.JSON}


@pytest.fixture(scope="module")
def ts():
    why = U.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader tests need Node.js: {why}")
    U.build()
    return U


def _candidates() -> list:
    from pt2format._strings import MAX_NAME_LENGTH, RESERVED_MEMBER_NAMES, RESERVED_NODE_META_KEYS
    import keyword
    import pt2f_injection_payloads as P
    import codec_strategies as S

    out = list(P.string_payloads("/nonexistent/marker").values())
    out += sorted(RESERVED_MEMBER_NAMES) + sorted(RESERVED_NODE_META_KEYS) + keyword.kwlist + ["self", "match", "_"]
    out += S.EDGE_STRINGS + ["", ".", "..", "a..b", "a.", ".a", "0", "a.0.b", "a.-1", "__x__", "__x", "___", "_x_",
                             "f.<locals>.g", "f.<Locals>.g", "f.<>", "a.b.c", "A-b.c_d", "-a", ".hidden", "x" * 255,
                             "x" * 256, "a" * MAX_NAME_LENGTH, "a" * (MAX_NAME_LENGTH + 1),
                             "é" * MAX_NAME_LENGTH + "é", "\U0001F600" * 600, "cpu", "cuda", "Cuda", "c" * 64,
                             "c" * 65, "a b", "a'b", "a`b", "a\\b", "a\"b", "!#$%&()*+,-./:;<=>?@[]^_{|}~", "\x7f",
                             "\x85", "k\u2028", "k\u2029", "k\x9f", "k\xa0", "ok key", "\ud800", "a\udc00b",
                             "\U0001F600\ud83d"]
    out += name_samples.samples()  # Unicode identifiers, NFKC near misses, torch's n1.n2@1 and slice keys
    return out


def test_string_classes_match_python_checkers(ts):
    """Every class x every hostile candidate: same verdict (ok / StringClassError / EncodingError) as Python."""
    from pt2format._strings import CHECKERS, STRING_CLASSES
    from pt2format.errors import Pt2FormatError

    cands = _candidates()
    want = []
    for cls in STRING_CLASSES:
        for s in cands:
            try:
                CHECKERS[cls](s, "T.f")
                want.append("OK")
            except Pt2FormatError as e:
                want.append(type(e).__name__)
    script = (
        "import { checkStringClass } from './dist/strings.js';"
        "import { readFileSync } from 'node:fs';"
        "const { classes, cands } = JSON.parse(readFileSync(0, 'utf8'));"
        "const out = [];"
        "for (const c of classes) for (const s of cands) {"
        "  try { checkStringClass(s, c, 'T.f'); out.push('OK'); } catch (e) { out.push(e.name); } }"
        "process.stdout.write(JSON.stringify(out));")
    # json.dumps keeps lone surrogates as \\udXXX escapes, which JSON.parse turns back into lone surrogates.
    r = subprocess.run(["node", "--input-type=module", "-e", script], cwd=U.TS_DIR, capture_output=True, timeout=120,
                       input=json.dumps({"classes": list(STRING_CLASSES), "cands": cands}).encode())
    assert r.returncode == 0, r.stderr.decode()
    got = json.loads(r.stdout)
    pairs = [(c, s) for c in STRING_CLASSES for s in cands]
    bad = [(c, s[:40], w, g) for (c, s), w, g in zip(pairs, want, got) if w != g]
    assert not bad, bad[:20]
    assert len(pairs) > 3000 and {"OK", "StringClassError", "EncodingError"} <= set(got)


def test_extra_meta_key_rules_match_python(ts):
    from pt2format._strings import check_extra_meta_key
    from pt2format.errors import Pt2FormatError

    cands = _candidates()
    want = []
    for s in cands:
        try:
            check_extra_meta_key(s, "k")
            want.append("OK")
        except Pt2FormatError as e:
            want.append(type(e).__name__)
    script = (
        "import { checkExtraMetaKey } from './dist/strings.js';"
        "import { readFileSync } from 'node:fs';"
        "const out = [];"
        "for (const s of JSON.parse(readFileSync(0, 'utf8'))) {"
        "  try { checkExtraMetaKey(s, 'k'); out.push('OK'); } catch (e) { out.push(e.name); } }"
        "process.stdout.write(JSON.stringify(out));")
    r = subprocess.run(["node", "--input-type=module", "-e", script], cwd=U.TS_DIR, capture_output=True, timeout=120,
                       input=json.dumps(cands).encode())
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout) == want


def place_storages(pkg, payloads):
    offsets, _ = U.storage_layout([len(p) for p in payloads])
    pkg.storages = [m.Storage(segment=0, offset=o, size=len(p), checksum_kind=m.ChecksumKind.CRC32,
                              checksum=zlib.crc32(p)) for o, p in zip(offsets, payloads)]
    pkg.segments = [m.Segment(file=0, section=1)] if payloads else []
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    pkg.required_features = 0
    for sh in pkg.shard_files:
        sh.package_id = []
    return pkg


def _python_verdict(path):
    from pt2format._dump import dump
    from pt2format.errors import Pt2FormatError

    try:
        return "OK", dump(path)
    except Pt2FormatError as e:
        return type(e).__name__, None


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_random_trees_same_verdict_as_python_reader(ts, tmp_path, encoding):
    """Random trees (mostly invalid: random indices, names, sym pools): same error class, or same dump."""
    import codec_strategies as S
    from hypothesis import HealthCheck, given, settings
    from pt2format import _codecs
    from pt2format.errors import Pt2FormatError

    paths = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(S.packages(max_depth=5, max_len=3))
    def collect(pkg):
        payloads = [bytes([len(paths), k]) * 64 for k in range(len(pkg.storages))]
        place_storages(pkg, payloads)
        try:
            program = _codecs.encode(pkg, encoding)
        except Pt2FormatError:
            return
        p = tmp_path / f"t{len(paths)}.pt2f"
        p.write_bytes(U.pack_container(program, payloads, encoding=ENCODINGS[encoding]))
        paths.append(p)

    collect()
    assert len(paths) >= 30
    recs = {r["file"]: r for r in U.dump_batch(paths)}
    verdicts = set()
    for p in paths:
        r = recs[str(p)]
        assert r["ok"] or r["error"] != "internal", r["message"]
        ts_v = ("OK", r["dump"]) if r["ok"] else (r["error"], None)
        py_v = _python_verdict(p)
        assert ts_v == py_v, (p.name, r.get("message"))
        verdicts.add(ts_v[0])
    assert len(verdicts) >= 2, verdicts  # both accepted and refused trees were compared


def test_symbolic_pool_bounds_match_python(ts, tmp_path):
    """Pools at and past the 64-bit, degree and budget bounds (SPEC.md 11.6): same verdict as Python."""
    import pt2f_samples as W
    from pt2format import _codecs

    K, O = m.SymExprKind, m.SymOp

    def pool(exprs, symbols=()):
        pkg = W.tiny_package((2,))
        payloads = W.float_payloads((2,))
        place_storages(pkg, payloads)
        pkg.programs[0].symbols = list(symbols)
        pkg.programs[0].sym_exprs = exprs
        return pkg, payloads

    def i(v):
        return m.SymExpr(kind=K.INTEGER, int_value=v)

    def ap(op, *args):
        return m.SymExpr(kind=K.APPLY, op=op, args=list(args))

    big = (1 << 63) - 1
    s0 = m.Symbol(name="s0", kind=m.SymbolKind.INT, hint=3, has_hint=True)
    s1 = m.Symbol(name="s1", kind=m.SymbolKind.INT)  # no hint: its powers are UNKNOWN, only their degree counts
    cases = {
        "add_fits": [i(big - 1), i(1), ap(O.ADD, 0, 1)],
        "add_overflows": [i(big), i(1), ap(O.ADD, 0, 1)],
        "mul_overflows": [i(1 << 32), ap(O.MUL, 0, 0)],
        "pow_fits": [i(2), i(62), ap(O.POW, 0, 1)],
        "pow_overflows": [i(2), i(63), ap(O.POW, 0, 1)],
        "pow_huge_exponent": [i(3), i(1 << 60), ap(O.POW, 0, 1)],
        "pow_one_huge_exponent": [i(-1), i((1 << 62) + 1), ap(O.POW, 0, 1)],
        "abs_min": [i(-(1 << 63)), ap(O.ABS, 0)],
        "floordiv_min_by_minus_one": [i(-(1 << 63)), i(-1), ap(O.FLOOR_DIV, 0, 1)],
        "mod_negative": [i(-7), i(3), ap(O.PYTHON_MOD, 0, 1), ap(O.MUL, 2, 2)],
        "div_by_zero_is_not_an_error": [i(1), i(0), ap(O.FLOOR_DIV, 0, 1)],
        "rational_pow": [m.SymExpr(kind=K.RATIONAL, int_value=3, denominator=2), i(40), ap(O.POW, 0, 1)],
        "float_to_int_overflow": [m.SymExpr(kind=K.FLOAT, float_value=1e19), ap(O.FLOOR_TO_INT, 0)],
        "float_to_int_fits": [m.SymExpr(kind=K.FLOAT, float_value=-9.2e18), ap(O.CEIL_TO_INT, 0)],
        "degree_65": [m.SymExpr(kind=K.SYMBOL, symbol=1), i(65), ap(O.POW, 0, 1)],
        "degree_64": [m.SymExpr(kind=K.SYMBOL, symbol=1), i(64), ap(O.POW, 0, 1)],
        "hinted_power_overflows": [m.SymExpr(kind=K.SYMBOL, symbol=0), i(64), ap(O.POW, 0, 1)],
        "squaring_chain": [m.SymExpr(kind=K.SYMBOL, symbol=0)] + [ap(O.MUL, k, k) for k in range(8)],
        "modular_indexing": [i(-(1 << 62)), i(3), i(5), ap(O.MODULAR_INDEXING, 0, 1, 2)],
        "dense_overflow": [i(1 << 40), i(1 << 40), i(1), i(1 << 40), ap(O.IS_NON_OVERLAPPING_AND_DENSE, 0, 1, 2, 3)],
        "where_lazy": [m.SymExpr(kind=K.BOOLEAN, bool_value=True), i(big), i(1), ap(O.ADD, 1, 2),
                       ap(O.WHERE, 0, 1, 3)],
    }
    files = {}
    for name, exprs in cases.items():
        pkg, payloads = pool(exprs, [s0, s1])
        files[name] = U.pack_container(_codecs.encode(pkg, "flatbuffers"), payloads)
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.pt2f"
        paths[name].write_bytes(data)
    recs = {r["file"]: r for r in U.dump_batch(paths.values())}
    got = {}
    for name, p in paths.items():
        r = recs[str(p)]
        ts_v = ("OK", r["dump"]) if r["ok"] else (r["error"], None)
        assert ts_v == _python_verdict(p), (name, r.get("message"))
        got[name] = ts_v[0]
    assert got["add_overflows"] == got["pow_overflows"] == got["degree_65"] == got["abs_min"] == "LimitError"
    assert got["hinted_power_overflows"] == got["squaring_chain"] == "LimitError"
    assert got["add_fits"] == got["pow_fits"] == got["degree_64"] == got["div_by_zero_is_not_an_error"] == "OK"
