"""Attack-agnostic injection: hostile strings and extreme integers in every field of real files.

The test does not know where the attacks are. It decodes real files (the
conformance corpus saved in each encoding), walks the decoded model tree
through each generated class's `FIELDS` table (so a field added to the schema
is covered without touching this module) and lists every *site*: each string
field, each string in a string vector, each integer field and integer vector
element. Map keys are string fields of their entry tables (`StringEntry.key`,
`ArgumentMapEntry.key`, `MapValue` keys through `StringValue.value`), so they
are sites like any other.

Each site gets each payload. Strings are substituted in two ways: at the one
site (most such files break a reference and should be refused), and as a
*value*, everywhere the same string occurs in the tree (a node renamed
consistently keeps the file well-formed, so it reaches torch's code
generators). A payload that would run writes a marker file. The mutated tree is
re-encoded without the writer's validation, and where the encoder itself
refuses (lone surrogates, integers out of the field's range) the bytes are
spliced into the encoded program directly (`_splice`).

`pt2f_injection_worker` runs each mutant in a separate process (read,
validate, the CLI, load, module(), a call, printing, decompositions,
unflatten, the unflattened module through its generated code) and reports
where it ended; `classify` turns that into a verdict.

Command line (full run, prints counts of sites x payloads and verdicts):
    scripts/injection.sh --full [--cases mlp,cond] [--encodings flatbuffers] [-j 2]

`--full` runs every field x payload of the corpus *once* (`once()`): each
planned mutation is keyed by what it exercises (the schema path and payload;
for a value substitution, the set of schema paths holding the value), and one
base file that has the key is picked by a stable hash, so every encoding and
case carries a share. `--all-bases` runs every key in every base file instead
(about 30 times as many mutants, days of CPU).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pt2f_injection_payloads import CONTEXTS, CORE_PAYLOADS, run_in_context, string_payloads  # noqa: F401
from pt2f_injection_run import Worker, classify, finding_line, run_mutants, summarize  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "uint8": (0, (1 << 8) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1),
}
#: The issue's extremes; each is clamped to the field's type, and also tried
#: unclamped where the encoding can carry it (JSON any size, MessagePack up to uint64).
INT_EXTREMES = (0, -1, 1 << 31, (1 << 63) - 1, -(1 << 63))
INT_OUT_OF_RANGE = ((1 << 64) - 1, 1 << 64, -(1 << 63) - 1, 10 ** 40)

# Default corpus cases: dict and list inputs, kwargs, a dataclass output,
# nested modules (unflatten), dynamic shapes (guards), control flow, state of
# every kind, several programs.
DEFAULT_CASES = ("mlp", "pytree_containers", "dataclass_output", "cond", "dynamic_batch", "derived_dim_mul",
                 "scalar_none_kwargs_inputs", "kwargs_only", "params_and_buffers", "mutations", "lifted_constants",
                 "multi_program", "custom_op", "symfloat_symbool", "unbacked_item", "views_as_state")
ENCODINGS = ("flatbuffers", "msgpack", "json")


@dataclass(frozen=True)
class Site:
    """Where to mutate: a path of attribute names and list indices from the Package root."""
    path: tuple
    kind: str          # "string" | "int"
    type: str          # "string" or the integer type ("int64", "uint8", ...)
    schema_path: str   # the path without indices, e.g. programs[].graph.nodes[].name

    def label(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")


@dataclass
class Mutant:
    id: str
    base: str            # base file label (case/encoding)
    encoding: str
    site: str            # label of the site, or "value:<hash>" for a value substitution
    schema_path: str
    payload: str         # payload name or integer value
    mode: str            # "site" | "value" | "int"
    path: str = ""       # file written
    note: str = ""       # how the bytes were made ("encoded", "spliced")


# -- walking the tree ------------------------------------------------------------

def walk(obj, path=(), schema=()):
    """Yield every string and integer Site below the model object `obj`, through the generated FIELDS."""
    from pt2format._model_base import ModelObject

    for spec in type(obj).FIELDS:
        name, _fid, kind, elem = spec[0], spec[1], spec[2], spec[3]
        value = getattr(obj, name)
        p = path + (name,)
        s = schema + (name,)
        if kind == "string":
            if value is not None:
                yield Site(p, "string", "string", _schema(s))
        elif kind in ("scalar", "enum") and elem in INT_RANGES:
            yield Site(p, "int", elem, _schema(s))
        elif kind in ("table", "struct", "union"):
            if isinstance(value, ModelObject):
                yield from walk(value, p, s + (f"<{type(value).__name__}>",) if kind == "union" else s)
        elif kind == "vector":
            if elem == "string":
                for i, _ in enumerate(value):
                    yield Site(p + (i,), "string", "string", _schema(s + ("[]",)))
            elif elem in INT_RANGES:
                for i, _ in enumerate(value):
                    yield Site(p + (i,), "int", elem, _schema(s + ("[]",)))
            elif elem in ("table", "struct"):
                for i, item in enumerate(value):
                    if isinstance(item, ModelObject):
                        yield from walk(item, p + (i,), s + ("[]",))


def _schema(parts) -> str:
    return ".".join(parts).replace(".[]", "[]")


def get_at(root, path):
    obj = root
    for step in path:
        obj = obj[step] if isinstance(step, int) else getattr(obj, step)
    return obj


def set_at(root, path, value):
    parent = get_at(root, path[:-1])
    if isinstance(path[-1], int):
        parent[path[-1]] = value
    else:
        setattr(parent, path[-1], value)


def int_values(typ: str, *, unclamped: bool) -> list:
    """The extremes for a field of type `typ`: clamped to its range, plus out-of-range ones if asked."""
    lo, hi = INT_RANGES[typ]
    vals = []
    for v in INT_EXTREMES:
        c = min(max(v, lo), hi)
        if c not in vals:
            vals.append(c)
    if unclamped:
        for v in INT_EXTREMES + INT_OUT_OF_RANGE:
            if not lo <= v <= hi and v not in vals:
                vals.append(v)
    return vals


def _carries(encoding: str, v: int) -> bool:
    if encoding == "json":
        return True
    if encoding == "msgpack":
        return -(1 << 63) <= v < (1 << 64)
    return False


# -- writing mutants --------------------------------------------------------------

@dataclass
class BaseFile:
    """One decoded corpus file: its package tree, raw container pieces and how to load it."""
    label: str
    path: str
    encoding: str
    package: object
    header: object
    data: bytes
    child_imports: tuple = ()
    programs: tuple = ()


def open_base(path, label, encoding, child_imports=()):
    from pt2format import _codecs
    from pt2format._container.header import SectionKind
    from pt2format._container.reader import ContainerFile

    with ContainerFile(path) as c:
        program = bytes(c.section_view(0))
        datas = [bytes(c.section_view(i)) for i, e in enumerate(c.header.sections) if e.kind == SectionKind.DATA]
        header = c.header
    pkg = _codecs.decode(program, encoding)
    return BaseFile(label, str(path), encoding, pkg, header, datas[0] if datas else b"", tuple(child_imports),
                    tuple(p.name for p in pkg.programs))


def write_program(path, base: BaseFile, program: bytes) -> None:
    """A container with `program` as its PROGRAM section and the base file's DATA bytes unchanged."""
    from pt2format._container.crc import crc32
    from pt2format._container.header import ENCODING_BY_NAME
    from pt2format._container.writer import DataLayout, build_header, write_container

    layout = DataLayout((0,), (len(base.data),), len(base.data)) if base.data else None
    header = build_header(format_version=base.header.format_version, required_features=base.header.required_features,
                          program_length=len(program), program_crc=crc32(program),
                          encoding=ENCODING_BY_NAME[base.encoding], data_layout=layout,
                          data_crc=crc32(base.data) if base.data else None)
    write_container(path, header, program, [base.data] if base.data else [], layout, fsync=False,
                    progress_callback=None)


def _encode(pkg, encoding):
    from pt2format import _codecs

    return _codecs.encode(pkg, encoding)


def _sentinel_str(nbytes: int, rng: random.Random) -> str:
    return "".join(rng.choice("QZJXKVWYqzjxkvwy") for _ in range(nbytes))


def _splice_string(pkg, paths, payload: str, encoding: str, rng) -> bytes | None:
    """Encode with an ASCII sentinel of the payload's byte length at `paths`, then put the payload's bytes there.

    Used when the encoder refuses the payload (lone surrogates): the bytes are
    what a hostile writer would produce (UTF-8 with surrogatepass, a JSON \\u
    escape, a MessagePack str of those bytes).
    """
    raw = payload.encode("utf-8", "surrogatepass")
    sentinel = _sentinel_str(max(len(raw), 8), rng)
    raw = raw + b"_" * (len(sentinel) - len(raw))
    for pth in paths:
        set_at(pkg, pth, sentinel)
    data = _encode(pkg, encoding)
    sb = sentinel.encode()
    if data.count(sb) != len(paths):
        return None
    if encoding == "json":
        text = json.dumps(raw.decode("utf-8", "surrogatepass"))[1:-1].encode()
        return data.replace(sb, text)
    return data.replace(sb, raw)  # same length: FlatBuffers/MessagePack length prefixes stay right


def _splice_int(pkg, path, typ: str, value: int, encoding: str) -> bytes | None:
    """Encode with a sentinel integer at `path`, then replace its encoding by `value`'s."""
    lo, hi = INT_RANGES[typ]
    sentinel = 0x5A5A5A5A5A5A5A5 if hi >= (1 << 62) else (0x5A5A5A5 if hi >= (1 << 30) else None)
    if sentinel is None:
        return None  # an 8/16-bit field has no sentinel unlikely to occur elsewhere
    set_at(pkg, path, sentinel)
    data = _encode(pkg, encoding)
    if encoding == "json":
        sb = str(sentinel).encode()
        new = str(value).encode()
    else:
        import msgpack

        sb = msgpack.packb(sentinel)
        new = msgpack.packb(value) if value >= 0 else msgpack.packb(value)
    if data.count(sb) != 1:
        return None
    return data.replace(sb, new)


def plan(base: BaseFile, *, sites="per-field", modes=("value", "site", "int"), payload_names=None, seed=0):
    """Every (mode, target, payload) to try on `base`, in order; nothing is written yet.

    `sites`: "all" (every site), "per-field" (the first and one random other
    occurrence of each schema path), or an int N (a deterministic random sample
    of N sites). target is a Site, or for "value" a list of the Sites holding
    one string value.
    """
    rng = random.Random(seed)
    all_sites = list(walk(base.package))
    chosen = _choose(all_sites, sites, rng)
    payloads = string_payloads("M")
    names = [k for k in payloads if payload_names is None or k in payload_names]
    out = []
    if "value" in modes:
        # value substitution first: every occurrence of one string value, consistently
        by_value = collections.OrderedDict()
        for site in all_sites:
            if site.kind == "string":
                by_value.setdefault(get_at(base.package, site.path), []).append(site)
        values = _choose_values([v for v in by_value if v], sites, rng)
        out += [("value", by_value[v], p) for v in values for p in names]
    if "site" in modes:
        out += [("site", s, p) for s in chosen if s.kind == "string" for p in names]
    if "int" in modes:
        for site in (s for s in chosen if s.kind == "int"):
            for v in int_values(site.type, unclamped=base.encoding != "flatbuffers"):
                lo, hi = INT_RANGES[site.type]
                if lo <= v <= hi or _carries(base.encoding, v):
                    out.append(("int", site, v))
    return out


def make_mutants(base: BaseFile, outdir: Path, marker: str, steps, *, seed=0):
    """Write one mutated file per step of `plan()` to `outdir` and yield its Mutant (skipping unencodable ones)."""
    import copy

    from pt2format.errors import Pt2FormatError

    rng = random.Random(seed)
    payloads = string_payloads(marker)

    def emit(site_label, schema_path, pname, mode, pkg_mutate, splice):
        mid = _mid(base, site_label, pname, mode)
        mut = Mutant(mid, base.label, base.encoding, site_label, schema_path, str(pname), mode)
        pkg = copy.deepcopy(base.package)
        try:
            pkg_mutate(pkg)
            program = _encode(pkg, base.encoding)
            mut.note = "encoded"
        except (Pt2FormatError, UnicodeError, OverflowError, ValueError, TypeError):
            program = splice(copy.deepcopy(base.package))
            mut.note = "spliced"
        if program is None:
            return None
        mut.path = str(outdir / f"{mid}.pt2f")
        write_program(mut.path, base, program)
        return mut

    for mode, target, p in steps:
        if mode == "value":
            group, payload = target, payloads[p]
            value = get_at(base.package, group[0].path)
            m = emit(f"value:{value[:40]!r}", group[0].schema_path + f" (+{len(group) - 1})", p, "value",
                     lambda pkg, g=group, v=payload: [set_at(pkg, s.path, v) for s in g],
                     lambda pkg, g=group, v=payload: _splice_string(pkg, [s.path for s in g], v, base.encoding, rng))
        elif mode == "site":
            site, payload = target, payloads[p]
            m = emit(site.label(), site.schema_path, p, "site",
                     lambda pkg, s=site, v=payload: set_at(pkg, s.path, v),
                     lambda pkg, s=site, v=payload: _splice_string(pkg, [s.path], v, base.encoding, rng))
        else:
            site, v = target, p
            in_range = INT_RANGES[site.type][0] <= v <= INT_RANGES[site.type][1]
            m = emit(site.label(), site.schema_path, v, "int",
                     (lambda pkg, s=site, v=v: set_at(pkg, s.path, v)) if in_range else _refuse,
                     lambda pkg, s=site, v=v: _splice_int(pkg, s.path, s.type, v, base.encoding))
        if m:
            yield m


def _mid(base, site_label, pname, mode) -> str:
    return hashlib.sha1(f"{base.label}|{site_label}|{pname}|{mode}".encode()).hexdigest()[:12]


def mutant_id(base: BaseFile, step) -> str:
    """The id make_mutants gives the mutant of one planned step (stable across runs of the same plan)."""
    mode, target, p = step
    if mode == "value":
        value = get_at(base.package, target[0].path)
        return _mid(base, f"value:{value[:40]!r}", p, "value")
    return _mid(base, target.label(), p, mode)


def _refuse(pkg):
    raise ValueError("out of the field's range: splice it")


def _choose(all_sites, sites, rng):
    if sites == "all":
        return all_sites
    if isinstance(sites, int):
        return sorted(rng.sample(all_sites, min(sites, len(all_sites))), key=all_sites.index)
    by_schema = collections.OrderedDict()
    for s in all_sites:
        by_schema.setdefault(s.schema_path, []).append(s)
    out = []
    for group in by_schema.values():
        out.append(group[0])
        if len(group) > 1:
            out.append(rng.choice(group[1:]))
    return out


def _choose_values(values, sites, rng):
    if sites == "all":
        return values
    if isinstance(sites, int):
        return sorted(rng.sample(values, min(sites, len(values))), key=values.index)
    return values


def step_key(step) -> tuple:
    """What a planned step exercises, independent of the base file it was planned on."""
    mode, target, p = step
    if mode == "value":
        return mode, tuple(sorted({s.schema_path for s in target})), str(p)
    return mode, target.schema_path, str(p)


def _matches(step, pattern: str) -> bool:
    """Whether a planned step mutates a field whose schema path matches the regex `pattern` (--fields)."""
    import re

    mode, target, _p = step
    paths = [s.schema_path for s in target] if mode == "value" else [target.schema_path]
    return any(re.search(pattern, pth) for pth in paths)


def once(plans):
    """[(base, steps)] -> the same with each step_key kept in exactly one base (picked by a stable hash)."""
    holders = collections.OrderedDict()
    for bi, (_base, steps) in enumerate(plans):
        for si, st in enumerate(steps):
            holders.setdefault(step_key(st), []).append((bi, si))
    keep = set()
    for key, where in holders.items():
        h = int(hashlib.sha1(repr(key).encode()).hexdigest()[:8], 16)
        keep.add(where[h % len(where)])
    return [(base, [st for si, st in enumerate(steps) if (bi, si) in keep]) for bi, (base, steps) in enumerate(plans)]


# -- corpus files -------------------------------------------------------------------

def build_corpus_files(cases, encodings, outdir: Path):
    """Export each corpus case and save it with pt2format.save in each encoding; return BaseFiles."""
    import warnings

    import pt2format
    from conformance.corpus import get_case

    out = []
    for name in cases:
        case = get_case(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = case.build()
            if isinstance(built, dict):
                obj = {k: p.export() for k, p in built.items()}
            else:
                obj = built.export()
        for enc in encodings:
            path = outdir / f"{name}-{enc}.pt2f"
            pt2format.save(obj, path, encoding=enc, fsync=False, progress=False)
            out.append(open_base(path, f"{name}/{enc}", enc, case.child_imports))
    return out


def golden_files(encodings):
    """The golden files as bases (corpus programs saved by pt2format.save); cheaper than exporting again."""
    from conformance.corpus import all_cases

    cases = all_cases()
    out = []
    for path in sorted((ROOT / "conformance" / "golden").glob("*/*/program.pt2f")):
        case, _, enc = path.parent.name.rpartition("-")
        if enc in encodings:
            imports = cases[case].child_imports if case in cases else ()
            out.append(open_base(path, f"golden {path.parent.parent.name}/{case}/{enc}", enc, imports))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true",
                    help="every default case and encoding; each field x payload once across them (see --all-bases)")
    ap.add_argument("--all-bases", action="store_true", help="with --full: every field x payload in every base file")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes run in parallel")
    ap.add_argument("--cases", default=None, help="comma-separated corpus case names")
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--sites", default="per-field", help="all | per-field | N (random sample per file)")
    ap.add_argument("--modes", default="value,site,int",
                    help="value (a string replaced everywhere it occurs), site (at one place), int")
    ap.add_argument("--payloads", default=None, help="comma-separated payload names, or 'core' (default: all)")
    ap.add_argument("--fields", default=None,
                    help="regex: keep only mutants of fields whose schema path matches it (for a value "
                         "substitution, any path holding the value), e.g. 'input_guards|guard_sources|sym_exprs'")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant before it counts as a hang")
    ap.add_argument("--quick", action="store_true", help="skip run_decompositions/unflatten (faster)")
    ap.add_argument("--golden", action="store_true", help="use the golden files as bases instead of exporting cases")
    ap.add_argument("--plan-only", action="store_true", help="print the number of mutants per file and mode; run none")
    ap.add_argument("--limit", type=int, default=None, help="at most this many mutants per file")
    ap.add_argument("--findings", default=None, help="append one line per failing mutant to this file")
    ap.add_argument("--jsonl", default=None, help="write every result as a JSON line to this file")
    ap.add_argument("--only-ids", default=None,
                    help="a --jsonl file of an earlier run: run again only its mutants with these verdicts "
                         "(FILE:verdict,verdict; ids are stable for the same plan)")
    args = ap.parse_args(argv)
    cases = args.cases.split(",") if args.cases else (DEFAULT_CASES if args.full else ("pytree_containers",))
    encodings = args.encodings.split(",")
    sites = int(args.sites) if args.sites.isdigit() else args.sites
    work = Path(tempfile.mkdtemp(prefix="pt2f-inject-"))
    t0 = time.time()
    if args.golden:
        bases = golden_files(encodings)
        if args.cases:
            bases = [b for b in bases if b.label.split("/")[1] in cases]
    else:
        bases = build_corpus_files(cases, encodings, work)
    jsonl = open(args.jsonl, "a") if args.jsonl else None

    def on_result(mut, res, verdict):
        if jsonl:
            jsonl.write(json.dumps({**mut.__dict__, "verdict": verdict, **res}) + "\n")
            jsonl.flush()
        if verdict.startswith("FAIL"):
            line = finding_line(mut, res, verdict)
            print(line, flush=True)
            if args.findings:
                with open(args.findings, "a") as f:
                    f.write(line + "\n")

    payload_names = (CORE_PAYLOADS if args.payloads == "core" else
                     args.payloads.split(",") if args.payloads else None)
    plans = [(base, plan(base, sites=sites, modes=tuple(args.modes.split(",")), payload_names=payload_names))
             for base in bases]
    if args.fields:
        plans = [(base, [st for st in steps if _matches(st, args.fields)]) for base, steps in plans]
    if args.full and not args.all_bases:
        plans = once(plans)
    if args.limit:
        plans = [(base, steps[:args.limit]) for base, steps in plans]
    if args.only_ids:
        file, _, verdicts = args.only_ids.partition(":")
        wanted = set(verdicts.split(",")) if verdicts else None
        with open(file) as f:
            rows = [json.loads(line) for line in f]
        ids = {r["id"] for r in rows if wanted is None or r["verdict"] in wanted}
        plans = [(base, [st for st in steps if mutant_id(base, st) in ids]) for base, steps in plans]
    all_results = []
    if args.plan_only:
        for base, steps in plans:
            by_mode = collections.Counter(st[0] for st in steps)
            print(f"{base.label}: {len(steps)} mutants planned ("
                  + ", ".join(f"{k} {v}" for k, v in sorted(by_mode.items())) + ")", flush=True)
            all_results += [(Mutant("", base.label, base.encoding, "", st[1][0].schema_path if st[0] == "value"
                                    else st[1].schema_path, str(st[2]), st[0]), {}, "planned") for st in steps]
    else:
        all_results = _run_parallel(plans, work, max(1, args.jobs), timeout=args.timeout,
                                    thorough=not args.quick, on_result=on_result)
    print(summarize(all_results))
    print(f"{len(bases)} base files, {time.time() - t0:.0f} s")
    return 1 if any(v.startswith("FAIL") for *_, v in all_results) else 0


def _run_parallel(plans, work: Path, jobs: int, **kw):
    """Run every planned step, dealt round-robin to `jobs` threads, each with its own workers and marker."""
    import threading

    lock = threading.Lock()
    on_result = kw.pop("on_result")

    def locked(mut, res, verdict):
        with lock:
            on_result(mut, res, verdict)

    def shard(j):
        marker_dir = work / f"mk{j}"
        marker_dir.mkdir(exist_ok=True)
        marker = str(marker_dir / "pwned")
        # One generator over every base, so a worker (torch imported once) serves them all.
        muts = ((m, base.child_imports) for base, steps in plans
                for m in make_mutants(base, work, marker, steps[j::jobs]))
        try:
            results[j] = run_mutants(muts, marker_dir, on_result=locked, **kw)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread below
            errors.append(e)

    results = [[] for _ in range(jobs)]
    errors = []
    threads = [threading.Thread(target=shard, args=(j,)) for j in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    out = [r for rs in results for r in rs]
    for base, _ in plans:
        mine = collections.Counter(v for m, _, v in out if m.base == base.label)
        print(f"{base.label}: {sum(mine.values())} mutants; "
              + ", ".join(f"{k} {v}" for k, v in sorted(mine.items())), flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
