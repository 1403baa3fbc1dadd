"""loaders/ts/src/generated/strings.ts: the string classes for the TypeScript reader (SPEC.md §9).

The TS reader checks every string it decodes against its field's class, in
every encoding, like the Python decoders. So that nothing about the classes is
kept by hand in TypeScript, this emits from the same sources Python uses:

- which class each string field (or `[string]` element) has, per table, from
  the `pt2f_string` attributes of the schema (the `_Model` of regen.py, which
  refuses a string field without a class);
- each class's grammar, length limit and whether it may be empty, taken from
  `pt2format._strings` (the regular expressions are the Python ones, written
  in the subset of syntax both engines read the same way);
- the reserved names (`nn.Module` members, node-metadata keys, `self`) and the
  Python keywords of the interpreter that runs regen.

`loaders/ts/src/strings.ts` holds the few lines of logic that combine them.
"""

from __future__ import annotations

import json
import keyword

from codegen import identifier_chars
from pt2format import _strings as S

# How each class is checked, by the name of its Python check function: which grammar applies.
_KINDS = {
    "_local_name": "local_name", "_identifier": "identifier", "_attr_path": "attr_path",
    "_qualified_name": "qualified_name", "_file_name": "file_name", "_device_type": "device_type",
    "_module_call_path": "module_call_path", "_module_stack_path": "module_stack_path", "_printed_name": "printed_name", "_free_text": "free_text",
}


def _js_regex(pattern: str) -> str:
    """A Python pattern as a JS regex literal body; only the syntax both engines share is allowed."""
    for bad in ("(?P", "(?<", "\\A", "\\Z", "(?i", "(?s", "(?x"):
        if bad in pattern:
            raise SystemExit(f"ts_strings: pattern {pattern!r} uses {bad!r}, which JS reads differently")
    return pattern.replace("/", "\\/")


def generate(schema, m, header: str) -> str:
    """The whole strings.ts module text. `m` is regen's `_Model` (string_classes per table)."""
    classes = {}
    for name, (check, may_be_empty, longest) in S._CLASSES.items():
        kind = _KINDS.get(check.__name__)
        if kind is None:
            raise SystemExit(f"ts_strings: no TypeScript grammar for check {check.__name__} (class {name})")
        classes[name] = {"kind": kind, "empty": may_be_empty, "max": longest}
    fields = {}
    for o in schema.objects:
        if o.is_struct:
            continue
        sc = m.string_classes(o)
        if sc:
            fields[o.short] = dict(sorted(sc.items()))
    patterns = {
        "IDENT": S._IDENT.pattern, "DIGITS": S._DIGITS.pattern, "QUAL_MARKER": S._QUAL_MARKER.pattern,
        "FILE_NAME": S._FILE_NAME.pattern, "DEVICE_TYPE": S._DEVICE_TYPE.pattern, "CALL_INDEX": S._CALL_INDEX.pattern,
        "SLICE_COMPONENT": S._SLICE_COMPONENT.pattern,
    }
    out = [header]
    out.append("/**\n * String classes (SPEC.md section 9), from schema/pt2format.fbs and pt2format/_strings.py\n"
               " * by schema/codegen/ts_strings.py. src/strings.ts checks decoded strings with them.\n */\n\n")
    out.append("export interface StringClassSpec { kind: string; empty: boolean; max: number }\n\n")
    out.append("/** class name -> grammar kind, may it be empty, longest length in code points. */\n")
    out.append(f"export const STRING_CLASSES: Readonly<Record<string, StringClassSpec>> = {json.dumps(classes)};\n\n")
    out.append("/** table -> string field -> class (a `[string]` field's class applies to each element). */\n")
    out.append("export const FIELD_STRING_CLASS: Readonly<Record<string, Readonly<Record<string, string>>>> = "
               f"{json.dumps(fields, sort_keys=True)};\n\n")
    out.append("/** Whole-string grammars (anchored by the checker). */\n")
    for k, p in patterns.items():
        out.append(f"export const RE_{k} = /^(?:{_js_regex(p)})$/;\n")
    out.append(f"export const RE_CONTROL = /{_js_regex(S._CONTROL.pattern)}/;\n\n")
    out.append(identifier_chars.ts_block())
    out.append(f"export const PYTHON_KEYWORDS: ReadonlySet<string> = new Set({json.dumps(sorted(keyword.kwlist))});\n")
    out.append("export const RESERVED_MEMBER_NAMES: ReadonlySet<string> = new Set("
               f"{json.dumps(sorted(S.RESERVED_MEMBER_NAMES))});\n")
    out.append("export const RESERVED_NODE_META_KEYS: ReadonlySet<string> = new Set("
               f"{json.dumps(sorted(S.RESERVED_NODE_META_KEYS))});\n")
    out.append("export const RESERVED_LOCAL_NAMES: ReadonlySet<string> = new Set("
               f"{json.dumps(sorted(S.RESERVED_LOCAL_NAMES))});\n")
    return "".join(out)
