"""Feature bits and section kinds: one table (schema/container.toml), and every reader knows exactly it.

The three readers used to keep KNOWN_FEATURES / kKnownFeatures / SectionKind by
hand. Now regen.py generates them from the table; these tests fail when a reader
knows a different set of bits than the table (each reader is asked, through the
file it refuses), when a reader spells the numbers itself again, when a
generated file no longer matches the table (a table edited without regen), and
when an edit of the table breaks a release (a bit removed or renumbered).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import native_util_cpp as CPP
import native_util_ts as TS
import pt2f_samples
from pt2format._container import header

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "schema")]

import evolution  # noqa: E402
from codegen import container  # noqa: E402

TABLE = container.load(ROOT / "schema" / "container.toml")


def test_python_reader_knows_the_table():
    assert header.KNOWN_FEATURES == TABLE.known_features
    assert {k.name: k.value for k in header.SectionKind} == {k.name: k.value for k in TABLE.section_kinds}


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """A file requiring one bit past the table, per encoding: every reader must refuse it naming its known bits."""
    tmp = tmp_path_factory.mktemp("features")
    out = {}
    for enc in pt2f_samples.ENCODINGS:
        pkg = pt2f_samples.tiny_package()
        pkg.required_features = 1 << len(TABLE.features)
        out[enc] = tmp / f"unknown-bit-{enc}.pt2f"
        pt2f_samples.write_raw(out[enc], pkg, pt2f_samples.float_payloads(), encoding=enc)
    return out


def test_every_reader_refuses_exactly_the_bits_the_table_does_not_have(refused):
    """Each reader's UnsupportedFeatureError states the bits it knows: all must be the table's."""
    cpp_why, ts_why = CPP.missing_toolchain(), TS.missing_toolchain()
    if cpp_why or ts_why:
        pytest.fail(f"toolchain missing: {cpp_why or ts_why}")
    cpp = CPP.build("release")
    TS.build()  # also waits for another worker's build of loaders/ts (flock) instead of reading a half-built dist/
    want = f"bits within 0x{TABLE.known_features:x}"
    from pt2format import _api
    from pt2format.errors import UnsupportedFeatureError

    ts = TS.dump_batch(list(refused.values()))
    for (enc, path), t in zip(refused.items(), ts):
        with pytest.raises(UnsupportedFeatureError) as e:
            _api.read(path)
        assert want in str(e.value), ("python", enc, str(e.value))
        r = CPP.run(cpp / "pt2f-dump", path)
        assert r.returncode != 0 and "UnsupportedFeatureError" in r.stderr and want in r.stderr, ("cpp", enc, r.stderr)
        assert not t["ok"] and t["error"] == "UnsupportedFeatureError" and want in t["message"], ("ts", enc, t)


@pytest.mark.parametrize("path,pattern", [
    ("pt2format/_container/header.py", r"^(KNOWN_FEATURES|FEATURE_\w+)\s*=|^\s+(PROGRAM|DATA)\s*=\s*\d"),
    ("loaders/cpp/include/pt2f/container.h", r"kKnownFeatures\s*=|enum class SectionKind"),
    *((str(p.relative_to(ROOT)), r"kFeature\w+\s*=\s*\d")  # validate.cc and its parts
      for p in sorted((ROOT / "loaders/cpp/src").glob("validate*"))),
    ("loaders/ts/src/container.ts", r"KNOWN_FEATURES\s*=|SectionKind\s*=\s*\{"),
])
def test_no_reader_spells_the_numbers_itself(path, pattern):
    text = (ROOT / path).read_text()
    assert not re.search(pattern, text, re.M), f"{path} defines container numbers by hand; import the generated ones"


def test_generated_constants_follow_the_table():
    """What each reader compiles in, read from its generated file, is the table (regen.py --check also holds)."""
    cpp = (ROOT / "loaders/cpp/generated/pt2format_container.h").read_text()
    ts = (ROOT / "loaders/ts/src/generated/container.ts").read_text()
    assert f"kKnownFeatures = 0x{TABLE.known_features:x};" in cpp
    assert f"KNOWN_FEATURES = {TABLE.known_features}n;" in ts
    for k in TABLE.section_kinds:
        assert f"{k.camel} = {k.value}" in cpp and f"{k.name}: {k.value}" in ts


def test_a_table_edited_without_regen_is_caught(tmp_path):
    """A bit added to the table but not regenerated: the generated readers disagree with it, and --check fails."""
    text = (ROOT / "schema" / "container.toml").read_text()
    edited = text + (f'\n[[feature]]\nbit = {len(TABLE.features)}\nname = "DISAGREE"\nsince = "1.0"\ndoc = "x"\n')
    t = container.load(_write(tmp_path, edited))
    assert t.known_features != header.KNOWN_FEATURES
    assert container.gen_python(t, "x") != container.gen_python(TABLE, "x")


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "container.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("edit,expect", [
    (lambda t: t.replace('name = "EXTERNAL_FILES"', 'name = "EXTERNAL_DATA"'), "changed"),
    (lambda t: t.replace('bit = 1\nname = "EXTERNAL_FILES"\nsince = "1.0"', 'bit = 1\nname = "EXTERNAL_FILES"\nsince = "1.1"'),
     "changed"),
    (lambda t: t.replace("min_alignment = 64", "min_alignment = 128"), "changed"),
])
def test_an_edit_of_a_released_entry_fails_the_diff(tmp_path, edit, expect):
    text = (ROOT / "schema" / "container.toml").read_text()
    new = edit(text)
    assert new != text
    problems = evolution.diff_container(TABLE, container.load(_write(tmp_path, new)))
    assert any(expect in p for p in problems), problems


def test_the_table_refuses_a_skipped_bit(tmp_path):
    text = (ROOT / "schema" / "container.toml").read_text()
    bad = text + f'\n[[feature]]\nbit = {len(TABLE.features) + 1}\nname = "SKIPPED"\nsince = "1.0"\ndoc = "x"\n'
    with pytest.raises(SystemExit, match="in order"):
        container.load(_write(tmp_path, bad))
