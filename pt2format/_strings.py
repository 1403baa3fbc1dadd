"""String classes: the grammar every string of a file must match, checked while decoding (SPEC.md §9).

Every string field and map key of the schema declares a class with the
`pt2f_string` attribute, and `schema/regen.py` refuses a string field without
one, so the generated decoders of every reader check every string and a new
field cannot skip the check. The classes follow what torch does with each
name: where torch pastes it into Python source that it compiles (node names
become locals of `forward`, state paths become attribute accesses, keyword
names become parameters), it must be what Python compiles to that very name:
an identifier by Python's own rule, Unicode included, in NFKC form (Python
normalizes identifiers to NFKC, so `ﬁ` would compile as `fi`), not a keyword,
not a reserved member. Where torch only prints, compares or keys a name
(module-stack keys, provenance), it is kept as torch wrote it, one line.
Free text (stack traces, docs, metadata values) is only ever printed.

Non-ASCII identifiers are decided by a table pinned to one Unicode version
(`pt2format/_generated/identifier_chars.py`, generated for every reader), so
the three readers agree whatever Unicode their runtime carries.

The reserved member names are the attributes that `torch.nn.Module`,
`torch.fx.GraphModule` and torch's unflattened modules define: a state entry
or submodule with such a name would shadow a method. torch refuses to
register them itself (`register_module` and friends); a file gets the same
answer, as a typed error. `tests/core/test_strings.py` checks this list
against torch's classes (equal, torch 2.13.0).
"""

from __future__ import annotations

import bisect
import keyword
import re

from pt2format._generated import limits as _limits
from pt2format.errors import EncodingError, StringClassError

#: Longest identifier, attribute path, qualified name or token, in characters.
MAX_NAME_LENGTH = _limits.MAX_NAME_LENGTH
#: Longest free-text string (stack traces, schema text, metadata values), in characters.
MAX_TEXT_LENGTH = _limits.MAX_TEXT_LENGTH

RESERVED_MEMBER_NAMES = frozenset("""
T_destination _adapt_flat_args _apply _backward_hooks _backward_pre_hooks _boxed_call _buffers _call_impl _code
_compiled_call_impl _create_node_hooks _deepcopy_hooks _deepcopy_init _dispatch_modules _erase_node_hooks
_forward_hooks _forward_hooks_always_called _forward_hooks_with_kwargs _forward_pre_hooks
_forward_pre_hooks_with_kwargs _get_backward_hooks _get_backward_pre_hooks _get_name _graph _is_full_backward_hook
_lineno_map _load_from_state_dict _load_state_dict_post_hooks _load_state_dict_pre_hooks
_maybe_warn_non_full_backward_hook _modules _named_members _non_persistent_buffers_set _parameters _print_graph
_prologue_start _recompile_submodules _register_create_node_hook _register_deepcopy_hook _register_erase_node_hook
_register_load_state_dict_pre_hook _register_replace_node_hook _register_state_dict_hook _replace_hooks
_replicate_for_data_parallel _run_with_interpreter _save_to_state_dict _set_replace_hook _slow_forward
_state_dict_hooks _state_dict_pre_hooks _tracer_cls _tracer_extras _ty _unregister_create_node_hook
_unregister_deepcopy_hook _unregister_erase_node_hook _unregister_replace_node_hook _version _wrapped_call
_wrapped_call_impl add_module add_submodule apply bfloat16 buffers call_super_init children code compile cpu cuda
delete_all_unused_submodules delete_submodule double dump_patches eval extra_repr finalize float forward get_buffer
get_extra_state get_parameter get_submodule graph half ipu load_state_dict meta modules mtia named_buffers
named_children named_modules named_parameters parameters print_readable process_forward_inputs recompile
register_backward_hook register_buffer register_forward_hook register_forward_pre_hook register_full_backward_hook
register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook register_module
register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_ set_extra_state
set_submodule shape_env share_memory state_dict to to_empty to_folder train training type type_name xpu zero_grad
""".split())

#: node.meta keys that torch interprets. `NodeMetadata.extra` holds the other string-valued entries,
#: so an extra entry may not use one of these (it would override the structured value or feed
#: torch a value it compiles into guards). Readers refuse such a file.
RESERVED_NODE_META_KEYS = frozenset({
    "val", "tensor_meta", "example_value", "stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn",
    "custom", "from_node", "unbacked_bindings", "seq_nr", "original_aten", "desc", "grapharg", "is_wrapped",
    "partitioner_tag", "recompute", "ac_graph_id", "autograd_backward_hook", "in_spec", "out_spec",
    "mutation_region_id", "is_backward", "nn_module_method", "fwd_nn_module_stack", "fwd_source_fn_stack",
    "quantization_tag", "eager_input_vals", "_numeric_debug_handle", "numeric_debug_handle", "dynamo_flat_name_to_original_fqn",
})

#: Names a local name may never be: `self` is forward's first parameter in every module torch generates.
RESERVED_LOCAL_NAMES = frozenset({"self"})

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = re.compile(r"[0-9]+")
_QUAL_MARKER = re.compile(r"<[a-z]+>")
_FILE_NAME = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9._-]{{0,{_limits.MAX_FILE_NAME_LENGTH - 1}}}")
_DEVICE_TYPE = re.compile(rf"[a-z][a-z0-9_]{{0,{_limits.MAX_DEVICE_TYPE_LENGTH - 1}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _encodable(s: str) -> bool:
    """False for a string with a lone surrogate (JSON's \\ud800 escapes can make one; UTF-8 cannot)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_extra_meta_key(key: str, field: str) -> str:
    """An `extra` node-metadata key: an identifier that torch does not interpret itself."""
    CHECKERS["identifier"](key, field)
    if key in RESERVED_NODE_META_KEYS:
        raise StringClassError(f"extra metadata key {key!r} is reserved for structured metadata",
                               string_class="extra_meta_key", path=field,
                               expected="a key torch does not interpret", got=repr(key))
    return key


def _is_dunder(s: str) -> bool:
    return len(s) > 4 and s.startswith("__") and s.endswith("__")


#: The Unicode version of the identifier tables (`pt2format/_generated/identifier_chars.py`, generated from
#: Python 3.11's unicodedata). Pinned so that every reader, whatever its runtime's Unicode, gives one verdict.
IDENTIFIER_UNICODE_VERSION = "14.0.0"
_WHY_IDENT = f"a Python identifier (str.isidentifier, Unicode {IDENTIFIER_UNICODE_VERSION}) in NFKC form"
_TABLE = None


def _identifier_table():
    global _TABLE
    if _TABLE is None:
        from pt2format._generated import identifier_chars as t
        _TABLE = (t.FIRST, t.LAST, t.START, t.CCC)
    return _TABLE


def _unicode_identifier(s: str) -> bool:
    """Python's identifier rule in NFKC form, by the pinned table (SPEC.md §9): every code point has a row,
    the first may start an identifier, and combining marks follow in canonical order."""
    first, last, start, ccc = _identifier_table()
    prev = 0
    for i, ch in enumerate(s):
        o = ord(ch)
        k = bisect.bisect_right(first, o) - 1
        if k < 0 or o > last[k] or (i == 0 and not start[k]):
            return False
        c = ccc[k]
        if c and prev > c:
            return False
        prev = c
    return True


def is_identifier(s: str) -> bool:
    """The `identifier` grammar without the dunder rule: what Python compiles to this very name."""
    if s.isascii():
        return bool(_IDENT.fullmatch(s)) and not keyword.iskeyword(s)
    return _unicode_identifier(s)


def _identifier(s: str) -> str | None:
    if not is_identifier(s):
        return "not a Python keyword" if keyword.iskeyword(s) else _WHY_IDENT
    if _is_dunder(s):
        return "not a dunder name"
    return None


def _local_name(s: str) -> str | None:
    why = _identifier(s)
    if why is None and s in RESERVED_LOCAL_NAMES:
        return f"not one of {sorted(RESERVED_LOCAL_NAMES)}"
    return why


def _attr_path(s: str) -> str | None:
    for part in s.split("."):
        if _DIGITS.fullmatch(part):
            continue
        why = _identifier(part)
        if why is not None:
            return f"dot-separated identifiers or indices ({why}: {part!r})"
        if part in RESERVED_MEMBER_NAMES:
            return f"no component reserved by torch.nn.Module/GraphModule ({part!r})"
    return None


_CALL_INDEX = re.compile(r"[1-9][0-9]*")
#: A component torch writes into an nn_module_stack path for a sliced ModuleList/Sequential (the repr of the
#: slice object), e.g. `mod_list_1.slice(2, 3, None).2`. torch's fx code pastes a non-identifier component as
#: `getattr(m, "<component>")`, so only this exact form is admitted: no quote or backslash can occur in it.
_SLICE_COMPONENT = re.compile(r"slice\((?:-?[0-9]+|None), (?:-?[0-9]+|None), (?:-?[0-9]+|None)\)")


def _module_call_path(s: str) -> str | None:
    """torch's module-call-graph name: a submodule path, and `@N` for its (N+1)-th call (`n1.n2@1`)."""
    path, at, index = s.partition("@")
    if at and not (path and _CALL_INDEX.fullmatch(index)):
        return "a module path, optionally followed by @ and a call index [1-9][0-9]* (torch's n1.n2@1)"
    return _attr_path(path) if path else None


def _module_stack_path(s: str) -> str | None:
    """An nn_module_stack path as torch writes it: an attribute path whose components may also be slices."""
    for part in s.split("."):
        if _SLICE_COMPONENT.fullmatch(part):
            continue
        why = _attr_path(part)
        if why is not None:
            return why[:-1] + ", or slice(start, stop, step) components)" if why.endswith(")") else why
    return None


def _qualified_name(s: str) -> str | None:
    for part in s.split("."):
        if not (is_identifier(part) or _QUAL_MARKER.fullmatch(part)):
            return f"dot-separated identifiers ({part!r})"
    return None


def _file_name(s: str) -> str | None:
    if _FILE_NAME.fullmatch(s):
        return None
    return f"[A-Za-z0-9_][A-Za-z0-9._-]*, at most {_limits.MAX_FILE_NAME_LENGTH} characters, no directories"


def _device_type(s: str) -> str | None:
    return None if _DEVICE_TYPE.fullmatch(s) else f"[a-z][a-z0-9_]*, at most {_limits.MAX_DEVICE_TYPE_LENGTH} characters"


def _printed_name(s: str) -> str | None:
    """A name torch only prints, compares or uses as a key: stored as torch wrote it, but one line."""
    if s.isascii():  # _CONTROL's ASCII part, \x00-\x1f and \x7f, is exactly what ASCII isprintable() refuses
        bad = not s.isprintable()
    else:
        bad = _CONTROL.search(s) is not None
    return "no control characters or line separators" if bad else None


def _free_text(s: str) -> str | None:
    return None


# class name -> (check returning the reason or None, may be empty, longest length)
_CLASSES = {
    "local_name": (_local_name, False, MAX_NAME_LENGTH),
    "identifier": (_identifier, False, MAX_NAME_LENGTH),
    "optional_identifier": (_identifier, True, MAX_NAME_LENGTH),
    "attr_path": (_attr_path, False, MAX_NAME_LENGTH),
    "optional_attr_path": (_attr_path, True, MAX_NAME_LENGTH),
    "qualified_name": (_qualified_name, False, MAX_NAME_LENGTH),
    "file_name": (_file_name, False, _limits.MAX_FILE_NAME_LENGTH),
    "device_type": (_device_type, False, _limits.MAX_DEVICE_TYPE_LENGTH),
    "module_call_path": (_module_call_path, True, MAX_NAME_LENGTH),
    "module_stack_path": (_module_stack_path, True, MAX_NAME_LENGTH),
    "token": (_printed_name, False, MAX_NAME_LENGTH),
    "metadata_key": (_printed_name, False, MAX_NAME_LENGTH),
    "free_text": (_free_text, True, MAX_TEXT_LENGTH),
}
#: Every string class, in the order SPEC.md lists them.
STRING_CLASSES = tuple(_CLASSES)

_CACHE_LIMIT = 1 << 16


def _make_checker(name: str):
    check, may_be_empty, longest = _CLASSES[name]
    ok: set[str] = set()

    def checker(s: str, field: str) -> str:
        """Returns `s` when it belongs to the class, else raises StringClassError naming `field`."""
        if s in ok:
            return s
        if not s:
            why = None if may_be_empty else "a non-empty string"
        elif not s.isascii() and not _encodable(s):  # ASCII always encodes: one C call for most strings
            raise EncodingError("string is not valid Unicode (lone surrogate)", path=field,
                                expected="Unicode scalar values only", got=repr(s[:80]))
        elif len(s) > longest:
            why = f"at most {longest} characters"
        else:
            why = check(s)
        if why is not None:
            raise StringClassError(f"string is not a valid {name}", string_class=name, path=field,
                                   expected=why, got=repr(s[:80]) + ("..." if len(s) > 80 else ""))
        if len(ok) >= _CACHE_LIMIT:
            ok.clear()
        ok.add(s)
        return s

    checker.__name__ = f"check_{name}"
    # The strings already accepted (emptied, never replaced, when full): a generated decoder tests
    # membership inline and calls the checker only for a string it has not seen.
    checker.accepted = ok
    return checker


#: class name -> check(s, field) -> s, raising StringClassError.
CHECKERS = {name: _make_checker(name) for name in _CLASSES}



#: class -> the classes whose every string it admits (directly; `class_admits` closes the relation). Declared
#: here, proven on samples by tests/core/test_strings.py, and used by schema/evolution.py to say whether a
#: changed class of a released field was made stricter or looser (SPEC.md §8.1).
_ADMITS = {
    "identifier": {"local_name"},
    "optional_identifier": {"identifier"},
    "attr_path": set(),
    "optional_attr_path": {"attr_path"},
    "module_call_path": {"optional_attr_path"},
    "module_stack_path": {"optional_attr_path"},
    "qualified_name": {"identifier"},
    "file_name": {"device_type"},
    "device_type": set(),
    "token": {"metadata_key", "qualified_name", "attr_path", "file_name"},
    "metadata_key": {"token"},
    "free_text": {"token", "optional_identifier", "module_call_path", "module_stack_path"},
    "local_name": set(),
}


def class_admits(wide: str, narrow: str) -> bool:
    """True when string class `wide` admits every string of class `narrow`."""
    seen, todo = set(), [wide]
    while todo:
        c = todo.pop()
        if c == narrow:
            return True
        if c not in seen:
            seen.add(c)
            todo += _ADMITS[c]
    return False
