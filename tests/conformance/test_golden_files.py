"""Golden files stay readable forever: each one reads, dumps to its expected.json and loads into torch.

Golden files live in conformance/golden/<format-version>/<case>-<encoding>/
and are written once by conformance/make_golden.py (append-only).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from conformance import make_golden

REPO = make_golden.REPO


def _golden_dirs():
    out = []
    if os.path.isdir(make_golden.GOLDEN_ROOT):
        for version in sorted(os.listdir(make_golden.GOLDEN_ROOT)):
            vdir = os.path.join(make_golden.GOLDEN_ROOT, version)
            if not os.path.isdir(vdir):
                continue
            for name in sorted(os.listdir(vdir)):
                if not name.startswith(".") and os.path.isdir(os.path.join(vdir, name)):
                    out.append(os.path.join(vdir, name))
    return out


GOLDEN = _golden_dirs()
IDS = [os.path.relpath(d, make_golden.GOLDEN_ROOT) for d in GOLDEN]


def _info(d):
    with open(os.path.join(d, "info.json"), encoding="utf-8") as f:
        return json.load(f)


def test_golden_files_exist():
    assert GOLDEN, f"no golden files under {make_golden.GOLDEN_ROOT}: run python conformance/make_golden.py"
    cases = {_info(d)["case"] for d in GOLDEN}
    assert {"mlp", "dynamic_batch", "cond", "custom_op", "multi_program"} <= cases


@pytest.mark.parametrize("d", GOLDEN, ids=IDS)
def test_golden_reads_and_dumps_to_expected(d):
    import pt2format

    path = os.path.join(d, "program.pt2f")
    assert os.path.getsize(path) < make_golden.MAX_BYTES
    pf = pt2format.read(path)
    try:
        assert len(pf.package.programs) == len(_info(d)["programs"])
    finally:
        pf.close()
    pt2format.validate(path)
    dump = subprocess.run([sys.executable, "-m", "pt2format", "dump", path], capture_output=True, cwd=REPO)
    assert dump.returncode == 0, dump.stderr.decode()[-2000:]
    with open(os.path.join(d, "expected.json"), "rb") as f:
        expected = f.read()
    assert dump.stdout == expected


def _same_state(a, b) -> bool:
    """Bit-for-bit equal state (parameters, buffers, constants) of two programs."""
    from conformance._behave import tensor_bytes

    sa = {**a.state_dict, **{k: v for k, v in a.constants.items() if hasattr(v, "dtype")}}
    sb = {**b.state_dict, **{k: v for k, v in b.constants.items() if hasattr(v, "dtype")}}
    if sa.keys() != sb.keys():
        return False
    return all(sa[k].dtype == sb[k].dtype and sa[k].shape == sb[k].shape
               and tensor_bytes(sa[k]) == tensor_bytes(sb[k]) for k in sa)


def _torch_here(case: str) -> dict:
    """The golden file's programs exported again by torch on this machine, with their example inputs.

    Outputs recorded when the golden file was written depend on that machine's CPU kernels (AVX2
    and AVX-512 matmuls differ in the last bit), so the reference for behaviour is torch's
    original program run here, whenever exporting the case again gives the golden file's state.
    """
    import torch

    from conformance import corpus

    torch.manual_seed(0)
    built = corpus.get_case(case).build()
    specs = built if isinstance(built, dict) else {"forward": built}
    return {k: (s.export(), s) for k, s in specs.items()}


@pytest.mark.parametrize("d", GOLDEN, ids=IDS)
def test_golden_loads_and_runs_like_torch(d, tmp_path):
    import pt2format
    from conformance._behave import call, compare_result, record, same_results
    from conformance._tensorio import TreeWriter

    info = _info(d)
    for name in info["child_imports"]:
        importlib.import_module(name)
    with open(os.path.join(d, "outputs", "outputs.json"), encoding="utf-8") as f:
        stored = json.load(f)
    here = _torch_here(info["case"])
    for pname in info["programs"]:
        ep = pt2format.load(os.path.join(d, "program.pt2f"), program=pname if info["multi"] else None)
        args, kwargs = ep.example_inputs
        got = call(ep.module(), tuple(args), dict(kwargs), grad=False)  # as the outputs were recorded
        original, spec = here[pname]
        same_inputs = same_results({"outputs": [list(args), kwargs]}, {"outputs": [list(spec.args), spec.kwargs]})
        if same_inputs and _same_state(original, ep):
            w = TreeWriter(str(tmp_path / pname), pname)
            expected = record(call(original.module(), tuple(spec.args), dict(spec.kwargs), grad=False), w)
            problem = compare_result(expected, got, str(tmp_path / pname))
        else:  # the case changed since: only the recorded outputs can tell
            problem = compare_result(stored[pname], got, os.path.join(d, "outputs"))
        assert problem is None, f"{pname}: {problem}"


def test_make_golden_never_rewrites(tmp_path):
    if not GOLDEN:
        pytest.skip("no golden files to protect yet")
    src = GOLDEN[0]
    # The case as it would sit in the working version's directory (goldens of older
    # versions live in their own directories and are never looked at by add_case).
    dst = os.path.join(make_golden.version_dir(str(tmp_path)), os.path.basename(src))
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "program.pt2f"), "wb") as f:
        f.write(b"not rewritten")
    info = _info(src)
    assert make_golden.add_case(info["case"], info["encoding"], root=str(tmp_path)) == "exists"
    with open(os.path.join(dst, "program.pt2f"), "rb") as f:
        assert f.read() == b"not rewritten"


def test_make_golden_adds_missing(tmp_path):
    assert make_golden.add_case("mlp", "json", root=str(tmp_path)) == "added"
    vdir = make_golden.version_dir(str(tmp_path))
    made = os.path.join(vdir, "mlp-json")
    assert sorted(os.listdir(made)) == ["expected.json", "info.json", "outputs", "program.pt2f"]
    assert [n for n in os.listdir(vdir) if n.startswith(".")] == []  # no staging left behind
    before = open(os.path.join(made, "program.pt2f"), "rb").read()
    assert make_golden.add_case("mlp", "json", root=str(tmp_path)) == "exists"
    assert open(os.path.join(made, "program.pt2f"), "rb").read() == before
