"""The one table of resource bounds (SPEC.md §10, §11.6), from the root table's `pt2f_limits` attribute.

Each reader used to spell its bounds itself (`max_depth=128` in eight Python
places and twice in TypeScript); now the schema holds them and regen.py emits
one constant per bound for each language, so a bound changes in one place.
"""

from __future__ import annotations

import re

# What each bound limits: the doc line of the generated constant. regen refuses
# a bound without one (and a description without a bound), so the two lists stay one.
DESCRIPTIONS = {
    "max_program_bytes": "Largest PROGRAM section accepted, in bytes, checked before it is decoded (§10).",
    "max_depth": "Deepest nesting of tables, values, tree specs and subgraphs, the root being depth 1 (§10).",
    "max_tensor_nesting": "Deepest chain of tensor rows built from other rows (parts, per-channel parameters).",
    "max_sym_degree": "Largest structural degree of a symbolic expression (§11.6).",
    "max_sym_eval_steps": "Evaluation budget of one sym-expression pool: sum over nodes of 1 + operand count (§11.6).",
    "max_sym_expanded_size": "Largest expanded (tree) size of a symbolic expression (§11.6).",
    "sym_free_size": "Expanded size every pool node and every use of one may have for free (§11.6, file budget).",
    "max_sym_file_excess": "Largest sum, over a file's pool nodes and uses, of the expanded size above "
                           "sym_free_size (§11.6, file budget).",
    "max_name_length": "Longest identifier, attribute path, qualified name or token, in characters (§9).",
    "max_text_length": "Longest free-text string, in characters (§9).",
    "max_file_name_length": "Longest file_name-class string, in characters (§9).",
    "max_device_type_length": "Longest device_type-class string, in characters (§9).",
    "max_extra_file_name_bytes": "Longest extra-file name, in bytes of UTF-8.",
    "max_extra_metadata_bytes": "Most bytes of extra-file metadata kept in the program section.",
    "max_json_int_digits": "Most digits of a JSON integer (CPython's int parsing limit) (§10).",
    "max_json_depth": "Deepest nesting of JSON arrays and objects a parser accepts, known keys or not, kept under "
                      "CPython's recursion limit, where the Python reader's json module stops (§10).",
    "max_msgpack_depth": "Deepest nesting of MessagePack arrays and maps a parser accepts, known fields or not: "
                         "msgpack-python's unpacker stack, where the Python reader stops (§10).",
    "verifier_min_tables": "Table visits a FlatBuffers verifier allows whatever the program's size: its bound is the "
                           "larger of this and one visit per verifier_bytes_per_table bytes (flatbuffers::Verifier's "
                           "max_tables in C++, the TypeScript verifier's own count).",
    "verifier_bytes_per_table": "Program bytes per table visit a FlatBuffers verifier allows above "
                                "verifier_min_tables.",
    "max_input_guards": "Most entries of one program's input_guards (SPEC.md 10): torch compiles every "
                        "guard into the module's guard function; real programs have a handful.",
    "max_guard_sources": "Most entries of one program's guard_sources (SPEC.md 10), one per guard symbol.",
}

_PAIR = re.compile(r"\s*([a-z_][a-z0-9_]*)\s*=\s*([0-9]+)(?:\s*<<\s*([0-9]+))?\s*")


def read_limits(schema) -> dict[str, tuple[int, str]]:
    """name -> (value, spelling in the schema), in the attribute's order; raises on any malformed pair."""
    text = schema.root.attributes.get("pt2f_limits")
    if text is None:
        raise SystemExit("regen: the root table has no pt2f_limits attribute")
    out = parse_limits(text)
    if set(out) != set(DESCRIPTIONS):
        raise SystemExit(f"regen: pt2f_limits and codegen/limits.py DESCRIPTIONS differ: "
                         f"{sorted(set(out) ^ set(DESCRIPTIONS))}")
    return out


def parse_limits(text: str) -> dict[str, tuple[int, str]]:
    """name -> (value, spelling) of one `pt2f_limits` value (`name=N; name=N<<K; ...`); raises on any malformed pair.

    The one parser of the attribute: regen reads the working schema with it,
    and schema/evolution.py the released ones.
    """
    out = {}
    for part in text.split(";"):
        mt = _PAIR.fullmatch(part)
        if mt is None:
            raise SystemExit(f"regen: malformed pt2f_limits entry {part!r} (want name=N or name=N<<K)")
        name, base, shift = mt.groups()
        value = int(base) << int(shift) if shift else int(base)
        if name in out:
            raise SystemExit(f"regen: pt2f_limits names {name} twice")
        out[name] = (value, f"{base} << {shift}" if shift else base)
    return out


def gen_python(schema, header: str) -> str:
    lim = read_limits(schema)
    out = [header, '"""Resource bounds of SPEC.md §10 and §11.6, from the schema\'s pt2f_limits attribute."""\n\n']
    for name, (_, spelled) in lim.items():
        out.append(f"#: {DESCRIPTIONS[name]}\n{name.upper()} = {spelled}\n")
    out.append("\n#: Every bound by name.\nLIMITS = {\n")
    out += [f"    {name!r}: {name.upper()},\n" for name in lim]
    out.append("}\n")
    return "".join(out)


def _camel(name: str) -> str:
    return "k" + "".join(w.capitalize() for w in name.split("_"))


def gen_cpp(schema, header: str) -> str:
    lim = read_limits(schema)
    out = [header, "// Resource bounds of SPEC.md §10 and §11.6, from the schema's pt2f_limits attribute.\n"
           "#pragma once\n\n#include <cstdint>\n\nnamespace pt2f::limits {\n\n"]
    for name, (value, spelled) in lim.items():
        cxx = f"uint64_t({spelled.split(' << ')[0]}) << {spelled.split(' << ')[1]}" if "<<" in spelled else spelled
        out.append(f"/// {DESCRIPTIONS[name]}\ninline constexpr uint64_t {_camel(name)} = {cxx};\n")
    out.append("\n}  // namespace pt2f::limits\n")
    return "".join(out)


def gen_ts(schema, header: str) -> str:
    lim = read_limits(schema)
    out = [header, "// Resource bounds of SPEC.md §10 and §11.6, from the schema's pt2f_limits attribute.\n\n"]
    for name, (value, _) in lim.items():
        if value > 2 ** 53:
            raise SystemExit(f"regen: bound {name} does not fit a TypeScript number exactly")
        out.append(f"/** {DESCRIPTIONS[name]} */\nexport const {name.upper()} = {value};\n")
    return "".join(out)


def gen_spec_table(schema) -> str:
    """The Markdown rows of the bounds, for FIELDS.md."""
    lim = read_limits(schema)
    rows = ["## Resource bounds (`pt2f_limits`)\n\n",
            "The root table's `pt2f_limits` attribute: every reader's bounds (SPEC.md §10, §11.6).\n\n",
            "| bound | value | what it limits |\n|---|---|---|\n"]
    rows += [f"| `{n}` | {v} | {DESCRIPTIONS[n]} |\n" for n, (v, _) in lim.items()]
    return "".join(rows) + "\n"
