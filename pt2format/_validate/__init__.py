"""Checks every invariant a reader relies on in a decoded `Package` tree.

Runs on every read, so it is one linear pass with no per-field reflection.
The schema's mechanical rules (required fields, index ranges, sorted or
unique keys, union members and enum values) are the generated
`check_field_rules`, run first; what is left here are the graph rules, in
two parts: `data` (tensors inside their storages, storages inside their
segments) and `program` (sym-expression pool acyclic, names resolvable in
their graph's scope). Errors carry a field path such as
`programs[0].graph.nodes[12].inputs[0]`, built only when something fails.
"""

from __future__ import annotations

from pt2format._generated import limits as _limits
from pt2format._container.header import KNOWN_FEATURES, READER_MAJOR
from pt2format._extras import check_extra_files
from pt2format._generated.field_rules import check_field_rules
from pt2format._symeval import SymBudget
from pt2format.errors import Pt2FormatError, UnsupportedFeatureError, VersionError

from pt2format._validate._common import _fail, _wrap
from pt2format._validate.data import ITEMSIZE, MAX_TENSOR_NESTING, _check_data, check_shard_name, tensor_nbytes
from pt2format._validate.program import _Program, _Values, check_identifier_key


def validate_package(package, *, data_section_lengths=None, reader_major: int = READER_MAJOR,
                     known_features: int = KNOWN_FEATURES, max_depth: int = _limits.MAX_DEPTH) -> None:
    """Raise a Pt2FormatError (mostly ValidationError) on the first broken invariant of `package`.

    `data_section_lengths` maps each DATA section index of the main file to its
    length; storages in the main file are checked against it. `None` skips
    those bounds checks (storages in shard files are checked when the shard is
    opened, since shards are opened lazily).
    """
    fv = package.format_version
    if fv is None:
        raise _fail("required field is missing", "format_version")
    if fv.major > reader_major or fv.major == 0:
        raise VersionError(f"format version {fv.major}.{fv.minor} is not readable by this reader",
                           path="format_version", expected=f"major {reader_major}", got=fv.major)
    unknown = package.required_features & ~known_features
    if unknown:
        raise UnsupportedFeatureError(f"file requires unknown features 0x{unknown:x}", path="required_features",
                                      expected=f"bits within 0x{known_features:x}",
                                      got=f"0x{package.required_features:x}")
    check_field_rules(package)  # every pt2f_index/_required/_keys field of the schema, generated; the walk below relies on them
    _check_data(package, data_section_lengths)
    check_extra_files(package)
    n_tensors = len(package.tensors)
    budget = SymBudget()  # one per file: SPEC.md §11.6, "Expanded size of a file"
    for i, program in enumerate(package.programs):
        try:
            if program is None:
                raise _fail("program is missing")
            _Program(program, n_tensors, max_depth, package.tensors, budget).check()
        except Pt2FormatError as e:
            raise _wrap(e, f"programs[{i}]")
    values = _Values(n_tensors, max_depth)
    for i, op in enumerate(package.operators):
        try:
            for group in ("parameters", "returns"):
                for j, p in enumerate(getattr(op, group)):
                    if p.default_value is not None:
                        try:
                            values.check(p.default_value, 0)
                        except Pt2FormatError as e:
                            raise _wrap(e, f"{group}[{j}].default_value")
        except Pt2FormatError as e:
            raise _wrap(e, f"operators[{i}]")


__all__ = ["ITEMSIZE", "MAX_TENSOR_NESTING", "check_identifier_key", "check_shard_name", "tensor_nbytes",
           "validate_package"]
