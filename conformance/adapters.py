"""The interfaces a writer, a loader and a dump reader provide to be checked by the runner, and the built-in ones.

The runner checks any writer or loader, not only pt2format's. It names them
on its command line as `module:attribute` (`--writer`, `--loader`) and a
dump reader as a command (`--dump-reader`); see conformance/README.md.

A **writer** is an object with

    save(obj, path) -> None       obj: an ExportedProgram, or a dict name -> ExportedProgram
                                  when `multi_program` is true
    label: str                    short name for the report's row (optional)
    pt2format_file: bool          its files are pt2format files, so validate/dump/dedup
                                  apply (optional, default True)
    multi_program: bool           it can save several programs in one file (optional,
                                  default False)
    deterministic_bytes: bool     saving the same program twice gives the same bytes, so
                                  `resave` applies (optional, default True)
    save_options: tuple           the options `save` takes as keywords, of ("extra_files",
                                  "metadata") (optional, default none): the runner passes
                                  each one it declares and the `options` check reads it back

A **loader** is an object with

    load(path, program=None) -> ExportedProgram
                                  runs in a fresh process that imports no corpus code;
                                  `program` names one program of a multi-program file
    multi_program: bool           (optional, default False)
    load_options: tuple           the options `load` takes as keywords, of ("map_location",
                                  "weights", "extra_files", "metadata") (optional, default
                                  none): `options` loads once with each one it declares:
                                  map_location="meta" and weights=False must give meta-device
                                  state and the same graph; extra_files={} and metadata={}
                                  must be filled in with what the writer was given

A **dump reader** is a command line with `{path}` in it; it must print the
canonical dump (schema/SPEC.md) of a pt2format file on stdout and exit 0.

A `module:attribute` that names a class is instantiated without arguments.
"""

from __future__ import annotations

import importlib
import sys

ENCODINGS = ("flatbuffers", "msgpack", "json")


class Pt2formatWriter:
    """pt2format.save in one encoding."""

    pt2format_file = True
    multi_program = True
    deterministic_bytes = True

    save_options = ("extra_files", "metadata")

    def __init__(self, encoding: str = "flatbuffers"):
        self.encoding = encoding
        self.label = encoding

    def save(self, obj, path, **options) -> None:
        import pt2format

        pt2format.save(obj, path, encoding=self.encoding, fsync=False, progress=False, **options)


class Pt2formatLoader:
    """pt2format.load."""

    multi_program = True
    load_options = ("map_location", "weights", "extra_files", "metadata")

    def load(self, path, program=None, **options):
        import pt2format

        return pt2format.load(path, program=program, allow_subclasses=trusted_subclasses(), **options)


class TorchWriter:
    """torch.export.save: torch's own format (a zip of pickles and JSON), shown beside ours."""

    label = "torch"
    pt2format_file = False  # validate, dump and dedup do not apply
    multi_program = False  # torch.export.save writes one program per file
    # Measured with torch 2.13: saving the same ExportedProgram twice gives different
    # bytes (the zip's entries differ from byte 30 on), so `resave` cannot apply.
    deterministic_bytes = False
    save_options = ("extra_files",)  # torch.export.save has no metadata

    def save(self, obj, path, extra_files=None) -> None:
        import torch

        torch.export.save(obj, path, extra_files=extra_files)


class TorchLoader:
    """torch.export.load."""

    multi_program = False
    load_options = ("extra_files",)  # torch.export.load has no map_location, weights or metadata

    def load(self, path, program=None, extra_files=None):
        import torch

        if extra_files is None:
            return torch.export.load(path)
        # torch fills in only the names it is given, as text: ask for every name in the archive.
        import zipfile

        with zipfile.ZipFile(path) as z:
            names = [n.split("/extra/", 1)[1] for n in z.namelist() if "/extra/" in n]
        wanted = {n: "" for n in names}
        ep = torch.export.load(path, extra_files=wanted)
        extra_files.clear()
        extra_files.update({k: v.encode("utf-8") if isinstance(v, str) else v for k, v in wanted.items()})
        return ep


def trusted_subclasses() -> tuple:
    """The tensor subclasses the loading process trusts: `TENSOR_SUBCLASSES` of the imported oplibs.

    A case's `child_imports` name the libraries a runtime would import; those
    that define tensor subclasses list them, as a user would pass them to
    `pt2format.load(allow_subclasses=...)`. Nothing else is allowed.
    """
    out = []
    for name, mod in sorted(sys.modules.items()):
        if name.startswith("conformance.oplibs.") and mod is not None:
            out.extend(getattr(mod, "TENSOR_SUBCLASSES", ()))
    return tuple(out)


flatbuffers_writer = Pt2formatWriter("flatbuffers")
msgpack_writer = Pt2formatWriter("msgpack")
json_writer = Pt2formatWriter("json")
pt2format_loader = Pt2formatLoader()
torch_writer = TorchWriter()
torch_loader = TorchLoader()

#: What the runner passes to a writer for each option it declares (`save_options`); the
#: `options` check reads the same back through the loader. Text only: torch.export.save
#: takes extra files as str (pt2format stores str as UTF-8 and gives bytes back).
SAVE_OPTION_VALUES = {"extra_files": {"conformance/notes.txt": "extra file of a conformance run: \u00e9\u2713\n"},
                      "metadata": {"conformance.run": "1", "text": "\u00e9\u2713 with spaces"}}


def save_options(writer) -> dict:
    """The options to pass to `writer.save`: those it declares, with SAVE_OPTION_VALUES."""
    return {k: SAVE_OPTION_VALUES[k] for k in attr(writer, "save_options", ()) if k in SAVE_OPTION_VALUES}


def is_own_writer(writer) -> bool:
    """pt2format's own writer (its files are the reference a third-party writer's are compared with)."""
    return isinstance(writer, Pt2formatWriter)


#: The default dump reader: pt2format's own command line.
PT2FORMAT_DUMP = "{python} -m pt2format dump {path}"


def resolve(spec: str):
    """The object `module:attribute` names (a class is instantiated). Used for the runner's
    command line and in the loader process; it imports the module, so name only code you trust."""
    if ":" not in spec:
        raise ValueError(f"adapter {spec!r}: expected module:attribute")
    mod, _, attr = spec.partition(":")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj() if isinstance(obj, type) else obj


def attr(obj, name: str, default):
    """An optional interface attribute with its documented default."""
    return getattr(obj, name, default)
