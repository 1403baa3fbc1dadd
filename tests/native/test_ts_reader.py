"""The TypeScript reader (loaders/ts): same canonical dump as Python, typed errors on damaged files.

Every comparison is against something the TS reader did not produce: the
Python dump (pt2format._dump over the codec's decode), bytes written by flatc
itself or by a container packer written from SPEC.md, the generated Python
model's field tables, or known IEEE bit patterns.
"""

from __future__ import annotations

from pt2format import FORMAT_VERSION  # generated trees use every member of the working schema

import json
import math
import random
import struct
import subprocess
import sys
import zlib

import pytest

import native_util_ts as U  # noqa: E402

from pt2format._generated import model as m  # noqa: E402

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]



@pytest.fixture(scope="session")
def ts():
    why = U.missing_toolchain()
    if why:
        pytest.skip(why)
    U.build()
    return U


def strategies():
    import codec_strategies
    return codec_strategies


def samples():
    import pt2f_samples
    return pt2f_samples


def python_dump(package_bytes: bytes, payloads) -> bytes:
    """The Python dump of a FlatBuffers program and its storages' bytes (no validation, as the TS reader)."""
    from pt2format import _codecs
    from pt2format._dump import dump_text

    pkg = _codecs.decode(package_bytes, "flatbuffers")
    return dump_text(pkg, [zlib.crc32(bytes(p)) for p in payloads]).encode("utf-8")


def place_storages(pkg, payloads):
    """Point pkg.storages at payloads laid out as pack_container does; keep the header-level fields consistent."""
    offsets, _ = U.storage_layout([len(p) for p in payloads])
    pkg.storages = [m.Storage(segment=0, offset=o, size=len(p), checksum_kind=m.ChecksumKind.CRC32,
                              checksum=zlib.crc32(p)) for o, p in zip(offsets, payloads)]
    pkg.segments = [m.Segment(file=0, section=1)] if payloads else []
    pkg.format_version = m.FormatVersion(*FORMAT_VERSION)
    pkg.required_features = 0
    return pkg


def payloads_for(n, seed=0):
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 63, 64, 65, 200]))) for _ in range(n)]


def write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def assert_dump_equal(path, expected: bytes, validate: bool = True):
    """The TS dump equals `expected`; `validate=False` for an expectation from `python_dump` (decoder alone)."""
    r = U.ts_dump(path, validate=validate)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    if r.stdout != expected:  # show where they part, not two 300 kB strings
        i = next((k for k, (a, b) in enumerate(zip(r.stdout, expected)) if a != b), min(len(r.stdout), len(expected)))
        pytest.fail(f"TS dump differs at byte {i}:\nTS: {r.stdout[max(0, i - 120):i + 120]!r}\n"
                    f"PY: {expected[max(0, i - 120):i + 120]!r}")


# ---------------------------------------------------------------------------
# Build, generated code, descriptor
# ---------------------------------------------------------------------------

def test_generated_module_typechecks_with_tsc(ts):
    r = subprocess.run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.generated.json"],
                       cwd=U.TS_DIR, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_core_reader_typechecks_without_node_types(ts):
    """The browser-safe core (everything but node.ts and cli.ts) compiles with no Node typings at all."""
    r = subprocess.run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.core.json"],
                       cwd=U.TS_DIR, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def _model_desc():
    """What the TS descriptor must say, derived from the generated Python model (a separate generator)."""
    tables, structs = {}, {}
    for name, cls in m.TABLES.items():
        if getattr(cls, "IS_STRUCT", False):
            size, layout = cls.STRUCT_LAYOUT
            structs[name] = {"size": size, "fields": [(f, off) for f, off, _ in layout]}
            continue
        fields = []
        for fname, fid, kind, elem, ref, default, deprecated, required in cls.FIELDS:
            if deprecated:
                continue
            row = {"name": fname, "id": fid, "required": bool(required)}
            if kind in ("scalar", "enum"):
                row.update(kind="scalar", scalar=elem, enum=ref,
                           default=(str(default) if elem in ("int64", "uint64") else default))
            elif kind in ("string", "table", "struct"):
                row.update(kind=kind) if kind == "string" else row.update(kind=kind, ref=ref)
            elif kind == "union":
                row.update(kind="union", type_id=fid - 1, enum=ref, members=list(m.UNIONS[ref]))
            else:
                if elem in ("table", "struct"):
                    e = {"kind": elem, "ref": ref}
                elif elem == "string":
                    e = {"kind": "string"}
                else:
                    e = {"kind": "scalar", "scalar": elem.split(":")[-1], "enum": ref}
                row.update(kind="vector", element=e)
            fields.append(row)
        tables[name] = fields
    return tables, structs


def test_descriptor_matches_generated_python_model(ts):
    r = U.node(U.CLI, "descriptor")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    tables, structs = _model_desc()
    assert d["identifier"] == m.FILE_IDENTIFIER
    assert d["root"] == "Package"
    assert sorted(d["tables"]) == sorted(tables)
    for name, want in tables.items():
        got = d["tables"][name]
        assert got == want, name  # 0 == 0.0 for float defaults
    assert sorted(d["structs"]) == sorted(structs)
    for name, want in structs.items():
        assert d["structs"][name]["size"] == want["size"]
        assert [(f["name"], f["offset"]) for f in d["structs"][name]["fields"]] == want["fields"]


def _reshaped_schemas(doc: dict) -> dict:
    """Spellings of the same JSON Schema that generators and post-processing steps produce."""
    import copy

    def walk(node, f):
        if isinstance(node, dict):
            return f({k: walk(v, f) for k, v in node.items()})
        if isinstance(node, list):
            return [walk(v, f) for v in node]
        return node

    def plain_enum(n):  # flatc's own shape, before regen.py allows integers
        alts = n.get("anyOf")
        if alts and any("enum" in a and a.get("type") == "string" for a in alts) and \
                all(a.get("type") in ("string", "integer") for a in alts):
            e = next(a for a in alts if "enum" in a)
            return {"type": "string", "enum": e["enum"], **({"description": n["description"]} if "description" in n else {})}
        return n

    def wrapped_refs(n):  # $ref next to siblings as allOf: [{$ref}], enums as oneOf
        if "$ref" in n and "description" in n:
            return {"allOf": [{"$ref": n["$ref"]}], "description": n["description"]}
        if "anyOf" in n and all(a.get("type") in ("string", "integer") for a in n["anyOf"]):
            return {"oneOf": n["anyOf"]}
        return n

    def reversed_unions(n):  # union branches in another order: indices come from the generated code
        if "anyOf" in n and all("$ref" in a for a in n["anyOf"]):
            return {**n, "anyOf": n["anyOf"][::-1]}
        return n

    return {"plain_enums": walk(copy.deepcopy(doc), plain_enum),
            "wrapped_refs": walk(copy.deepcopy(doc), wrapped_refs),
            "reversed_unions": walk(copy.deepcopy(doc), reversed_unions)}


def test_descriptor_independent_of_json_schema_spelling(ts, tmp_path):
    """The descriptor is the same from the generated JSON Schema and from reshaped spellings of it."""
    doc = json.loads((U.ROOT / "schema" / "pt2format.schema.json").read_text())
    base = U.node(U.CLI, "descriptor")
    assert base.returncode == 0, base.stderr
    variants = _reshaped_schemas(doc)
    for name, variant in variants.items():
        assert variant != doc, name  # the reshaping did something
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(variant))
        r = U.node(U.CLI, "descriptor", "--schema", p)
        assert r.returncode == 0, (name, r.stderr.decode(errors="replace"))
        assert json.loads(r.stdout) == json.loads(base.stdout), name


def test_descriptor_rejects_schema_it_cannot_interpret(ts, tmp_path):
    """A scalar typed with a table reference must stop the reader at startup, not be misread."""
    doc = json.loads((U.ROOT / "schema" / "pt2format.schema.json").read_text())
    doc["definitions"]["pt2format_ScalarTypeArgument"]["properties"]["value"] = {"$ref": "#/definitions/pt2format_Tensor"}
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    r = U.node(U.CLI, "descriptor", "--schema", p)
    assert r.returncode != 0
    assert b"cannot derive the schema descriptor at ScalarTypeArgument.value" in r.stderr


# ---------------------------------------------------------------------------
# Dumps equal to Python's
# ---------------------------------------------------------------------------

def test_exhaustive_tree_dump_matches_python(ts, tmp_path):
    """Every table, union member and enum value, edge floats (NaN payload, -0.0) and strings; Python's container writer."""
    S = strategies()
    W = samples()
    from pt2format import _codecs

    pkg = S.exhaustive_package()
    payloads = payloads_for(len(pkg.storages))
    place_storages(pkg, payloads)
    program = _codecs.encode(pkg, "flatbuffers")
    expected = python_dump(program, payloads)
    p1 = tmp_path / "exhaustive_pywriter.pt2f"
    W.write_raw(p1, pkg, payloads)
    assert_dump_equal(p1, expected, validate=False)
    p2 = write(tmp_path, "exhaustive_specpacker.pt2f", U.pack_container(program, payloads))
    assert_dump_equal(p2, expected, validate=False)


def test_random_trees_dump_matches_python(ts, tmp_path):
    S = strategies()
    from hypothesis import HealthCheck, given, settings
    from pt2format import _codecs

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(S.packages(max_depth=6, max_len=3))
    def check(pkg):
        payloads = payloads_for(len(pkg.storages), seed=len(pkg.storages))
        place_storages(pkg, payloads)
        program = _codecs.encode(pkg, "flatbuffers")
        path = write(tmp_path, "random.pt2f", U.pack_container(program, payloads))
        assert_dump_equal(path, python_dump(program, payloads), validate=False)

    check()


def test_flatc_built_buffer_dump_matches_python(ts, tmp_path):
    """A buffer laid out by flatc (from the JSON encoding), not by pt2format's builder."""
    S = strategies()
    from pt2format import _codecs

    pkg = S.exhaustive_package()
    payloads = payloads_for(len(pkg.storages), seed=3)
    place_storages(pkg, payloads)
    program = U.flatc_binary(_codecs.encode(pkg, "json").decode("utf-8"), tmp_path)
    path = write(tmp_path, "flatc.pt2f", U.pack_container(program, payloads))
    assert_dump_equal(path, python_dump(program, payloads), validate=False)


def _tables_in(obj):
    """Every table object reachable from `obj` (a generated model object), depth first."""
    seen = [obj]
    for name, _id, kind, *_ in type(obj).FIELDS:
        v = getattr(obj, name)
        if kind in ("table", "union") and type(v).__name__ in m.TABLES:
            seen += _tables_in(v)
        elif kind == "vector" and v:
            for x in v:
                if type(x).__name__ in m.TABLES:
                    seen += _tables_in(x)
    return seen


def test_unknown_enum_values_dump_as_integers_like_python(ts, tmp_path):
    """Enum values of a newer minor version (unknown names) dump as plain integers, as Python's dump does."""
    S = strategies()
    from pt2format import _codecs

    pkg = S.exhaustive_package()
    payloads = payloads_for(len(pkg.storages), seed=4)
    place_storages(pkg, payloads)
    changed = 0
    for t in _tables_in(pkg):
        for name, _id, kind, _elem, ref, *_ in type(t).FIELDS:
            if kind == "enum":
                setattr(t, name, 255 - changed % 7)  # no enum of this schema reaches 249..255
                assert 255 - changed % 7 not in {int(v) for v in m.ENUMS[ref]}, ref
                changed += 1
    assert changed > 10
    program = _codecs.encode(pkg, "flatbuffers")
    expected = python_dump(program, payloads)
    path = write(tmp_path, "unknown_enums.pt2f", U.pack_container(program, payloads))
    assert_dump_equal(path, expected, validate=False)
    doc = json.loads(U.ts_dump(path, validate=False).stdout)["package"]
    assert doc["tensors"] and all(type(t["dtype"]) is int and t["dtype"] >= 249 for t in doc["tensors"])
    assert all(type(st["checksum_kind"]) is int for st in doc["storages"])


def test_float_bit_patterns_and_int64_extremes_exact(ts, tmp_path):
    """Independent expectations: known IEEE-754 bit patterns and 64-bit limits in the dump text."""
    from pt2format import _codecs

    nan_payload = struct.unpack("<d", struct.pack("<Q", 0x7FF0_0000_0000_0123))[0]  # signaling NaN, payload 0x123
    floats = [-0.0, math.inf, -math.inf, nan_payload, 5e-324]
    pkg = place_storages(m.Package(), [])
    pkg.operators = [m.OperatorSchema(target="t", parameters=[
        m.OperatorParameter(name=f"p{i}", default_value=m.Value(m.FloatValue(x))) for i, x in enumerate(floats)]
        + [m.OperatorParameter(name="big", default_value=m.Value(m.IntValue(-(1 << 63)))),
           m.OperatorParameter(name="ctl", default_value=m.Value(m.StringValue("\x00\x1f\x7f\u2028é\"\\\b\f\r\t")))])]
    pkg.required_features = 0
    program = _codecs.encode(pkg, "flatbuffers")
    path = write(tmp_path, "bits.pt2f", U.pack_container(program))
    r = U.ts_dump(path, validate=False)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode("utf-8")
    for bits in ("0x8000000000000000", "0x7ff0000000000000", "0xfff0000000000000", "0x7ff0000000000123",
                 "0x0000000000000001"):
        assert f'"value":"{bits}"' in text, bits
    assert '"value":-9223372036854775808' in text
    assert '"value":"\\u0000\\u001f\x7f\u2028é\\"\\\\\\b\\f\\r\\t"' in text
    assert r.stdout == python_dump(program, [])


def test_float32_widening_matches_cpython(ts):
    """The schema has no float32 field today; the dump's widening must still equal CPython's (double)f."""
    rng = random.Random(2)
    patterns = [0, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000, 0x7F7FFFFF, 0x7F800000,
                0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF, 0x7FC12345]
    patterns += [rng.getrandbits(32) for _ in range(300)]
    script = ("import { widenFloat32Bits } from './dist/dump.js';"
              "console.log(JSON.stringify(JSON.parse(process.argv[1]).map((b) => widenFloat32Bits(b).toString(16))));")
    r = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(patterns)], cwd=U.TS_DIR,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    want = [format(struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", b))[0]))[0], "x")
            for b in patterns]
    assert json.loads(r.stdout) == want


def test_write_package_file_dump_matches_python_cli(ts, tmp_path):
    """A valid file from pt2format's public writer; Python side is the real `pt2format dump` command."""
    W = samples()
    from pt2format._api import write_package

    sizes = (2, 16, 17, 0)
    path = tmp_path / "tiny.pt2f"
    write_package(path, W.tiny_package(sizes), W.float_payloads(sizes), fsync=False)
    py = subprocess.run([sys.executable, "-m", "pt2format", "dump", str(path)], capture_output=True,
                        cwd=U.ROOT, timeout=120, env={**__import__("os").environ, "PYTHONIOENCODING": "utf-8"})
    assert py.returncode == 0, py.stderr
    assert_dump_equal(path, py.stdout)


def _exported_files(tmp_path):
    torch = pytest.importorskip("torch")
    import pt2format

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.register_buffer("scale", torch.tensor([0.5, -0.0, float("nan")]))

        def forward(self, x):
            return torch.relu(self.lin(x)) * self.scale

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, idx):
            return self.head(self.emb(idx)).sum(-1)

    cases = {
        "small": (Small(), (torch.randn(2, 4),), None),
        "tied": (Tied(), (torch.tensor([[1, 2, 3]]),), None),
        "dynamic": (Small(), (torch.randn(3, 4),), {"x": {0: torch.export.Dim("batch", min=1, max=64)}}),
    }
    paths = []
    for name, (mod, args, dyn) in cases.items():
        ep = torch.export.export(mod, args, dynamic_shapes=dyn)
        path = tmp_path / f"{name}.pt2f"
        pt2format.save(ep, path)  # a save failure is a failure here too, never a skip
        paths.append(path)
    return paths


def test_exported_torch_programs_dump_matches_python(ts, tmp_path):
    from pt2format._dump import dump

    for path in _exported_files(tmp_path):
        assert_dump_equal(path, dump(path).encode("utf-8"))


def _corpus_dumps_match(tmp_path, cases):
    """Save each conformance corpus case, dump it with both readers, compare.

    Only the cases pinned in conformance/not_exportable.toml may fail to export;
    any other export or save failure fails this test (it would otherwise hide a
    writer bug from the reader comparison)."""
    pytest.importorskip("torch")
    import pt2format
    from conformance.runner import not_exportable
    from pt2format._dump import dump

    pinned = not_exportable()
    paths = {}
    for c in cases:
        built = c.build()
        try:
            ep = {k: p.export() for k, p in built.items()} if isinstance(built, dict) else built.export()
        except Exception as e:
            if c.name in pinned and f"{type(e).__name__}: {e}".startswith(pinned[c.name]["error"]):
                continue  # torch cannot export it (pinned, with the reason)
            raise
        path = tmp_path / f"{c.name}.pt2f"
        try:
            pt2format.save(ep, path)
        except pt2format.ExportError:
            if isinstance(c.xfail, str) and c.xfail:
                continue  # a known refusal, strict-xfailed in every corpus test (the case's xfail)
            raise
        paths[c.name] = path
    assert paths, "no corpus case selected"
    recs = {r["file"]: r for r in U.dump_batch(paths.values())}
    for name, path in paths.items():
        r = recs[str(path)]
        assert r["ok"], (name, r["message"])
        assert r["dump"] == dump(path), name


def test_corpus_fast_cases_dump_matches_python(ts, tmp_path):
    corpus = pytest.importorskip("conformance.corpus")
    cases = corpus.select(tags=["fast"])
    _corpus_dumps_match(tmp_path, cases)


@pytest.mark.corpus
def test_corpus_full_cases_dump_matches_python(ts, tmp_path):
    corpus = pytest.importorskip("conformance.corpus")
    _corpus_dumps_match(tmp_path, [c for c in corpus.select() if not c.fast and not c.slow])


# ---------------------------------------------------------------------------
# API: README example, zero-copy tensors, encodings
# ---------------------------------------------------------------------------

def test_readme_example_prints_targets_and_parameter_shapes(ts, tmp_path):
    W = samples()
    from pt2format._api import write_package

    example = (U.TS_DIR / "examples" / "print-graph.mjs").read_text()
    readme = (U.TS_DIR / "README.md").read_text()
    assert example.strip() in readme, "README must show examples/print-graph.mjs verbatim"
    sizes = (3, 5)
    pkg = W.tiny_package(sizes)
    path = tmp_path / "example.pt2f"
    write_package(path, pkg, W.float_payloads(sizes), fsync=False)
    r = U.node("examples/print-graph.mjs", path)
    assert r.returncode == 0, r.stderr
    want = []
    for prog in pkg.programs:
        want += [f"node {n.target}" for n in prog.graph.nodes]
        want += [f"param {s.name} {json.dumps(list(pkg.tensors[s.tensor].sizes), separators=(',', ':'))}"
                 for s in prog.state if s.kind == m.StateKind.PARAMETER]
    assert r.stdout.decode().splitlines() == want


def test_tensor_views_are_zero_copy_and_match_payloads(ts, tmp_path):
    W = samples()
    from pt2format._api import write_package

    sizes = (2, 16, 17)
    payloads = W.float_payloads(sizes)
    path = tmp_path / "views.pt2f"
    write_package(path, W.tiny_package(sizes), payloads, fsync=False)
    script = (
        "import { readFileSync } from 'node:fs';"
        "import { readPt2f } from './dist/index.js';"
        "const buf = new Uint8Array(readFileSync(process.argv[1]));"
        "const f = readPt2f(buf);"
        "const out = [];"
        "for (let i = 0; i < f.package().tensorsLength(); i++) {"
        "  const t = f.tensor(i);"
        "  out.push({shared: t.storage.buffer === buf.buffer, dtype: t.dtype, sizes: t.sizes.map(Number),"
        "    hex: Buffer.from(t.storage).toString('hex'), start: t.storage.byteOffset});"
        "}"
        "console.log(JSON.stringify(out));")
    r = subprocess.run(["node", "--input-type=module", "-e", script, str(path)], cwd=U.TS_DIR,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    data = path.read_bytes()
    for t, p, n in zip(got, payloads, sizes):
        assert t["shared"] is True
        assert (t["dtype"], t["sizes"], t["hex"]) == ("FLOAT32", [n], p.hex())
        assert data[t["start"]:t["start"] + len(p)] == p  # the view is at the storage's place in the file


def test_verify_data_detects_flipped_storage_byte(ts, tmp_path):
    """`verify --data` checks DATA CRCs (the dump alone does not read checksums of data)."""
    W = samples()
    from pt2format._api import write_package

    sizes = (3, 40)
    path = tmp_path / "v.pt2f"
    write_package(path, W.tiny_package(sizes), W.float_payloads(sizes), fsync=False)
    ok = U.node(U.CLI, "verify", "--data", path)
    assert ok.returncode == 0, ok.stderr
    bad = bytearray(path.read_bytes())
    bad[-1] ^= 1  # last byte of the last storage
    bad_path = write(tmp_path, "bad.pt2f", bytes(bad))
    r = U.node(U.CLI, "verify", "--data", bad_path)
    assert r.returncode == 1 and b"ChecksumError" in r.stderr and b"(DATA)" in r.stderr
    assert U.node(U.CLI, "verify", bad_path).returncode == 0


# ---------------------------------------------------------------------------
# Damaged and hostile files
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_file(ts, tmp_path_factory):
    S = strategies()
    from pt2format import _codecs

    pkg = S.exhaustive_package()
    payloads = payloads_for(len(pkg.storages), seed=7)
    place_storages(pkg, payloads)
    program = _codecs.encode(pkg, "flatbuffers")
    data = U.pack_container(program, payloads)
    return data, program, payloads


def _batch(tmp_path, blobs: dict, validate: bool = True) -> dict:
    paths = {}
    for name, blob in blobs.items():
        paths[name] = write(tmp_path, f"{name}.pt2f", bytes(blob))
    recs = U.dump_batch(paths.values(), validate=validate)
    by_file = {r["file"]: r for r in recs}
    out = {name: by_file[str(p)] for name, p in paths.items()}
    internal = {n: r["message"] for n, r in out.items() if not r["ok"] and r["error"] == "internal"}
    assert not internal, f"non-Pt2fError escaped the reader: {internal}"
    return out


def test_truncated_at_every_section_boundary_and_random_points_rejected(ts, good_file, tmp_path):
    data, _, _ = good_file
    cuts = {0, 1, 7, 8, 63, 64}
    for kind, enc, align, off, length, _ck, _c in U.section_table(data):
        cuts |= {off - 1, off, off + 1, off + length - 1, off + length // 2}
    rng = random.Random(11)
    cuts |= {rng.randrange(1, len(data)) for _ in range(40)}
    cuts = sorted(c for c in cuts if 0 <= c < len(data))
    res = _batch(tmp_path, {f"cut{c}": data[:c] for c in cuts})
    for name, r in res.items():
        assert not r["ok"], name
        assert r["error"] == "HeaderError", (name, r["message"])


def test_truncated_then_resealed_rejected(ts, good_file, tmp_path):
    """Truncation with a re-sealed header (file_length patched) reaches the section checks."""
    data, _, _ = good_file
    cuts = sorted({off + length - 1 for *_, off, length, _ck, _c in U.section_table(data)} | {len(data) - 64})
    blobs = {}
    for c in cuts:
        b = bytearray(data[:c])
        struct.pack_into("<Q", b, 32, c)
        blobs[f"cut{c}"] = U.reseal(b)
    for name, r in _batch(tmp_path, blobs).items():
        assert not r["ok"], name
        assert r["error"] in ("SegmentError", "HeaderError"), (name, r["message"])


def test_bit_flips_rejected_or_dump_equal_to_python(ts, good_file, tmp_path):
    """Random bit flips: unsealed ones fail a checksum; re-sealed ones either fail typed or dump as Python does."""
    from pt2format import _codecs
    from pt2format.errors import Pt2FormatError

    data, program, _payloads = good_file
    prog_off = U.section_table(data)[0][3]
    rng = random.Random(5)
    blobs = {}
    for i in range(60):
        b = bytearray(data)
        pos = rng.randrange(len(b))
        b[pos] ^= 1 << rng.randrange(8)
        blobs[f"raw{i}_{pos}"] = b
    for i in range(150):
        b = bytearray(data)
        pos = prog_off + rng.randrange(len(program))
        b[pos] ^= 1 << rng.randrange(8)
        name = f"sealed{i}_{pos}"
        blobs[name] = U.reseal(b)
    res = _batch(tmp_path, blobs, validate=False)  # compared with Python's decoder alone
    agree = 0
    *_, data_off, data_len, _ck, _c = U.section_table(data)[1]
    for name, r in res.items():
        if name.startswith("raw"):
            pos = int(name.split("_")[1])
            if r["ok"]:  # only a flip inside storage bytes goes unnoticed without verifyData
                assert data_off <= pos < data_off + data_len, (name, pos)
                continue
            # (EncodingError: a flip of a section entry's encoding, SPEC.md section 7)
            assert r["error"] in ("ChecksumError", "HeaderError", "SegmentError", "VersionError", "EncodingError",
                                  "UnsupportedFeatureError"), (name, pos, r["message"])
            continue
        if not r["ok"]:
            continue
        b = blobs[name]
        prog = bytes(b[prog_off:prog_off + len(program)])
        try:
            pkg = _codecs.decode(prog, "flatbuffers")
        except Pt2FormatError:
            continue  # the Python reader is stricter here (e.g. no-op fields); TS accepting is allowed
        from pt2format._dump import dump_text
        # A flip may move a storage's offset or size: its CRC is that of the bytes it now points at.
        crcs = _file_storage_crcs(bytes(b), pkg)
        assert crcs is not None, (name, "TS accepted storages that do not resolve in this file")
        try:
            want = dump_text(pkg, crcs)
        except Pt2FormatError:
            continue
        assert r["dump"] == want, name
        agree += 1
    assert agree > 0  # some flips land in values and must still agree


def _file_storage_crcs(data: bytes, pkg):
    """CRC-32 of each storage's bytes as SPEC.md §3 locates them in this file (None if one does not resolve)."""
    sections = U.section_table(data)
    out = []
    for st in pkg.storages:
        if st.segment >= len(pkg.segments):
            return None
        seg = pkg.segments[st.segment]
        if seg.file != 0 or seg.section >= len(sections):
            return None
        _kind, _enc, _align, off, length, _ck, _c = sections[seg.section]
        if st.offset + st.size > length:
            return None
        out.append(zlib.crc32(data[off + st.offset:off + st.offset + st.size]))
    return out


def _patched(data: bytes, at: int, fmt: str, value) -> bytearray:
    b = bytearray(data)
    struct.pack_into(fmt, b, at, value)
    return U.reseal(b)


def test_header_attacks_rejected_with_typed_errors(ts, good_file, tmp_path):
    data, _, _ = good_file
    e1 = U.HEADER_SIZE + U.ENTRY_SIZE  # entry 1 (DATA)
    cases = {
        "wrong_magic": (bytearray(b"\x89PT2X") + data[5:], "HeaderError"),
        "header_version_2": (_patched(data, 8, "<H", 2), "VersionError"),  # newer header layout (SPEC.md 8.4)
        "section_count_mismatch": (_patched(data, 10, "<H", 3), "HeaderError"),
        "header_checksum_wrong": (bytearray(data[:40]) + struct.pack("<I", 0xDEADBEEF) + data[44:], "HeaderError"),
        "file_length_wrong": (_patched(data, 32, "<Q", len(data) + 1), "HeaderError"),
        "format_major_2": (_patched(data, 16, "<H", 2), "VersionError"),
        "unknown_feature_bit": (_patched(data, 24, "<Q", 1 << 40), "UnsupportedFeatureError"),
        "section_offset_out_of_bounds": (_patched(data, e1 + 8, "<Q", align64(len(data) + 4096)), "SegmentError"),
        "section_offset_huge": (_patched(data, e1 + 8, "<Q", (1 << 64) - 64), "HeaderError"),
        "section_length_past_end": (_patched(data, e1 + 16, "<Q", len(data)), "SegmentError"),
        "section_misaligned": (_patched(data, e1 + 8, "<Q", U.section_table(data)[1][3] + 8), "SegmentError"),
        "alignment_not_power_of_two": (_patched(data, e1 + 4, "<I", 96), "SegmentError"),
        "program_overlaps_header": (_patched(data, U.HEADER_SIZE + 8, "<Q", 64), "SegmentError"),
        "unknown_section_kind": (_patched(data, e1, "<H", 9), "HeaderError"),
        "program_crc_wrong": (_patched_no_section_seal(data), "ChecksumError"),
        "format_minor_differs_from_package": (_patched(data, 18, "<H", 7), "ValidationError"),
    }
    res = _batch(tmp_path, {k: v[0] for k, v in cases.items()})
    for name, (_, want) in cases.items():
        r = res[name]
        assert not r["ok"], name
        assert r["error"] == want, (name, r["message"])
    # flags and reserved bytes are ignored (SPEC.md section 8.4): the dump is unchanged
    ignored = {"flags_set": _patched(data, 20, "<I", 1), "reserved_set": _patched(data, 50, "<B", 1),
               "entry_reserved_set": _patched(data, e1 + 40, "<B", 1)}
    # (good_file's exhaustive tree breaks invariants on purpose: compare the decoder alone)
    plain = _batch(tmp_path, {"plain": bytearray(data)}, validate=False)["plain"]
    assert plain["ok"], plain
    for name, r in _batch(tmp_path, ignored, validate=False).items():
        assert r["ok"] and r["dump"] == plain["dump"], (name, r)
    r = U.ts_dump(tmp_path / "format_major_2.pt2f")
    assert r.returncode == 4 and b"VersionError" in r.stderr
    r = U.ts_dump(tmp_path / "wrong_magic.pt2f")
    assert r.returncode == 1 and b"bad magic" in r.stderr and b"offset 0" in r.stderr


def align64(n):
    return (n + 63) // 64 * 64


def _patched_no_section_seal(data: bytes) -> bytearray:
    b = bytearray(data)
    struct.pack_into("<I", b, U.HEADER_SIZE + 28, zlib.crc32(b"other") & 0xFFFFFFFF)
    struct.pack_into("<I", b, 40, 0)
    hlen = struct.unpack_from("<I", b, 12)[0]
    struct.pack_into("<I", b, 40, zlib.crc32(bytes(b[:hlen])))
    return b


def _nested(depth):
    def build(b):
        v = U.int_value(b)
        for _ in range(depth):
            v = U.list_value(b, [v])
        return v
    return build


def test_deeply_nested_values_rejected_and_shallow_ones_dump(ts, tmp_path):
    deep = U.pack_container(U.fb_package(_nested(200)))  # 400+ tables deep
    ok_program = U.fb_package(_nested(50))  # about 103 deep: under the limit of 128
    res = _batch(tmp_path, {"deep": deep, "ok": U.pack_container(ok_program)}, validate=False)
    assert not res["deep"]["ok"] and res["deep"]["error"] == "LimitError", res["deep"]
    assert res["ok"]["ok"], res["ok"]
    assert res["ok"]["dump"] == python_dump(ok_program, []).decode("utf-8")


def test_shared_subtree_bomb_rejected_quickly(ts, tmp_path):
    """60 levels of [v, v] sharing one child: 2^60 table visits if walked naively."""
    def build(b):
        v = U.int_value(b)
        for _ in range(60):
            v = U.list_value(b, [v, v])
        return v
    path = write(tmp_path, "bomb.pt2f", U.pack_container(U.fb_package(build)))
    r = U.node(U.CLI, "dump", path, timeout=60)
    assert r.returncode == 1, r.stderr
    assert b"LimitError" in r.stderr


def test_huge_vector_length_rejected(ts, tmp_path):
    vectors = []

    def build(b):
        v = U.list_value(b, [U.int_value(b)], record=vectors)
        return v
    program = U.fb_package(build)
    at = len(program) - vectors[0]  # builder offsets count from the end of the buffer
    assert struct.unpack_from("<I", program, at)[0] == 1
    blobs = {}
    for n in (2, 0x10000, 0x7FFFFFF0, 0xFFFFFFFF):
        b = bytearray(program)
        struct.pack_into("<I", b, at, n)
        blobs[f"len{n}"] = U.pack_container(bytes(b))
    for name, r in _batch(tmp_path, blobs).items():
        assert not r["ok"] and r["error"] == "EncodingError", (name, r)
        assert "programs[0].example_inputs.value.items" in r["message"], r["message"]


def test_invalid_utf8_string_rejected(ts, tmp_path):
    from pt2format import _codecs

    pkg = place_storages(m.Package(), [])
    pkg.producer = m.Producer(name="ABCDEFGH")
    program = bytearray(_codecs.encode(pkg, "flatbuffers"))
    at = program.index(b"ABCDEFGH")
    program[at + 3] = 0xFF
    r = U.ts_dump(write(tmp_path, "utf8.pt2f", U.pack_container(bytes(program))))
    assert r.returncode == 1
    assert b"EncodingError" in r.stderr and b"UTF-8" in r.stderr and b"producer.name" in r.stderr


def test_wrong_file_identifier_rejected(ts, tmp_path):
    program = bytearray(U.fb_package(_nested(1)))
    program[4:8] = b"XXXX"
    r = U.ts_dump(write(tmp_path, "ident.pt2f", U.pack_container(bytes(program))))
    assert r.returncode == 1 and b"file identifier" in r.stderr


def test_data_in_shard_file_dump_matches_python(ts, tmp_path):
    """Storages in a sibling shard file (required_features bit 0): read through the Node layer's shard loader."""
    W = samples()
    from pt2format._dump import dump

    sizes = (3, 40)
    payloads = W.float_payloads(sizes)
    shard_size = W.write_shard(tmp_path / "model.shard1.pt2f", payloads)
    offsets, _ = U.storage_layout([len(p) for p in payloads])
    pkg = W.tiny_package(sizes)
    pkg.required_features = 1
    pkg.shard_files = [m.ShardFile(name="model.shard1.pt2f", size=shard_size)]
    pkg.segments = [m.Segment(file=1, section=0)]
    pkg.storages = [m.Storage(segment=0, offset=o, size=len(p), checksum_kind=m.ChecksumKind.CRC32,
                              checksum=zlib.crc32(p)) for o, p in zip(offsets, payloads)]
    path = tmp_path / "model.pt2f"
    W.write_raw(path, pkg)
    assert_dump_equal(path, dump(path).encode("utf-8"))
    (tmp_path / "model.shard1.pt2f").write_bytes(b"\0" * shard_size)  # right size, not a container
    r = U.ts_dump(path)
    assert r.returncode == 1 and b"HeaderError" in r.stderr and b"model.shard1.pt2f" in r.stderr


# ---------------------------------------------------------------------------
# Browser
# ---------------------------------------------------------------------------

def test_browser_dump_matches_python(ts, tmp_path):
    """Headless Chromium loads dist/ from a localhost page, dumps a file and POSTs the text back."""
    exe = U.chromium()
    if exe is None and __import__("os").environ.get("CI") == "true":
        # CI must run this test: install Debian's chromium (idempotent script, root in CI).
        subprocess.run(["bash", str(U.ROOT / "scripts" / "install_chromium.sh")], check=True, timeout=900)
        exe = U.chromium()
    if exe is None:
        pytest.skip("chromium not installed: run scripts/build_ts.sh (installs it) or scripts/install_chromium.sh")
    # A valid file (the page reads with validation, as readPt2f does by default), in MessagePack so the
    # browser runs a decoder other than FlatBuffers' too; Python's full read is the expectation.
    W = samples()
    from pt2format import _codecs
    from pt2format._dump import dump

    sizes = (3, 4)
    payloads = W.float_payloads(sizes)
    pkg = place_storages(W.tiny_package(sizes), payloads)
    path = write(tmp_path, "browser.pt2f", U.pack_container(_codecs.encode(pkg, "msgpack"), payloads,
                                                             encoding=U.MSGPACK))
    result = U.run_page_dump(exe, U.TS_DIR, path.read_bytes(), tmp_path)
    assert result["status"] == "ok", result["text"][:2000]
    assert result["text"] == dump(path)


def test_python_sharded_file_dumps_like_python_and_stale_shard_refused(ts, tmp_path):
    """Shards written by the Python writer read the same; a shard of another save (same name and size) is refused."""
    import shard_samples
    from pt2format._dump import dump

    (tmp_path / "good").mkdir()
    good = shard_samples.write_sharded(tmp_path / "good")
    assert_dump_equal(good, dump(good).encode("utf-8"))
    stale = shard_samples.write_with_stale_shard(tmp_path)
    r = U.ts_dump(stale)
    assert r.returncode == 1 and b"StaleShardError" in r.stderr and b"another save" in r.stderr  # as Python
    assert shard_samples.STALE_SHARD.encode() in r.stderr
