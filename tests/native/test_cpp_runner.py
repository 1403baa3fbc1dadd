"""pt2f-run (loaders/cpp, the C++ runner on libtorch) against pt2format.load_module, bit for bit.

Every corpus case is exported, saved in each encoding and run by one
pt2f-run process (--batch, one intra-op thread, two runs per program) and
by `load_module` in this process (one thread, two runs): the outputs of the
second run and the state after it must be identical bit for bit. A case the
runner cannot run must be listed in CANNOT_RUN with the reason its error
names; the test fails when a listed case starts to run (the list is kept
true) or an unlisted one fails. The fast cases run by default; the whole
corpus with --corpus. Bad inputs get typed errors, never a crash.
"""

from __future__ import annotations

import subprocess

import pytest
import torch

import pt2format
from conformance import corpus
from conformance.runner import not_exportable
from native_util_cpp import build, missing_toolchain
import native_runner
from pt2f_rt_models import MLP

pytestmark = pytest.mark.native

ENCODINGS = ("flatbuffers", "msgpack", "json")

#: case -> what the runner's error says (or why its inputs cannot be written), for every case it cannot run.
CANNOT_RUN = {
    "scalar_none_kwargs_inputs": "a str cannot travel in a weight file",
    # custom operators defined in Python (torch.library): no library to load
    "custom_op": "operator pt2f_conf::scaled_add is not registered",
    "cond_after_mutating_op": "operator pt2f_conf::add_into is not registered",
    "custom_op_mutating": "is not registered",
    "custom_op_mutating_decomposed": "higher-order operator auto_functionalized_v2 is not supported",
    "sparse_coo_state": "built from other tensor rows",
    "sparse_compressed_state": "built from other tensor rows",
    "subclass_state": "built from other tensor rows",
    "effect_tokens": "effect tokens are not supported",
    "associative_scan_generic": "lazy_load_decompositions is not supported",  # functorch's vmap calls
    "while_loop_stack_output": "while_loop_stack_output is not supported",
    "meta_device_state": "tensor is a meta-device tensor",
    "torchao_int8_weight_only": "built from other tensor rows",
    # libraries loadable with --library, not built here
    "quantized_decomposed_per_tensor": "quantized_decomposed::dequantize_per_tensor is not registered",
    "quantized_decomposed_per_channel": "quantized_decomposed::dequantize_per_channel is not registered",
    "mixtral_tiny": "transformers::grouped_mm_fallback is not registered",
    "qwen2_moe_tiny": "transformers::grouped_mm_fallback is not registered",
    "torchbind_object": "custom (torchbind) objects are not supported",
    "exportdb.tensor_setattr": "a str cannot travel in a weight file",
    "torch_test.constant_input_naming": "a str cannot travel in a weight file",
    "torch_test.colon_parameter": "not a valid attr_path",  # pt2format's save refuses the name (issue 40, section 4)
    "torch_test.symint_tensor_return": "is not registered",
    "torch_test.custom_op_auto_functionalize": "is not registered",
    "torch_test.custom_op_auto_functionalize_decomposed": "auto_functionalized_v2 is not supported",
    "torch_test.custom_op_auto_functionalize_pre_dispatch": "auto_functionalized_v2 is not supported",
    "torch_test.custom_op_auto_warn_pre_dispatch": "auto_functionalized_v2 is not supported",
    "torch_test.unbacked_bindings_for_divisible_u_symint": "is not registered",
    "torch_test.custom_op_preserve": "is not registered",
}


@pytest.fixture(scope="module")
def runner_exe():
    why = missing_toolchain()
    if why:
        pytest.skip(why)
    exe = build() / "pt2f-run"
    assert exe.exists(), "scripts/build_cpp.sh did not build pt2f-run although torch is importable"
    return exe


def _cases(fast: bool):
    pinned = not_exportable()
    return [c.name for c in corpus.all_cases().values() if c.fast == fast and c.name not in pinned]


def _check(exe, names, tmp_path):
    jobs, outcome = [], {}
    for name in names:
        for enc in ENCODINGS:
            try:
                jobs += native_runner.prepare(name, enc, tmp_path)
            except Exception as e:  # noqa: BLE001 - reported as the case's reason, never silent
                outcome.setdefault(name, []).append(f"reference: {type(e).__name__}: {e}")
    runnable = [j for j in jobs if j.why_not is None]
    lines = native_runner.run_batch(exe, runnable, tmp_path) if runnable else []
    for j in jobs:
        if j.why_not is not None:
            outcome.setdefault(j.case, []).append(j.why_not)
    problems = []  # every case's, so one run names them all
    for j, line in zip(runnable, lines):
        if line != "OK":
            outcome.setdefault(j.case, []).append(line)
            continue
        diff = native_runner.compare(j)
        if diff is not None:
            problems.append(f"{j.case}/{j.program or 'forward'} ({j.encoding}): {diff}")
    for name in names:
        reasons = outcome.get(name)
        if name in CANNOT_RUN:
            if not reasons:
                problems.append(f"{name} runs now: remove it from CANNOT_RUN")
            elif not all(CANNOT_RUN[name] in r for r in reasons):
                problems.append(f"{name}: {reasons[0]}")
        elif reasons:
            problems.append(f"{name}: {reasons[0]}")
    assert not problems, "\n".join(problems)


def test_runner_matches_load_module_fast(runner_exe, tmp_path):
    _check(runner_exe, _cases(fast=True), tmp_path)


@pytest.mark.corpus
def test_runner_matches_load_module_corpus(runner_exe, tmp_path):
    _check(runner_exe, _cases(fast=False), tmp_path)


# ---------------------------------------------------------------------------
# Bad input: typed errors (exit status 1 and the error's kind), never a crash

class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x).relu()


@pytest.fixture(scope="module")
def lin_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("runner_bad")
    ep = torch.export.export(_Lin(), (torch.randn(2, 4),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=2, max=8)},))
    pt2format.save(ep, d / "lin.pt2f", progress=False)
    return d, d / "lin.pt2f"


def _run(exe, model, inputs: dict, d):
    pt2format.save_weights(inputs, d / "in.pt2f", progress=False)
    out = d / "out.pt2f"
    if out.exists():
        out.unlink()
    r = subprocess.run([str(exe), str(model), "--inputs", str(d / "in.pt2f"), "--output", str(out)],
                       capture_output=True, text=True, timeout=120)
    return r, out


def test_runner_good_input_matches_load_module(runner_exe, lin_file):
    d, model = lin_file
    x = torch.randn(5, 4)
    r, out = _run(runner_exe, model, {"0": x}, d)
    assert r.returncode == 0, r.stderr
    with torch.no_grad():
        want = pt2format.load_module(model)(x)
    with pt2format.open(out) as f:
        assert f.keys() == ["0"]
        assert torch.equal(f.get_tensor("0"), want)
    pt2format.validate(out)  # the C++ writer's file passes every check of the Python reader


@pytest.mark.parametrize("inputs, kind, says", [
    ({"0": torch.randn(2, 4), "1": torch.randn(2, 4)}, "InputError", "is not a position"),
    ({}, "InputError", "no tensor '0'"),
    ({"0": torch.zeros(2, 4, dtype=torch.int64)}, "InputError", "expected dtype Float"),
    ({"0": torch.randn(2, 5)}, "InputError", "size(1): expected 4, got 5"),
    ({"0": torch.randn(2, 4, 1)}, "InputError", "expected 2 dimensions"),
    ({"0": torch.randn(9, 4)}, "GuardError", "outside the range [2, 8]"),
])
def test_runner_bad_inputs_are_typed_errors(runner_exe, lin_file, inputs, kind, says):
    d, model = lin_file
    r, out = _run(runner_exe, model, inputs, d)
    assert r.returncode == 1, r.stderr
    assert f"{kind}:" in r.stderr and says in r.stderr, r.stderr
    assert not out.exists()


def test_runner_unregistered_operator_is_named(runner_exe, tmp_path):
    (job,) = native_runner.prepare("custom_op", "flatbuffers", tmp_path)
    r = subprocess.run([str(runner_exe), str(job.model), "--inputs", str(job.inputs), "--output",
                        str(tmp_path / "o.pt2f")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "UnknownOperator:" in r.stderr and "pt2f_conf::scaled_add" in r.stderr, r.stderr


def test_runner_refuses_damaged_file(runner_exe, lin_file, tmp_path):
    _, model = lin_file
    raw = bytearray(model.read_bytes())
    raw[200] ^= 0xFF  # inside the program section: its CRC-32 no longer matches
    bad = tmp_path / "bad.pt2f"
    bad.write_bytes(bytes(raw))
    pt2format.save_weights({"0": torch.randn(2, 4)}, tmp_path / "in.pt2f", progress=False)
    r = subprocess.run([str(runner_exe), str(bad), "--inputs", str(tmp_path / "in.pt2f"), "--output",
                        str(tmp_path / "o.pt2f")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "LoadError:" in r.stderr, r.stderr


def test_runner_concurrent_runs_of_one_program_agree(runner_exe, tmp_path):
    """Runner::run is const and thread-safe: 4 threads running one loaded program 25 times each give the
    outputs a lone run gives, bit for bit (examples/run_threads.cc); and those are load_module's."""
    exe = runner_exe.parent / "pt2f-run-threads"
    assert exe.exists(), "scripts/build_cpp.sh did not build pt2f-run-threads beside pt2f-run"
    ep = torch.export.export(MLP(), (torch.randn(8, 4),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=2, max=64)},))
    pt2format.save(ep, tmp_path / "mlp.pt2f", progress=False)
    x = torch.randn(33, 4)
    pt2format.save_weights({"0": x}, tmp_path / "in.pt2f", progress=False)
    r = subprocess.run([str(exe), str(tmp_path / "mlp.pt2f"), str(tmp_path / "in.pt2f"), "4", "25"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
    run, out = _run(runner_exe, tmp_path / "mlp.pt2f", {"0": x}, tmp_path)
    assert run.returncode == 0, run.stderr
    with torch.no_grad():
        want = pt2format.load_module(tmp_path / "mlp.pt2f")(x)
    with pt2format.open(out, mmap=False) as f:
        assert torch.equal(f.get_tensor("0"), want)


class _Halves(torch.nn.Module):
    def forward(self, x):
        a, b = x.chunk(2)
        return a * b


def test_runner_solves_a_size_that_is_only_a_derived_expression(runner_exe, tmp_path):
    """x.size(0) is 2 * d + 2 and no input has size d: the runner solves d from it (as load_module does),
    runs an even size bit for bit as load_module, and rejects an odd one as load_module does."""
    d = torch.export.Dim("d", min=1, max=32)
    ep = torch.export.export(_Halves(), (torch.randn(10, 3),), dynamic_shapes=({0: 2 * d + 2},))
    model = tmp_path / "halves.pt2f"
    pt2format.save(ep, model, progress=False)
    x = torch.randn(14, 3)
    r, out = _run(runner_exe, model, {"0": x}, tmp_path)
    assert r.returncode == 0, r.stderr
    with torch.no_grad():
        want = pt2format.load_module(model)(x)
    with pt2format.open(out, mmap=False) as f:
        assert torch.equal(f.get_tensor("0"), want)
    with pytest.raises(AssertionError):
        pt2format.load_module(model)(torch.randn(13, 3))
    r, _ = _run(runner_exe, model, {"0": torch.randn(13, 3)}, tmp_path)
    assert r.returncode == 1 and "GuardError" in r.stderr, r.stderr
