"""The `pt2format` command line: inspect, validate, dump, convert, view and conformance, without torch.

Exit status: 0 on success, 1 when the file is bad (the error message goes to
stderr) or a conformance check fails, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import collections
import sys

from pt2format import _options
from pt2format.errors import Pt2FormatError

_ENCODINGS = ("flatbuffers", "msgpack", "json")


def _walk_graphs(graph):
    """The graph and every subgraph reachable through GraphArgument inputs, depth first."""
    from pt2format._generated import model as m

    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for node in reversed(g.nodes):
            for arg in node.inputs:
                if type(arg.value) is m.GraphArgument and arg.value.graph is not None:
                    stack.append(arg.value.graph)


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _inspect(path: str, top: int) -> str:
    from pt2format._api import read
    from pt2format._container.header import SectionEncoding, SectionKind, enum_name
    from pt2format._generated import model as m

    with read(path) as f:
        h = f.header
        pkg = f.package
        out = [f"file: {path} ({h.file_length} bytes)",
               f"format: {h.format_major}.{h.format_minor} (header version {h.header_version}), "
               f"required features: 0x{h.required_features:x}"]
        prod = pkg.producer
        if prod is not None:
            out.append(f"producer: {prod.name} {prod.version} (torch {prod.torch_version})")
        out.append("sections:")
        for i, s in enumerate(h.sections):
            crc = f"crc32 0x{s.checksum:08x}" if s.checksum_kind else "no checksum"
            out.append(f"  {i}: {enum_name(SectionKind, s.kind):<7} {enum_name(SectionEncoding, s.encoding):<11} "
                       f"offset {s.offset:>12}  length {s.length:>12} ({_fmt_bytes(s.length)})  "
                       f"align {s.alignment}  {crc}")
        if any(h.package_id):
            out.append(f"package id: {h.package_id.hex()}")
        if pkg.shard_files:
            out.append("shard files: " + ", ".join(f"{s.name} ({s.size} bytes)" for s in pkg.shard_files))
        if pkg.external_files:
            out.append("external files: " + ", ".join(
                f"{e.name} ({m.ExternalFormat(e.format).name.lower()}, {e.size} bytes)" for e in pkg.external_files))
        if pkg.weight_sets:
            out.append("weight sets: " + ", ".join(f"{w.name} ({len(w.entries)} tensors)" for w in pkg.weight_sets))
        out.append(f"programs: {len(pkg.programs)}")
        for prog in pkg.programs:
            graphs = list(_walk_graphs(prog.graph))
            nodes = sum(len(g.nodes) for g in graphs)
            sub = nodes - len(prog.graph.nodes)
            out.append(f"  {prog.name}: {nodes} nodes ({sub} in {len(graphs) - 1} subgraphs), "
                       f"{len(prog.graph.inputs)} inputs, {len(prog.graph.outputs)} outputs, "
                       f"{len(prog.symbols)} symbols, {len(prog.state)} state entries")
            ops = collections.Counter(n.target for g in graphs for n in g.nodes)
            for target, count in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
                out.append(f"    {count:>6}  {target}")
            if len(ops) > top:
                out.append(f"    ... {len(ops) - top} more operators")
        if pkg.metadata:
            out.append("metadata:")
            for e in pkg.metadata:
                out.append(f"  {e.key}: {e.value!r}")
        extra = getattr(pkg, "extra_files", None) or []
        if extra:
            out.append("extra files: " + ", ".join(f"{e.name} ({pkg.storages[e.storage].size} bytes)"
                                                    for e in extra))
        total = sum(s.size for s in pkg.storages)
        out.append(f"tensors: {len(pkg.tensors)} in {len(pkg.storages)} storages, {total} bytes ({_fmt_bytes(total)})")
        dtypes = collections.Counter(t.dtype for t in pkg.tensors)
        if dtypes:
            names = {int(v): v.name for v in m.ScalarType}
            out.append("dtypes: " + ", ".join(f"{names.get(d, d)} x{c}" for d, c in sorted(dtypes.items())))
        return "\n".join(out) + "\n"


def _hexdump(path: str) -> str:
    from pt2format._container.annotate import annotate
    from pt2format._container.reader import explain_foreign
    from pt2format._source import read_regular
    from pt2format.errors import HeaderError

    buf = bytes(read_regular(path)[0])
    try:
        return annotate(buf)
    except HeaderError as e:
        explain_foreign(e, buf)  # a torch archive is named as one, with how to convert it
        raise e.with_context(file=path)


def _parser() -> argparse.ArgumentParser:
    from pt2format import __version__

    p = argparse.ArgumentParser(prog="pt2format", description="Inspect, validate, dump and convert .pt2f files.",
                                epilog="No command runs anything from a file, and every one refuses a path that is "
                                "not a regular file (directory, FIFO, device). torch's own loader "
                                "(torch.export.load) runs only in `convert` from a torch archive you name as such: a "
                                "source ending in .pt2, or --from-torch; never because of what a file contains. See "
                                "SECURITY.md.")
    p.add_argument("--version", action="version", version=f"pt2format {__version__} (format {_format_version()})")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("inspect", help="summarize a file: header, sections, programs, operators, tensors")
    s.add_argument("file")
    s.add_argument("--top", type=int, default=10, help="operators to list per program (default 10)")
    s.add_argument("--hexdump", action="store_true", help="print an annotated hexdump of the file instead")
    s = sub.add_parser("validate", help="check everything, data checksums included; prints OK")
    s.add_argument("file")
    s = sub.add_parser("dump", help="print the canonical dump (SPEC.md section 6)")
    s.add_argument("file")
    s = sub.add_parser("convert", help="convert torch .pt2 <-> .pt2f, or rewrite a .pt2f with another encoding",
                       description="pt2format convert model.pt2 model.pt2f   (torch.export archive -> .pt2f; needs "
                       "torch, and reads the archive with torch.export.load: as safe as that, no safer)\n"
                       "pt2format convert --from-torch archive.bin model.pt2f   (the same, for a torch archive "
                       "whose name does not end in .pt2)\n"
                       "pt2format convert model.pt2f model.pt2   (-> torch.export archive; needs torch)\n"
                       "pt2format convert model.pt2f out.pt2f --encoding json   (switch the program encoding)\n\n"
                       "torch.export.load runs only when you name a torch archive as such: a FILE ending in .pt2, "
                       "or --from-torch. Any other FILE is read as a .pt2f file by pt2format's reader, which runs "
                       "nothing from it; a torch archive under another name is refused (typed error), never "
                       "handed to torch because of its content. Only convert torch archives you would load with "
                       "torch.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("file")
    s.add_argument("--from-torch", action="store_true", help="FILE is a torch.export archive: read it with "
                   "torch.export.load (as safe as that call, no safer); implied by a FILE ending in .pt2")
    s.add_argument("dest", nargs="?", help="output file (or use -o)")
    s.add_argument("--encoding", choices=_ENCODINGS, help="program encoding of a .pt2f output (default "
                   f"{_options.FROM_TORCH.defaults()['encoding']} from a torch archive; required between two .pt2f "
                   "files)")
    s.add_argument("-o", "--output")
    s.add_argument("--program", help="which program to write into a torch archive (default: the only one, "
                   "or 'forward')")
    s.add_argument("--no-fsync", action="store_true", help="skip fsync (the write is still atomic)")
    s = sub.add_parser("view", help="write one self-contained HTML page showing the file's graphs (or --serve it)",
                       description="Write a self-contained HTML page (TypeScript reader, viewer and program "
                       "embedded; no network, no server) showing the file's programs as graphs. Weights are left "
                       "out unless --with-weights, or --max-weight-bytes N and the data fits in N bytes.")
    s.add_argument("file")
    s.add_argument("-o", "--output", help="HTML file to write (default: FILE with .html added)")
    s.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 and open the browser")
    s.add_argument("--port", type=int, default=0, help="port for --serve (default: any free port)")
    s.add_argument("--no-browser", action="store_true", help="with --serve: do not open a browser")
    s.add_argument("--serve-seconds", type=float, default=None, help="with --serve: stop after this many seconds")
    w = s.add_mutually_exclusive_group()
    w.add_argument("--with-weights", action="store_true", help="embed the tensor data (value summaries in the panel)")
    w.add_argument("--max-weight-bytes", type=int, metavar="N", help="embed the tensor data when it is at most N bytes")
    s = sub.add_parser("conformance", help="compare every reader's dump of every golden file with its expected.json",
                       description="Dump each golden file (GOLDEN_DIR/<format-version>/<case>/*.pt2f) with the "
                       "Python reader and each --reader, and compare with the case's expected.json byte for byte. "
                       "A reader exiting with status 3 does not read that file's encoding: 'unsupported'. "
                       "Exit status 1 on any MISMATCH or ERROR.")
    s.add_argument("golden_dir", nargs="?", metavar="GOLDEN_DIR",
                   help="default: conformance/golden in the working directory, else in the pt2format checkout")
    s.add_argument("--reader", action="append", default=[], type=_reader_arg, metavar="NAME=COMMAND",
                   help="another reader; `COMMAND FILE` prints the canonical dump, e.g. cpp=build/cpp/pt2f-dump "
                   "or ts='node loaders/ts/dist/cli.js dump' (repeatable)")
    s.add_argument("--timeout", type=float, default=120.0, help="seconds per reader and file (default 120)")
    return p


def _view(args) -> int:
    from pt2format import _view as view

    try:
        page = view.render(args.file, with_weights=args.with_weights, max_weight_bytes=args.max_weight_bytes)
    except view.ViewerNotBuiltError as e:
        print(f"pt2format view: {e}", file=sys.stderr)
        return 2
    if args.output or not args.serve:
        from pt2format._source import open_output

        out = args.output or args.file + ".html"
        with open_output(out, "w", encoding="utf-8") as f:  # never a FIFO, device or directory
            f.write(page)
        print(f"wrote {out}")
    if args.serve:
        view.serve(page, port=args.port, open_browser=not args.no_browser, timeout=args.serve_seconds)
    return 0


def _reader_arg(spec: str):
    from pt2format._conformance import parse_reader

    try:
        return parse_reader(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _format_version() -> str:
    from pt2format import FORMAT_VERSION

    return ".".join(map(str, FORMAT_VERSION))


def _names_torch_archive(path: str) -> bool:
    """The documented form of a torch archive source: a name ending in .pt2 (torch.export.save's extension)."""
    return path.lower().endswith(".pt2")


def _names_pt2f(path: str) -> bool:
    return path.lower().endswith(".pt2f")


class _Usage(Exception):
    """A convert command line that names no conversion: one line on stderr, exit status 2."""


def _program_for_torch(path: str, program: str | None) -> str | None:
    """The program a torch archive gets from `path`; a file of several programs needs --program (not `program=`)."""
    if program is not None:
        return program
    from pt2format._api import read

    with read(path) as f:
        names = [p.name for p in f.package.programs]
    if len(names) > 1 and "forward" not in names:
        raise _Usage(f"{path} holds {len(names)} programs ({', '.join(names)}) and a torch archive holds one: "
                     f"pick it with --program NAME, e.g. --program {names[0]}")
    return None


def _pick_conversion(args, dest: str) -> str:
    """"from_torch", "to_torch" or "reencode", from the names and flags given, never from the file's bytes."""
    if args.from_torch or _names_torch_archive(args.file):
        if _names_torch_archive(dest):
            raise _Usage(f"a torch archive converts to a .pt2f file, not to another .pt2: name the output "
                         f"{dest}f, or convert the other way (FILE.pt2f DEST.pt2)")
        return "from_torch"
    if _names_torch_archive(dest):
        if args.encoding is not None:
            raise _Usage("--encoding applies to a .pt2f output; a DEST ending in .pt2 is a torch archive")
        return "to_torch"
    if args.encoding is None:
        if not _names_pt2f(dest):
            raise _Usage(f"unsupported output {dest!r}: convert writes a .pt2f file (give --encoding) or a torch "
                         "archive (a DEST ending in .pt2)")
        raise _Usage("--encoding is required to rewrite a .pt2f as a .pt2f "
                     "(a DEST ending in .pt2 writes a torch archive)")
    return "reencode"


def _convert(args) -> int:
    """Pick the conversion from the names and flags given, never from the bytes of the file."""
    dest = args.dest or args.output
    if dest is None or (args.dest and args.output):
        print("pt2format convert: give the output once, as DEST or with -o", file=sys.stderr)
        return 2
    from pt2format._source import open_regular

    open_regular(args.file).close()  # a missing file or a directory is said first, before what the names ask
    try:
        kind = _pick_conversion(args, dest)
        if kind == "to_torch":
            program = _program_for_torch(args.file, args.program)
    except _Usage as e:
        print(f"pt2format convert: {e}", file=sys.stderr)
        return 2
    if kind == "from_torch":
        from pt2format._interop import from_torch

        chosen = {"encoding": args.encoding} if args.encoding else {}  # else the options table's default
        from_torch(args.file, dest, fsync=not args.no_fsync, **chosen)
    elif kind == "to_torch":
        from pt2format._interop import to_torch

        to_torch(args.file, dest, program=program)
    else:
        from pt2format._api import convert

        convert(args.file, dest, args.encoding, fsync=not args.no_fsync)
    return 0


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "inspect":
            sys.stdout.write(_hexdump(args.file) if args.hexdump else _inspect(args.file, args.top))
        elif args.command == "validate":
            from pt2format._api import validate

            validate(args.file)
            print("OK")
        elif args.command == "dump":
            from pt2format._dump import dump

            sys.stdout.write(dump(args.file))
        elif args.command == "convert":
            return _convert(args)
        elif args.command == "view":
            return _view(args)
        elif args.command == "conformance":
            from pt2format._conformance import UsageError, run

            try:
                status, report = run(args.golden_dir, args.reader, timeout=args.timeout)
            except UsageError as e:
                print(f"pt2format conformance: {e}", file=sys.stderr)
                return 2
            sys.stdout.write(report)
            return status
    except Pt2FormatError as e:
        print(f"pt2format {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"pt2format {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
