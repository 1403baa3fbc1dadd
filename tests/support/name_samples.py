"""Names torch writes and their near misses, for comparing the readers' string classes (SPEC.md §9).

Non-ASCII identifiers (letters, marks, digits of other scripts), strings that are
identifiers to `str.isidentifier` but not in NFKC (compatibility characters,
decomposed letters, marks out of canonical order), torch's module-call names
(`n1.n2@1`) and module-stack keys (`L__self__mod_list_1.slice(2, 3, None).2`),
and code points at the edges of every row of the identifier table.
"""

from __future__ import annotations

import random

from pt2format._generated import identifier_chars as T

FIXED = [
    "modül", "bü", "modül.weight", "L__self__modül", "naïve", "Straße", "привет", "数据", "データ", "변수",
    "संख्या", "x\u0301", "x\u0315\u0301", "x\u0301\u0315", "a\u0308", "u\u0308", "mod\u0075\u0308l",
    "\ufb01", "\uff46orward", "x.\uff46orward", "\u212b", "\u2460", "x\u00b2", "\u0391\u03b2", "x\u200c", "x\u200d",
    "x\u00b7", "\u00b7x", "\u0660", "x\u0660", "\U0001d400", "\U00010400", "\U00020000", "x\U000e0100",
    "n1.n2@1", "n1.n2@12", "n1@1", "@1", "n1.n2@0", "n1.n2@01", "n1.n2@", "n1.n2@1@2", "n1.n2@x", "n1@1.n2",
    "forward@1", "a.0@3", "modül@2", "", "a@1 ",
    "L__self__mod_list_1.slice(2, 3, None).2", "L__self__mod_list_1.slice(2, 3, None)", "L['self'].layers[0]",
    "mod_list_1.slice(2, 3, None).2", "seq.slice(None, -1, None).0", "seq.slice(-2, None, 2)", "seq.slice(1, 2)",
    "seq.slice(1,2,None)", "seq.slice(1, 2, None", 'seq.slice("), 2, None)', "seq.slice(a, 2, None)",
    "seq.slice(--1, 2, None)", "seq.slice(1, 2, None).forward", "slice(0, 1, None)", "seq..slice(0, 1, None)",
    "a\tb", "a\u2028b", "a\x85b", "__main__.Modül", "torch.nn.modules.linear.Linear", "f.<locals>.Blöck",
    "\u00e9" * 1024, "\u00e9" * 1025,
]


def edge_samples(seed: int = 20, rows: int = 300) -> list[str]:
    """Strings of code points at and beside the bounds of random identifier-table rows."""
    rng = random.Random(seed)
    cps = set()
    for k in rng.sample(range(len(T.FIRST)), min(rows, len(T.FIRST))):
        for cp in (T.FIRST[k] - 1, T.FIRST[k], T.LAST[k], T.LAST[k] + 1):
            if 0 < cp < 0x110000 and not 0xD800 <= cp <= 0xDFFF:
                cps.add(cp)
    cps = sorted(cps)
    out = []
    for cp in cps:
        c = chr(cp)
        out += [c, "a" + c, c + "a", "a." + c]
    marks = [chr(cp) for cp in cps if T.CCC[_row(cp)] if _row(cp) >= 0] + ["\u0301", "\u0315", "\u0308", "\u093c"]
    for _ in range(400):
        out.append("a" + "".join(rng.choice(marks) for _ in range(rng.randrange(1, 4))))
    return out


def _row(cp: int) -> int:
    import bisect

    k = bisect.bisect_right(T.FIRST, cp) - 1
    return k if k >= 0 and cp <= T.LAST[k] else -1


def samples() -> list[str]:
    return FIXED + edge_samples()
