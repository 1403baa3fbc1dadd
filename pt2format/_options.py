"""The keyword options of the public functions, each defined once: name, default, type and documentation.

Every public function that takes options (`save`, `load`, `load_module`,
`open`, `attach_weights`, `save_weights`, `read`, `validate`, `from_torch`,
`to_torch`) gets its signature, the option part
of its docstring and its defaults from one `Options` table here:

- the public function in `pt2format/__init__.py` is decorated with
  `TABLE.public`: it takes `**options` (every one, defaults filled in),
  shows the full signature (`inspect.signature`, `help`, the API docs) and
  documents every option;
- the function that does the work (in the exporter, the loaders or
  `_open.py`) is decorated with `TABLE.implements`: it names the options as
  keyword-only parameters without defaults, and gets the defaults from here
  (a parameter the table lacks, or an option the function lacks, is an
  error at import time, so the two cannot drift apart); `TABLE.check` checks
  the names alone, for a class only the public function constructs;
- an inner function that other modules and tests call with some options
  left out (`_api.write_package`, `loaders._weights.read_weights`) takes
  those defaults with `TABLE.lends(name, ...)`; the layers under it take
  every value from their caller (keyword-only, no default);
- a public class configured by options (`pt2format.dcp`'s storage reader
  and writer) is decorated with `TABLE.configures`: its `__init__` is
  checked and given the defaults as by `implements`, and its docstring
  gets the options' entries as by `public`.

To add an option: one `Option(...)` line in its table, the parameter where
it is used, and `python scripts/gen_stubs.py` (the type stubs of the public
API, pt2format/__init__.pyi and dcp.pyi, come from these tables; a test fails
when they are stale). Imports without torch.
"""

from __future__ import annotations

import ast
import functools
import inspect
import reprlib
import textwrap
import dataclasses
from dataclasses import dataclass
from typing import Any

from pt2format._generated import limits as _limits

_KW = inspect.Parameter.KEYWORD_ONLY


def _split_union(annotation: str) -> list[str]:
    """``"int | str | None"`` -> its alternatives (a ``|`` inside brackets belongs to the alternative)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(annotation):
        depth += c == "["
        depth -= c == "]"
        if c == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    return parts + [annotation[start:].strip()]


def _accepts(alternative: str):
    """A test of a value against one alternative of an option's annotation, as written in the tables."""
    import collections.abc as abc

    if alternative == "Any":
        return lambda v: True
    if alternative == "None":
        return lambda v: v is None
    if alternative == "bool":
        return lambda v: isinstance(v, bool)
    if alternative == "int":
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if alternative == "str":
        return lambda v: isinstance(v, str)
    if alternative.startswith("Literal["):
        choices = ast.literal_eval("(" + alternative[len("Literal["):-1] + ",)")
        return lambda v: isinstance(v, str) and v in choices
    if alternative.startswith("Mapping["):
        return lambda v: isinstance(v, abc.Mapping)
    if alternative.startswith("dict["):  # filled in by the call
        return lambda v: isinstance(v, abc.MutableMapping)
    if alternative.startswith("Iterable["):  # not iterated here: a generator stays whole
        return lambda v: isinstance(v, abc.Iterable) and not isinstance(v, (str, bytes))
    raise AssertionError(f"no run-time check for the annotation {alternative!r}: add one to _options._accepts")


@dataclass(frozen=True)
class Option:
    """One keyword option: its name, default, type (as written in the signature) and documentation."""

    name: str
    default: Any
    annotation: str
    doc: str

    def __post_init__(self):
        tests = [_accepts(a) for a in _split_union(self.annotation)]
        object.__setattr__(self, "_tests", tests)
        assert self.check(self.default, "the table") is None, self

    def check(self, value, where: str) -> Exception | None:
        """None when `value` fits the annotation, else the TypeError or ValueError to raise (before any work)."""
        if any(test(value) for test in self._tests):
            return None
        choices = [a for a in _split_union(self.annotation) if a.startswith("Literal[")]
        if choices and isinstance(value, str):
            allowed = choices[0][len("Literal["):-1]
            return ValueError(f"{where}: {self.name} must be one of {allowed}; got {value!r}")
        return TypeError(f"{where}: {self.name} must be {self.annotation}; got {type(value).__name__} "
                         f"{reprlib.repr(value)}")

    def documented(self, doc: str, annotation: str | None = None) -> Option:
        """The same option (name and default) documented for another function, where it reads differently."""
        return dataclasses.replace(self, doc=doc, annotation=annotation or self.annotation)


class Options:
    """The ordered keyword options of one public function."""

    def __init__(self, *options: Option):
        self.options = options
        self.names = tuple(o.name for o in options)
        assert len(set(self.names)) == len(self.names), self.names

    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def check_values(self, values: dict, where: str) -> None:
        """Refuse an option value of the wrong type or outside its choices, before the call does any work."""
        for o in self.options:
            if o.name in values:
                error = o.check(values[o.name], where)
                if error is not None:
                    raise error

    def implements(self, fn):
        """Give `fn` (keyword-only parameters named after the options, without defaults) the defaults."""
        self.check(fn)
        fn.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), **self.defaults()}
        return fn

    def lends(self, *names: str):
        """A decorator giving `fn`'s keyword-only parameters `names` (written without defaults) their defaults.

        For an inner function that takes a few of a public function's
        options and is also called with them left out.
        """
        unknown = [n for n in names if n not in self.names]
        assert not unknown, unknown
        defaults = {n: d for n, d in self.defaults().items() if n in names}

        def lend(fn):
            keyword = {p.name: p for p in inspect.signature(fn).parameters.values() if p.kind is _KW}
            wrong = [n for n in names if n not in keyword or keyword[n].default is not inspect.Parameter.empty]
            if wrong:
                raise TypeError(f"{fn.__qualname__}: {wrong} must be keyword-only parameters without a default")
            fn.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), **defaults}
            return fn

        return lend

    def configures(self, cls):
        """Give `cls.__init__` the defaults (as `implements`) and `cls`'s docstring the options' entries."""
        self.implements(cls.__init__)
        init, where = cls.__init__, f"{cls.__name__}()"

        @functools.wraps(init)
        def checked_init(obj, *args, **kwargs):
            self.check_values(kwargs, where)
            init(obj, *args, **kwargs)

        checked_init.__kwdefaults__ = init.__kwdefaults__
        cls.__init__ = checked_init
        cls.__doc__ = self._document(cls.__doc__ or "")
        # The class's own signature, whatever its base class's `__new__` is (the docs build mocks torch,
        # whose DCP base classes then take `*args, **kwargs`).
        sig = inspect.signature(cls.__init__)
        cls.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
        return cls

    def check(self, fn):
        """`fn` takes exactly these options as keyword-only parameters, without defaults of its own."""
        params = inspect.signature(fn).parameters.values()
        keyword = {p.name: p for p in params if p.kind is _KW}
        missing = [n for n in self.names if n not in keyword]
        unknown = [n for n, p in keyword.items() if n not in self.names and p.default is inspect.Parameter.empty]
        spelled = [n for n in self.names if n in keyword and keyword[n].default is not inspect.Parameter.empty]
        if missing or unknown or spelled:
            raise TypeError(f"{fn.__qualname__} does not match its options table: missing {missing}, "
                            f"not in the table {unknown}, default written again {spelled}")
        return fn

    def public(self, fn):
        """Make `fn(positional..., **options)` show and document the options, and refuse unknown ones."""
        sig = inspect.signature(fn)
        positional = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        options = [inspect.Parameter(o.name, _KW, default=o.default, annotation=o.annotation) for o in self.options]
        names, defaults = frozenset(self.names) | {p.name for p in positional}, self.defaults()

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for k in kwargs:
                if k not in names:
                    raise TypeError(f"{fn.__name__}() got an unexpected keyword argument {k!r}")
            self.check_values(kwargs, f"{fn.__name__}()")
            return fn(*args, **{**defaults, **kwargs})

        wrapper.__signature__ = sig.replace(parameters=positional + options)
        wrapper.__doc__ = self._document(fn.__doc__ or "")
        return wrapper

    def _document(self, doc: str) -> str:
        """`doc` with one entry per option appended to its ``Args:`` section (Google style)."""
        lines = doc.split("\n")
        at = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
        if at is None:
            raise ValueError("a public function with options needs an 'Args:' section")
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())] + "    "
        end = at + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        entries = []
        for o in self.options:
            entries += textwrap.wrap(f"{o.name}: {o.doc}", 100, initial_indent=indent,
                                     subsequent_indent=indent + "    ")
        return "\n".join(lines[:end] + entries + lines[end:])


# -- shared options (the same meaning wherever they appear) ---------------------------------------

_ENCODING = Option("encoding", "flatbuffers", 'Literal["flatbuffers", "msgpack", "json"]',
                   'the program section\'s encoding: ``"flatbuffers"`` (default, zero-copy in any language), '
                   '``"msgpack"`` or ``"json"``.')
_FSYNC = Option("fsync", True, "bool",
                "flush the file (and its directory) to disk before returning. The rename is atomic either way.")
_MAX_SHARD_SIZE = Option("max_shard_size", None, "int | str | None",
                         'bytes (or a string such as ``"5GB"``): write the data to shard files '
                         "``<stem>-00001-of-0000N.pt2shard`` next to the file, each written atomically and tied "
                         "to the main file by its package id.")
_EXTERNAL_DATA = Option("external_data", None, "Any",
                        "a safetensors path (or a list) in the same directory: every weight whose name, dtype, "
                        "shape and bytes match a tensor of that file points at it instead of being copied.")
_MAP_LOCATION = Option("map_location", None, "Any",
                       "remaps devices as ``torch.load`` does: a device string, a ``torch.device``, a dict "
                       '(``{"cuda:0": "cpu"}`` maps by full device string first, then by device type), or a '
                       "callable ``f(storage, location)`` returning the storage to use.")
_COPY = Option("copy", False, "bool", "give every tensor its own memory instead of viewing the file.")
_VERIFY_DATA = Option("verify_data", False, "bool",
                      "check every data checksum before building anything (reads every byte once; off by "
                      "default so loading stays zero-copy). The header and program section are always checked.")
_PREFETCH = Option("prefetch", False, "bool",
                   "read the weight pages ahead in a background thread, so the first call does not fault them "
                   "in one by one.")
_ALLOW_SUBCLASSES = Option("allow_subclasses", (), "Iterable[type]",
                           "tensor subclass classes (traceable wrapper subclasses, e.g. ``[TwoTensor]``) whose "
                           "saved tensors may be rebuilt, and the enum, dataclass and namedtuple classes their "
                           "flatten contexts hold, matched by qualified name. Classes on torch's safe-globals "
                           "list (``torch.serialization.add_safe_globals``, the list "
                           "``torch.load(weights_only=True)`` trusts; torchao adds its own) are trusted too. The "
                           "file names its classes; pt2format never imports them: import the class yourself and "
                           "trust it. A subclass tensor of any other class is a ``LoadError`` naming the class; "
                           "with ``weights=False`` it becomes a plain meta tensor.")
_MMAP = Option("mmap", True, "bool",
               "``False`` reads a path (and its shard and external files) into memory instead of mapping it: "
               "weights then live in the process's own memory, so another process truncating or rewriting the "
               "file cannot crash or change the program (a mapped file that shrinks ends the process with "
               "SIGBUS at the next access, as for every mmap reader). A file that shrinks while it is being "
               "read is a ``FormatError``. Costs one read of the whole file and its size in memory; "
               "``prefetch`` has nothing to do then.")
_PROGRAM = Option("program", None, "str | None",
                  'which program to load; default: the only one, or ``"forward"``. A file with several '
                  'programs and no ``"forward"`` needs it.')

_PROGRESS = Option("progress", None, "bool | None",
                   "a progress bar (bytes written) on stderr; ``None`` (default) shows it only when stderr is a "
                   "terminal, and only for saves that take over a second.")

_EXTRA_FILES = Option("extra_files", None, "Mapping[str, bytes | str] | None",
                      "name -> bytes (or str, stored as UTF-8), as in ``torch.export.save``: files kept beside the "
                      "programs, in the data section. Names are 1-255 bytes of UTF-8 without control characters.")
_METADATA = Option("metadata", None, "Mapping[str, str] | None",
                   "str -> str, as in safetensors: small strings for people and tools (at most 1 MiB in all); "
                   "shown by ``pt2format inspect``.")
_WEIGHT_SET = Option("weight_set", None, "str | None",
                     "load the program with this named weight set of the file instead of its own state (see "
                     "``attach_weights``).")

SAVE = Options(
    _ENCODING,
    _FSYNC,
    _PROGRESS,
    Option("example_inputs", True, "bool", "also store each program's example inputs."),
    _EXTRA_FILES,
    _METADATA,
    _MAX_SHARD_SIZE,
    _EXTERNAL_DATA,
    Option("weight_sets", None, "Mapping[str, Any] | None",
           "name -> ``ExportedProgram`` or dict name -> tensor: named alternative weights for the same "
           "program(s); ``load(path, weight_set=name)`` picks one."),
)

LOAD = Options(
    _PROGRAM,
    _MAP_LOCATION,
    Option("weights", True, "bool",
           "``False`` builds the program with meta-device parameters and buffers and reads no weight bytes "
           "(for inspecting or transforming a graph); such a program cannot run until real weights are set."),
    _COPY,
    _VERIFY_DATA,
    _EXTRA_FILES.documented(
           "a dict, filled in (cleared first) with the file's extra files, name -> bytes; like "
           "``torch.export.load``'s argument, but every file is returned and values are bytes, not text.",
           "dict[str, bytes] | None"),
    _METADATA.documented("a dict, filled in (cleared first) with the file's metadata.", "dict[str, str] | None"),
    _WEIGHT_SET,
    _PREFETCH,
    _ALLOW_SUBCLASSES,
    _MMAP,
)

LOAD_MODULE = Options(
    _PROGRAM, _MAP_LOCATION, _COPY, _VERIFY_DATA, _PREFETCH, _ALLOW_SUBCLASSES, _MMAP,
    Option("device_mesh", None, "Any",
           "a ``torch.distributed.DeviceMesh``: load the program sharded, on every rank of the mesh. Its "
           "parameters, buffers and tensor constants become ``DTensor``s placed by ``placements``; each rank "
           "reads only its slices, through ``torch.distributed.checkpoint`` and ``pt2format.dcp.StorageReader``. "
           "The module takes and returns plain (replicated) tensors. A ``Shard`` whose dimension the mesh does "
           "not divide is a ``LoadError``; any error is raised on every rank. ``map_location``, ``copy`` and "
           "``prefetch`` are ignored. See docs/distributed.md."),
    Option("placements", None, "Any",
           "with ``device_mesh``: a dict from name pattern (``fnmatch``, e.g. ``\"*.q_proj.weight\"``) to a "
           "``Placement`` (``Shard(0)``, ``Shard(1)``, ``Replicate()``; one per mesh dimension), first match "
           "wins, ``Replicate()`` for the rest."),
)

_COPY_ON_WRITE = Option("copy_on_write", False, "bool", "make tensors writable (writes stay in memory).")

OPEN = Options(
    Option("framework", "pt", 'Literal["pt", "np"]',
           '``"pt"`` (torch tensors) or ``"np"`` (numpy arrays, no torch needed) for ``get_tensor``.'),
    _COPY_ON_WRITE,
    _VERIFY_DATA.documented("check every data checksum now."),
    _MMAP.documented(
           "``False`` reads a path into memory instead of mapping it (see ``load``); ``get_tensor`` then "
           "views that memory."),
    Option("device", None, "Any",
           "where ``get_tensor`` and ``get_slice`` put tensors (a device string or ``torch.device``; default: "
           "zero-copy CPU views). A slice is copied to the device directly from the mapped bytes."),
)

ATTACH_WEIGHTS = Options(
    _PROGRAM.documented(
           "which program's state of a `.pt2f` source to take (default: the only one, or ``\"forward\"``)."),
    _WEIGHT_SET.documented(
           "take this named weight set of a `.pt2f` source instead (a weights-only file's only set is taken "
           "by default)."),
    _MAP_LOCATION,
    _COPY,
    Option("strict", True, "bool", "also refuse names of `source` that ``ep`` does not have."),
    _ALLOW_SUBCLASSES,
    _MMAP,
)

SAVE_WEIGHTS = Options(
    _ENCODING,
    _FSYNC,
    _PROGRESS,
    _MAX_SHARD_SIZE,
    _EXTERNAL_DATA,
    Option("name", "default", "str", "the weight set's name, when `weights` is one set."),
)


# -- the torch-free readers: bounds from the schema's limits table (pt2f_limits, SPEC.md §10) -------

_MAX_PROGRAM_BYTES = Option("max_program_bytes", _limits.MAX_PROGRAM_BYTES, "int",
                            "refuse a program section larger than this.")
_MAX_DEPTH = Option("max_depth", _limits.MAX_DEPTH, "int", "refuse schema trees nested deeper than this.")

READ = Options(
    _VERIFY_DATA.documented("check every data checksum now."),
    _MAX_PROGRAM_BYTES,
    _MAX_DEPTH,
    _COPY_ON_WRITE.documented("map privately so data views are writable (writes stay in memory)."),
    Option("json_schema", False, "bool",
           "also run the jsonschema library over a JSON program (slow; ``validate`` does it)."),
    _MMAP.documented(
           "``False`` reads a path (and its shard and external files, when first needed) into memory instead "
           "of mapping it, for files another process may truncate (see ``load``); a file that shrinks while it "
           "is read is a ``FormatError``."),
)

VALIDATE = Options(
    _MAX_PROGRAM_BYTES,
    _MAX_DEPTH,
    _MMAP.documented("``False`` reads the file into memory instead of mapping it (see ``load``)."),
)

FROM_TORCH = Options(
    _ENCODING,
    _FSYNC,
    _PROGRESS,
    _METADATA.documented("str -> str stored in the `.pt2f` file, as ``save``'s ``metadata``."),
)

TO_TORCH = Options(
    _PROGRAM.documented(
           'which program to convert; default: the only one, or ``"forward"`` (a torch archive holds one).'),
    _ALLOW_SUBCLASSES,
)


# -- pt2format.dcp: the storage reader and writer that torch.distributed.checkpoint calls ------------

DCP_READER = Options(
    _PROGRAM.documented(
           "take the state of this program (default: of every program; a weights-only file's weight set)."),
    _WEIGHT_SET.documented("take this named weight set instead."),
    _VERIFY_DATA.documented(
           "check the CRC-32 of every storage this rank reads from (reads those storages whole, once)."),
    _MMAP.documented("``False`` reads the file into memory instead of mapping it."),
)

DCP_WRITER = Options(
    _PROGRAM.documented(
           "an ``ExportedProgram`` (or a dict name -> ExportedProgram) the file holds; the checkpoint gives its "
           "state (every saved tensor must be one of its state entries, with the same shape and dtype). A "
           "program's state not in the checkpoint is stored as it is (meta-device state stays so). Default: a "
           "weights-only file, one weight set named ``weight_set``.", "Any"),
    Option("weight_set", "default", "str", "name of that weight set."),
    _ENCODING,
    _FSYNC,
)
