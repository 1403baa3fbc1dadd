"""The C++ reader's string classes (SPEC.md §9) against pt2format._strings, string by string.

Both readers must put every string in the same class; the word lists the C++
grammars use are generated from pt2format._strings, the grammars are written
twice, so this test feeds both the same strings: names torch reserves,
keywords, break-out payloads, boundary lengths, every ASCII character in
each position, non-ASCII letters and control characters, and random strings.
"""

from __future__ import annotations

import keyword
import random

import pytest

import name_samples
import native_util_cpp as U
from pt2format import _strings
from pt2format.errors import Pt2FormatError

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("cpp_reader")]


@pytest.fixture(scope="module")
def cpp():
    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    return U.build("release")


def _samples() -> list:
    out = ["", "a", "_", "x1", "1x", "self", "forward", "training", "__init__", "__x", "x__", "____", "a.b", "a..b",
           ".a", "a.", "a.0.b", "0", "<locals>", "a.<lambda>", "<Lambda>", "a.<>", "a-b", "a b", "a'b", 'a"b', "a`b",
           "a\\b", "a\nb", "a\x00b", "a\x7fb", "a\u0085b", "a\u2028b", "caf\u00e9", "\u00e9", "x" * 1024, "x" * 1025,
           "f" * 255, "f" * 256, "c" * 64, "c" * 65, "cpu", "CPU", "cuda:0", "c_1", "a.bin", ".hidden", "-x", "x-y.z",
           "net.0.weight", "net.forward", "a.to", "L__self__", "L['x']", "method-wrapper.__get__", "{x}", "#x",
           "torch.ops.aten.add.Tensor", "os.system('x')", "\U0001F600", "k\u00e9y", "k\u0080", "k\u009f", "k\u00a0"]
    out += list(keyword.kwlist) + [f"a.{k}" for k in keyword.kwlist[:5]]
    out += sorted(_strings.RESERVED_MEMBER_NAMES) + [f"x.{n}" for n in sorted(_strings.RESERVED_MEMBER_NAMES)[:20]]
    out += sorted(_strings.RESERVED_NODE_META_KEYS)
    out += name_samples.samples()  # Unicode identifiers, NFKC near misses, torch's n1.n2@1 and slice keys
    for c in map(chr, range(0x80)):
        out += [c, f"a{c}", f"a{c}b", f"{c}a"]
    rng = random.Random(8)
    alphabet = "abcXYZ019_.-<>'\" \\\n\x01\u00e9\u2028\U0001F600"
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))) for _ in range(3000)]
    return out


def _python_ok(cls: str, s: str) -> bool:
    try:
        _strings.CHECKERS[cls](s, "T.f")
    except Pt2FormatError:
        return False
    return True


def test_every_class_agrees_with_python(cpp):
    samples = _samples()
    lines, expected = [], []
    for cls in _strings.STRING_CLASSES:
        for s in samples:
            lines.append(f"{cls}\t{s.encode('utf-8').hex()}")
            expected.append((cls, s, "ok" if _python_ok(cls, s) else "bad"))
    r = U.run_input(cpp / "pt2f-strings", "\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    got = r.stdout.decode().split()
    assert len(got) == len(expected)
    wrong = [(cls, s, want) for (cls, s, want), g in zip(expected, got) if g != want]
    assert not wrong, f"{len(wrong)} disagreements, first: {wrong[:10]}"
    # The samples reach both verdicts in every class but free_text.
    for cls in _strings.STRING_CLASSES:
        verdicts = {w for c, _, w in expected if c == cls}
        assert verdicts == ({"ok"} if cls == "free_text" else {"ok", "bad"}), cls
