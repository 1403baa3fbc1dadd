"""A digest of each string class's grammar, so that a released grammar cannot change unnoticed (SPEC.md §8.1).

The schema names a field's class (`pt2f_string`), and the name-level diff
(schema/evolution.py) catches a field whose class changes. The grammar of a
class lives in code (`pt2format/_strings.py` and its generated identifier
table), which that diff does not see: an edit there changes which files every
reader accepts without any schema change. So each released version records,
next to its frozen schema, the digest of every class's behaviour on a fixed
set of probe strings (`schema/history/<version>/string_grammar.json`), and
`tests/schema/test_string_grammar.py` fails when a class of a released
version answers any probe differently.

The digest is behavioural: a refactoring that accepts and refuses exactly the
same strings keeps it; any change of what a class admits among the probes
(the empty string, every code point below U+0800 and one in 127 above, alone and after a
letter, every one- and two-character printable ASCII string, and the shapes
the classes are about: paths, call indices, slices, qualified names,
keywords, reserved names, lengths at each limit) changes it. The generated
identifier table is hashed as well, whole.

    python schema/string_grammar.py                    # print the current digests
    python schema/string_grammar.py --write schema/history/1.0/string_grammar.json   # at a release only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import keyword
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def probes() -> list[str]:
    """The fixed probe strings, in a fixed order."""
    from pt2format._strings import MAX_NAME_LENGTH, RESERVED_LOCAL_NAMES, RESERVED_MEMBER_NAMES

    out: list[str] = [""]
    for cp in list(range(0x800)) + list(range(0x800, 0x110000, 127)):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        out += [chr(cp), "a" + chr(cp)]
    ascii_ = [chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n", "\x00", "\x7f"]
    out += [a + b for a in ascii_ for b in ascii_]
    words = sorted(keyword.kwlist) + sorted(keyword.softkwlist) + sorted(RESERVED_MEMBER_NAMES) + \
        sorted(RESERVED_LOCAL_NAMES) + ["__init__", "__x", "x__", "_", "__", "True", "None", "self"]
    out += words + [w + ".a" for w in words] + ["a." + w for w in words]
    shapes = [
        "a.b", "a..b", ".a", "a.", "a.0", "a.01", "0.a", "a.b.c", "a._b", "a.__b__", "ﬁ", "ａ", "a\u200db",
        "n1.n2@1", "n1@0", "n1@01", "@1", "a@1.b", "a.b@2", "a@1@2", "a@", "a@x",
        "mod_list_1.slice(2, 3, None).2", "slice(None, None, None)", "a.slice(1,2,3)", "a.slice(-1, 2, 3)",
        "a.slice(1, 2)", "a.slice(x, 2, 3)", "slice(0, -3, None).a",
        "torch.ops.aten.add.Tensor", "aten::add.Tensor", "a.<locals>.b", "<lambda>", "<genexpr>", "a.<lambda>",
        "<Lambda>", "a.<>", "torch.nn.Linear", "__main__.M", "a/b", "a\\b", "..", "a..", "model.bin",
        "x-y_z.0", "-a", ".hidden", "cuda", "cpu", "privateuseone", "CUDA", "cuda:0", "meta", "a" * 64, "b" * 65,
        "L['x']", "x[0]", "a b", " a", "a ", "a\u2028b", "a\u0085b", "é", "e\u0301", "Ω", "Ω", "𝔘", "x\U0001F600",
    ]
    out += shapes
    for n in (254, 255, 256, MAX_NAME_LENGTH - 1, MAX_NAME_LENGTH, MAX_NAME_LENGTH + 1):
        out += ["a" * n, "a." * (n // 2) + "a"[: n % 2 or 1]]
    return out


def digests(classes=None) -> dict:
    """{"probes": digest of the probe set, "identifier_table": digest of the generated table,
    "classes": {class: digest of its accept/refuse answers}}."""
    from pt2format import _strings
    from pt2format.errors import Pt2FormatError

    ps = probes()
    h = hashlib.sha256()
    for p in ps:
        h.update(p.encode("utf-8", "surrogatepass") + b"\0")
    out = {"probes": h.hexdigest(), "probe_count": len(ps),
           "identifier_table": hashlib.sha256(
               (ROOT / "pt2format" / "_generated" / "identifier_chars.py").read_bytes()).hexdigest(),
           "classes": {}}
    for name in classes or _strings.STRING_CLASSES:
        check = _strings._make_checker(name)  # a fresh checker: no cache shared with other callers
        bits = bytearray()
        for p in ps:
            try:
                check(p, "probe")
                bits.append(49)
            except Pt2FormatError:
                bits.append(48)
        out["classes"][name] = hashlib.sha256(bytes(bits)).hexdigest()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", help="record the current digests in this file (when a version is released)")
    a = ap.parse_args(argv)
    d = digests()
    text = json.dumps(d, indent=1, sort_keys=True) + "\n"
    if a.write:
        Path(a.write).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
