"""The injection test's fixed CI sample: hostile strings and extreme integers in real files, nothing runs.

tests/support/pt2f_injection.py walks a real corpus file (exported and saved
here with pt2format.save) through the generated FIELDS tables and plans every
(site, payload) mutation; CI runs a deterministic random sample of that plan
(the full plan is `scripts/injection.sh --full`). Each mutant runs in a worker
process: it must be refused with a Pt2FormatError or survive everything users
do (load, module(), a call, printing, decompositions, unflatten and the
unflattened module's generated code) with no marker file created and within
the per-mutant time budget. torch errors after a successful load are printed,
not failed (they are a loader-quality matter, not code execution).
"""

from __future__ import annotations

import collections
import random
import re

import pytest

import pt2f_injection as inj

CASE = "pytree_containers"  # dict and list inputs, kwargs-free tree specs, a namedtuple output
SEED = 8
N_STRINGS = 24
N_INTS = 8
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return inj.build_corpus_files([CASE], ["flatbuffers"], tmp_path_factory.mktemp("inject-base"))[0]


def test_walk_finds_strings_map_keys_and_integers(base):
    sites = list(inj.walk(base.package))
    kinds = collections.Counter(s.kind for s in sites)
    assert kinds["string"] and kinds["int"]
    paths = {s.schema_path for s in sites}
    # Map keys are ordinary string fields of their entry tables; example-input dict keys are StringValues.
    keys = [p for p in paths if re.search(r"\.keys?(\[\])?(\.|$)", p)]
    assert len(keys) >= 2, sorted(paths)  # module-stack keys and the dict keys of the example inputs/tree specs
    # Every site is addressable: writing through set_at and reading back through get_at agree.
    for s in sites:
        v = inj.get_at(base.package, s.path)
        assert isinstance(v, str if s.kind == "string" else int), s


def test_splicing_reaches_the_bytes_the_encoder_refuses(base, tmp_path):
    """Lone surrogates and out-of-range integers cannot be encoded; the harness writes them anyway."""
    import copy

    site = next(s for s in inj.walk(base.package) if s.kind == "string")
    data = inj._splice_string(copy.deepcopy(base.package), [site.path], "x\ud800y", "flatbuffers", random.Random(0))
    assert data is not None and "x\ud800y".encode("utf-8", "surrogatepass") in data


@pytest.mark.corpus
def test_sample_of_mutants_runs_nothing(base, tmp_path):
    steps = inj.plan(base, sites="all")
    strings = [s for s in steps if s[0] != "int"]
    ints = [s for s in steps if s[0] == "int"]
    rng = random.Random(SEED)
    sample = rng.sample(strings, min(N_STRINGS, len(strings))) + rng.sample(ints, min(N_INTS, len(ints)))
    marker_dir = tmp_path / "mk"
    marker_dir.mkdir()
    muts = [(m, base.child_imports)
            for m in inj.make_mutants(base, tmp_path, str(marker_dir / "pwned"), sample, seed=SEED)]
    assert len(muts) >= len(sample) // 2, "most planned mutants must be writable"
    results = inj.run_mutants(muts, marker_dir, timeout=TIMEOUT)
    print(inj.summarize(results))
    for mut, res, verdict in results:
        if verdict == "torch-error":
            print("torch error:", inj.finding_line(mut, res, verdict))
    failures = [inj.finding_line(m, r, v) for m, r, v in results if v.startswith("FAIL")]
    assert not failures, "\n".join(failures)
    # A sample where everything was refused proves little: some mutants must load and run.
    assert any(v == "ok-survived" for *_, v in results), inj.summarize(results)


@pytest.mark.parametrize("name", sorted(inj.CONTEXTS))
def test_payloads_run_in_their_context(tmp_path, name):
    """Positive control: each code payload really runs where it aims, so "no marker" means something."""
    marker = tmp_path / "pwned"
    payload = inj.string_payloads(str(marker))[name]
    inj.run_in_context(name, payload)
    assert marker.exists(), (name, payload)


def test_full_run_tries_every_field_and_payload_exactly_once(base):
    """--full keeps each (mode, field, payload) of the corpus once, in one of the base files that has it."""
    steps = inj.plan(base, sites="per-field")
    keys = {inj.step_key(st) for st in steps}
    assert len(keys) > 100
    # Two bases with the same fields and an empty one: every key is kept once, spread over the two.
    plans = inj.once([(base, steps), (base, list(steps)), (base, [])])
    kept = [inj.step_key(st) for _, sts in plans for st in sts]
    assert sorted(kept, key=repr) == sorted(keys, key=repr)
    assert plans[2][1] == []
    assert plans[0][1] and plans[1][1], "the stable hash spreads keys over the bases that have them"


def test_mutant_ids_are_known_before_writing(base, tmp_path):
    """--only-ids re-runs mutants of an earlier run: the id of a planned step is the id make_mutants gives it."""
    steps = inj.plan(base, sites="per-field")
    sample = [st for st in steps if st[0] == "value"][:3] + [st for st in steps if st[0] == "site"][:3] \
        + [st for st in steps if st[0] == "int"][:3]
    made = list(inj.make_mutants(base, tmp_path, str(tmp_path / "pwned"), sample))
    assert len(made) == len(sample)
    assert [m.id for m in made] == [inj.mutant_id(base, st) for st in sample]
