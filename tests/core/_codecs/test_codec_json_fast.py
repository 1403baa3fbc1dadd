"""The JSON decoder's two parses (plain + duplicate-key proof, strict) against each other.

The generated decoder works on json.loads' plain dicts, where a duplicate key
has already replaced the earlier one; it proves their absence by counting
':' (pt2format/_codecs/json.py). These tests write duplicates where that
count is hardest to get right, check that legal spellings the proof does not
cover still decode (through the strict path), and that both paths (the same
generated decoder on either parse) agree on valid and mutated documents.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2format import _codecs as C
from pt2format._codecs import json as J
from pt2format._generated import model as M
from pt2format.errors import EncodingError, Pt2FormatError

import codec_strategies as S

_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextmanager
def strict_path_only():
    """Run pt2format._codecs.json as if the duplicate-key proof always failed: every text goes
    through the strict parser (duplicate keys rejected as read), then the same generated decoder."""
    saved = J._no_duplicate_keys
    J._no_duplicate_keys = lambda *a: False
    try:
        yield
    finally:
        J._no_duplicate_keys = saved


def outcome(text: bytes, **kw):
    """The decoded tree, or (error type, path) of the typed error."""
    try:
        return C.decode(text, "json", **kw)
    except Pt2FormatError as e:
        return (type(e).__name__, e.path)


@pytest.fixture(scope="module")
def exhaustive():
    return S.exhaustive_package()


def _colon_package():
    """Strings full of ':' (the proof's hard case) in single fields and string vectors."""
    return M.Package(format_version=M.FormatVersion(1, 0), producer=M.Producer(name="a:b::c"), programs=[M.Program(
        name="forward", guards_code=[":", "x:y", ""], metadata=[M.StringEntry("k:", "v::")], graph=M.Graph(nodes=[M.Node(
            name="n", target="torch.ops.aten.add.Tensor", inputs=[M.NamedArgument("s", M.StringArgument('":'))],
            metadata=M.NodeMetadata(stack_trace='File "m.py", line 3:\n    if x: y = {1: 2}'))]))])


# ---------------------------------------------------------------------------
# The plain-parse (proof) and strict-parse paths agree
# ---------------------------------------------------------------------------

def test_proof_and_strict_json_paths_agree(exhaustive):
    for pkg in (exhaustive, S.alignment_package(), S.deep_value_package(40), _colon_package()):
        text = C.encode(pkg, "json")
        with strict_path_only():
            assert C.decode(text, "json") == pkg
        assert C.decode(text, "json") == pkg


@given(pkg=S.packages(unknown_enums=True))
@_SETTINGS
def test_proof_and_strict_json_paths_agree_random(pkg):
    text = C.encode(pkg, "json")
    with strict_path_only():
        assert C.decode(text, "json") == pkg
    tree, members, strings = J._gen.decode_tree(json.loads(text))
    assert tree == pkg
    # Canonical text is proven duplicate-free on the fast path (no needless second parse).
    assert J._no_duplicate_keys(text.decode("utf-8"), members, strings)


def test_colons_in_strings_do_not_defeat_the_proof():
    pkg = _colon_package()
    text = C.encode(pkg, "json")
    tree, members, strings = J._gen.decode_tree(json.loads(text))
    assert tree == pkg
    assert J._no_duplicate_keys(text.decode("utf-8"), members, strings)


_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70),
              st.sampled_from([-1, 255, 256, 1 << 31, 1 << 32, 1 << 63, 1 << 64, -(1 << 63) - 1, 2.0, -0.0]),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["nan", "inf", "x:y", "", "TensorArgument", "NONE", "INPUT", "FLOAT32"]),
              st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["name", "value", "value_type", "kind", "expr", "zz"]),
                                            inner, max_size=3)),
    max_leaves=6)


def _slots(doc, out, path=()):
    """Every (container path, key or index) in a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(path + (k,))
            _slots(v, out, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append(path + (i,))
            _slots(v, out, path + (i,))
    return out


_SMALL = S.packages(max_depth=5, max_len=2, unknown_enums=True)


@given(pkg=_SMALL, which=st.integers(0, 10_000), value=_JSON_VALUES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_proof_and_strict_json_paths_agree_on_mutated_documents(pkg, which, value):
    """Any value replaced anywhere: the same tree or the same typed error (type and path) either way."""
    doc = json.loads(C.encode(pkg, "json"))
    slots = _slots(doc, [])
    *parent, last = slots[which % len(slots)]
    node = doc
    for k in parent:
        node = node[k]
    node[last] = value
    text = json.dumps(doc).encode()
    fast = outcome(text)
    with strict_path_only():
        assert outcome(text) == fast


# ---------------------------------------------------------------------------
# Duplicate keys
# ---------------------------------------------------------------------------

def _dump_with_duplicate(doc, target: int, dup_value, before: bool) -> str:
    """JSON text of `doc` where the `target`-th member (in document order) is written twice,
    the copy holding `dup_value` and coming before or after the original."""
    counter = [0]

    def dump(v):
        if isinstance(v, dict):
            parts = []
            for k, x in v.items():
                member = f"{json.dumps(k)}: {dump(x)}"
                if counter[0] == target:
                    copy = f"{json.dumps(k)}: {json.dumps(dup_value)}"
                    parts += [copy, member] if before else [member, copy]
                else:
                    parts.append(member)
                counter[0] += 1
            return "{" + ", ".join(parts) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(dump(x) for x in v) + "]"
        return json.dumps(v)

    return dump(doc)


def _member_count(doc) -> int:
    if isinstance(doc, dict):
        return len(doc) + sum(_member_count(v) for v in doc.values())
    if isinstance(doc, list):
        return sum(_member_count(v) for v in doc)
    return 0


@given(pkg=_SMALL, target=st.integers(0, 10_000), before=st.booleans(),
       dup=st.one_of(_JSON_VALUES, st.just("a:b:c"), st.just({"name": "x:", "kind": 1})))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_duplicate_key_anywhere_rejected(pkg, target, before, dup):
    doc = json.loads(C.encode(pkg, "json"))
    text = _dump_with_duplicate(doc, target % _member_count(doc), dup, before).encode()
    for schema in (False, True):
        with pytest.raises(EncodingError, match="duplicate key"):
            C.decode(text, "json", json_schema=schema)


def test_duplicate_with_identical_value_rejected():
    doc = json.loads(C.encode(_colon_package(), "json"))
    text = _dump_with_duplicate(doc, 0, doc["format_version"], before=False).encode()
    with pytest.raises(EncodingError, match="duplicate key"):
        C.decode(text, "json")


def test_duplicate_hidden_by_an_escaped_colon_rejected():
    """A \\u003a escape adds a ':' to a string that the text does not show: such text takes the strict path."""
    doc = json.loads(C.encode(_colon_package(), "json"))
    doc["programs"][0]["name"] = "ab:"
    text = _dump_with_duplicate(doc, 0, doc["format_version"], before=True).replace('"ab:"', '"ab\\u003a"')
    with pytest.raises(EncodingError, match="duplicate key"):
        C.decode(text.encode(), "json")


# ---------------------------------------------------------------------------
# Legal spellings outside the canonical form still decode
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("style", [
    dict(indent=3), dict(separators=(" , ", " : ")), dict(ensure_ascii=True), dict(indent="\t", sort_keys=True)])
def test_other_json_layouts_decode(style):
    pkg = _colon_package()
    text = json.dumps(json.loads(C.encode(pkg, "json")), **style).encode()
    assert C.decode(text, "json") == pkg


def test_escaped_colons_and_key_escapes_decode():
    pkg = _colon_package()
    text = C.encode(pkg, "json").decode()
    text = text.replace("a:b::c", "a\\u003ab\\u003A:c").replace('"name"', '"na\\u006de"')
    assert C.decode(text.encode(), "json") == pkg


# ---------------------------------------------------------------------------
# Unknown keys (a newer minor's fields, SPEC.md section 8.2)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("extra", ['"a:b"', '{"k:1": ["x:y", {"z": ":"}]}', '[1, {"q": 2}]', "null"])
def test_fast_path_ignores_unknown_keys_and_still_proves_no_duplicates(extra):
    """The generated decoder skips unknown keys and counts their ':' so the proof still holds."""
    pkg = _colon_package()
    text = C.encode(pkg, "json").decode()
    newer = text.replace('"name": "a:b::c"', f'"future:key": {extra}, "name": "a:b::c"', 1).encode()
    assert newer != text.encode()
    tree, members, strings = J._gen.decode_tree(json.loads(newer), 128)
    assert tree == pkg
    assert J._no_duplicate_keys(newer.decode(), members, strings)
    assert C.decode(newer, "json") == pkg
    with strict_path_only():
        assert C.decode(newer, "json") == pkg


def test_duplicate_key_inside_an_unknown_key_is_not_proven_absent():
    pkg = _colon_package()
    text = C.encode(pkg, "json").decode()
    dup = text.replace('"name": "a:b::c"', '"future": {"a": 1, "a": 2}, "name": "a:b::c"', 1)
    tree, members, strings = J._gen.decode_tree(json.loads(dup), 128)
    assert not J._no_duplicate_keys(dup, members, strings)
    with pytest.raises(EncodingError, match="duplicate"):
        C.decode(dup.encode(), "json")


@pytest.mark.parametrize("text", [
    b'{"format_version": {}, "programs": [{"symbols": [{"float_hint": "nan:0x7ff8000000000001", '
    b'"float_hint": "nan:0x7ff8000000000002"}]}]}',
    b'{"format_version": {}, "programs": [{"symbols": [{"float_hint": 1.0, "float_hint": "nan:0x7ff8000000000002"}]}]}',
    b'{"format_version": {}, "programs": [{"name": "nan:0x7ff8000000000001", "name": "b"}]}',
], ids=["two-spellings", "number-then-spelling", "string-like-a-spelling"])
def test_duplicate_keys_around_nan_spellings_refused(text):
    """The fast path counts each "nan:0x<bits>" float's ':'; a duplicate key must still be found."""
    with pytest.raises(EncodingError, match="twice|duplicate"):
        C.decode(text, "json")
