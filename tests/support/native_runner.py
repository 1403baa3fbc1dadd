"""Helpers for the C++ runner's tests (pt2f-run): corpus programs to files, inputs and outputs as weight files.

A case's program is exported here, saved in one encoding, its example inputs
flattened in the program's own input order (`call_spec.in_spec`) and saved with
`pt2format.save_weights` under the names "0", "1", ... as pt2f-run reads them.
The reference is `pt2format.load_module` on the same inputs, run twice (the
state after two runs is compared too) with one intra-op thread, as the runner
runs with `--threads 1`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree

import pt2format
from conformance import _behave as behave
from conformance import corpus
from conformance.adapters import trusted_subclasses
from conformance._tensorio import tensor_bytes


@dataclass
class Job:
    """One program of one case in one encoding: the files pt2f-run reads and writes."""

    case: str
    program: str | None
    encoding: str
    model: Path
    inputs: Path
    output: Path
    state: Path
    why_not: str | None = None  # the inputs cannot travel in a weight file (None: they can)
    expected: dict = field(default_factory=dict)  # position -> tensor after the second run
    expected_state: dict = field(default_factory=dict)
    deterministic: bool = True


def as_tensor(v):
    """A flat input or output as a weight file holds it: scalars as 0-dim int64/float64/bool tensors."""
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool)
    if isinstance(v, int):
        return torch.tensor(v, dtype=torch.int64)
    if isinstance(v, float):
        return torch.tensor(v, dtype=torch.float64)
    raise TypeError(f"a {type(v).__name__} cannot travel in a weight file")


def _clone(tree):
    return pytree.tree_map_only(torch.Tensor, torch.clone, tree)


def prepare(case_name: str, encoding: str, directory: Path) -> list[Job]:
    """Export `case_name`, save it, write its inputs and compute load_module's outputs and state after two runs."""
    case = corpus.get_case(case_name)
    for mod in case.child_imports:
        importlib.import_module(mod)
    built = case.build()
    multi = isinstance(built, dict)
    specs = built if multi else {"forward": built}
    eps = {name: spec.export() for name, spec in specs.items()}
    model = directory / f"{case_name}.{encoding}.pt2f"
    pt2format.save(eps if multi else eps["forward"], model, encoding=encoding, progress=False)
    jobs = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, spec in specs.items():
            stem = f"{case_name}.{name}.{encoding}"
            job = Job(case_name, name if multi else None, encoding, model, directory / f"{stem}.in.pt2f",
                      directory / f"{stem}.out.pt2f", directory / f"{stem}.state.pt2f",
                      deterministic=case.deterministic)
            jobs.append(job)
            flat = fx_pytree.tree_flatten_spec((tuple(spec.args), dict(spec.kwargs)), eps[name].call_spec.in_spec)
            try:
                weights = {str(i): as_tensor(v).clone() for i, v in enumerate(flat) if v is not None}
            except TypeError as e:
                job.why_not = str(e)
                continue
            pt2format.save_weights(weights, job.inputs, progress=False)
            module = pt2format.load_module(model, program=job.program, allow_subclasses=trusted_subclasses())
            args, kwargs = _clone(tuple(spec.args)), _clone(dict(spec.kwargs))
            with torch.no_grad():  # the same inputs twice, as pt2f-run's runs get them (a mutated input stays so)
                module(*args, **kwargs)
                out = module(*args, **kwargs)
            leaves = pytree.tree_flatten(out, is_leaf=lambda x: x is None)[0]
            job.expected = {i: as_tensor(v) for i, v in enumerate(leaves) if v is not None}
            job.expected_state = behave.snapshot(module)
    finally:
        torch.set_num_threads(threads)
    return jobs


def run_batch(exe: Path, jobs: list[Job], directory: Path, timeout: float = 1800) -> list[str]:
    """Run every job in one pt2f-run process (--batch, --threads 1, two runs each); one result line per job."""
    import subprocess

    table = directory / "jobs.tsv"
    table.write_text("".join(f"{j.model}\t{j.inputs}\t{j.output}\t{j.program or ''}\t2\t{j.state}\n" for j in jobs))
    r = subprocess.run([str(exe), "--batch", str(table), "--threads", "1"], capture_output=True, text=True,
                       timeout=timeout)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != len(jobs):
        raise AssertionError(f"pt2f-run --batch failed (exit {r.returncode}): {r.stderr[-2000:]}")
    return lines


def compare(job: Job) -> str | None:
    """Why the runner's outputs or state differ from load_module's (None: bit-identical)."""
    # read, not mapped: the tensors outlive the file (and clone() has no kernel for sub-byte dtypes)
    with pt2format.open(job.output, mmap=False) as f:
        got = {int(k): f.get_tensor(k) for k in f.keys()}
    if set(got) != set(job.expected):
        return f"output positions {sorted(got)} vs load_module's {sorted(job.expected)}"
    for i, want in job.expected.items():
        g = got[i]
        if g.dtype != want.dtype or tuple(g.shape) != tuple(want.shape):
            return f"output {i}: {g.dtype}{list(g.shape)} vs load_module's {want.dtype}{list(want.shape)}"
        if job.deterministic and tensor_bytes(g.contiguous()) != tensor_bytes(want.contiguous()):
            return f"output {i}: values differ"
    with pt2format.open(job.state, mmap=False) as f:
        ours = {k: f.get_tensor(k) for k in f.keys()}
    missing = sorted(set(job.expected_state) - set(ours))
    if missing:
        return f"state entries missing from the runner's state: {missing}"
    if job.deterministic:
        for name, bits in job.expected_state.items():
            if not torch.equal(bits, behave._bits(ours[name])):
                return f"state {name!r} after two runs differs"
    return None
