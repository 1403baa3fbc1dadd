"""The string-class table of the C++ reader: `loaders/cpp/generated/pt2format_strings.h` (SPEC.md §9).

The C++ reader checks every string of a file against its field's class, in
every encoding. Which field has which class comes from the schema's
`pt2f_string` attributes, and the word lists the grammars use (Python
keywords, names `nn.Module`/`GraphModule` reserve, node-metadata keys torch
interprets) from `pt2format._strings`, so neither is copied by hand and a new
string field is checked by C++ as soon as regen runs. The grammars
themselves are implemented in `loaders/cpp/src/strings.cc`.
"""

from __future__ import annotations

import keyword

from codegen import identifier_chars
from pt2format import _strings


def _cxx_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _word_list(name: str, words) -> str:
    items = "".join(f"    {_cxx_str(w)},\n" for w in sorted(words))
    return f"inline constexpr const char *{name}[] = {{\n{items}    nullptr,\n}};\n\n"


def generate(schema, model, header: str) -> str:
    """The header's text: class enum, (table, field) -> class rows, word lists, length limits."""
    classes = _strings.STRING_CLASSES
    out = [header]
    out.append("// String classes of every string field (SPEC.md section 9), from the schema's\n"
               "// pt2f_string attributes, and the word lists of pt2format/_strings.py. The grammars\n"
               "// are implemented in src/strings.cc.\n#pragma once\n\n#include <cstddef>\n#include <cstdint>\n\n"
               "namespace pt2f::strings {\n\n")
    out.append("enum class StringClass : uint8_t {\n" + "".join(f"  {c},\n" for c in classes) + "};\n\n")
    out.append("inline constexpr const char *kClassNames[] = {\n" + "".join(f'    "{c}",\n' for c in classes) + "};\n\n")
    out.append(f"constexpr size_t kMaxNameLength = {_strings.MAX_NAME_LENGTH};  // characters\n")
    out.append(f"constexpr size_t kMaxTextLength = {_strings.MAX_TEXT_LENGTH};  // characters\n\n")
    out.append("struct FieldClass {\n  const char *table;  // short table name\n  const char *field;\n"
               "  StringClass cls;\n};\n\n")
    out.append("// Every string and [string] field of every table, sorted by table then field.\n")
    out.append("inline constexpr FieldClass kFieldClasses[] = {\n")
    for o in sorted((o for o in schema.objects if not o.is_struct), key=lambda o: o.short):
        for name, cls in sorted(model.string_classes(o).items()):
            out.append(f'    {{"{o.short}", "{name}", StringClass::{cls}}},\n')
    out.append("    {nullptr, nullptr, StringClass::free_text},  // end\n};\n\n")
    out.append(identifier_chars.cpp_block())
    out.append("// Python keywords (keyword.kwlist): never an identifier or a qualified-name component.\n")
    out.append(_word_list("kKeywords", keyword.kwlist))
    out.append("// Attributes torch.nn.Module / GraphModule define: never an attr_path component.\n")
    out.append(_word_list("kReservedMemberNames", _strings.RESERVED_MEMBER_NAMES))
    out.append("// Names a local_name may never be.\n")
    out.append(_word_list("kReservedLocalNames", _strings.RESERVED_LOCAL_NAMES))
    out.append("// node.meta keys torch interprets: never a NodeMetadata.extra key.\n")
    out.append(_word_list("kReservedNodeMetaKeys", _strings.RESERVED_NODE_META_KEYS))
    out.append("}  // namespace pt2f::strings\n")
    return "".join(out)
