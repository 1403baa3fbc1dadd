"""pt2format on several processes: torch.multiprocessing spawn, gloo on CPU, world size 2 (4 in benchmarks/bench_dcp.py).

One set of two processes runs every scenario (tests/support/dist_workers.py)
and reports, per rank, what it measured or the error it ended in; the tests
below judge those reports. Expected values are torch's: its own split of
the reference tensors (`distribute_tensor`) and the eager model's logits.
No rank may hang: the process group times out after 60 s and the harness
kills any rank still alive after 150 s (HungError fails every test here).
"""

from __future__ import annotations

import os

import pytest
import torch

import pt2format

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

WORLD_SIZE = 2


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    import dist_harness
    import dist_workers

    case = dist_workers.prepare(str(tmp_path_factory.mktemp("dcp")))
    reports = dist_harness.run(dist_workers.session, WORLD_SIZE, case, timeout=150)
    return case, reports


def _each(reports, name):
    return [r[name] for r in reports]


@pytest.mark.parametrize("source", ["single", "sharded", "external", "saved1"])
def test_dcp_load_fills_each_ranks_slices(session, source):
    """dcp.load with StorageReader: DTensors (Shard(0), Shard(1), Replicate) and a plain tensor equal torch's split."""
    _, reports = session
    for rank, rep in enumerate(_each(reports, f"load:{source}")):
        assert rep["ok"], f"rank {rank}: {rep}"
        assert rep["tensors"] > 10


def test_dcp_load_fills_a_sharded_tensor(session):
    """ShardedTensor (row-chunked over the 2 ranks): each rank's shard equals those rows of the reference."""
    _, reports = session
    for rank, rep in enumerate(_each(reports, "load:sharded_tensor")):
        assert rep["ok"], f"rank {rank}: {rep}"
        assert rep["rows"] == 128 // WORLD_SIZE


def test_tensor_parallel_llama_matches_single_process(session):
    """load_module(device_mesh=, placements=) runs the Llama-like program tensor-parallel; logits match eager."""
    _, reports = session
    for rank, rep in enumerate(_each(reports, "tensor_parallel")):
        assert rep["ok"], f"rank {rank}: {rep}"
        assert rep["q_local"] == [rep["q_global"][0] // WORLD_SIZE, rep["q_global"][1]]
        assert rep["maxdiff"] <= 1e-5, f"rank {rank}: max abs difference {rep['maxdiff']}"


def test_saved_on_two_ranks_loads_in_one_process(session):
    """dcp.save from 2 ranks (mixed Shard(0)/Shard(1)/Replicate DTensors) with a program, over a checkpoint of
    zeros: a valid file, same state, same outputs, and no partial or replaced file left behind."""
    case, reports = session
    for rank, rep in enumerate(_each(reports, "save")):
        assert rep["ok"], f"rank {rank}: {rep}"
    path = case["out2"]
    pt2format.validate(path)  # header, program, shard files, every checksum
    ref = torch.load(case["ref"], weights_only=True)
    ep = pt2format.load(path)
    for name, want in ref["state"].items():
        got = ep.state_dict[name] if name in ep.state_dict else ep.constants[name]
        assert torch.equal(got, want), name
    with torch.no_grad():
        out = ep.module()(ref["ids"])
    torch.testing.assert_close(out, ref["logits"], rtol=0, atol=1e-5)
    shards = [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".pt2shard")]
    assert len(shards) == WORLD_SIZE, shards  # each rank's own file, the evenly split tensors spread over both
    hidden = [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".")]
    assert hidden == [], hidden  # partial shards renamed, replaced ones unlinked (the ranks waited at exit)


def test_saved_on_two_ranks_loads_with_dcp_in_one_process(session):
    """The file written by 2 ranks, read back by dcp.load without a process group (world size 1)."""
    import torch.distributed.checkpoint as dcp

    import pt2format.dcp

    case, _ = session
    ref = torch.load(case["ref"], weights_only=True)["state"]
    state = {k: torch.zeros_like(v) for k, v in ref.items()}
    dcp.load(state, storage_reader=pt2format.dcp.StorageReader(case["out2"]), no_dist=True)
    for k in ref:
        assert torch.equal(state[k], ref[k]), k


def test_replicated_plain_and_uneven_chunks_saved_on_two_ranks(session):
    """Replicate (DCP has one rank write it), a plain tensor, Shard(0) of 5 rows over 2 ranks, Shard(1): one valid file."""
    import dist_workers

    case, reports = session
    for rank, rep in enumerate(_each(reports, "save_mixed")):
        assert rep["ok"], f"rank {rank}: {rep}"
    pt2format.validate(case["mixed"])
    with pt2format.open(case["mixed"]) as f:
        for name, want in dist_workers.mixed_state().items():
            assert torch.equal(f.get_tensor(name), want), name


@pytest.mark.parametrize("scenario,error", [
    ("missing_shard", "SegmentError"),
    ("checksum", "ChecksumError"),
    ("indivisible", "LoadError"),
])
def test_bad_input_is_a_typed_error_on_every_rank(session, scenario, error):
    """A shard missing on rank 1 only, a corrupted byte on rank 1 only, a Shard(0) of size 5 over 2 ranks."""
    _, reports = session
    for rank, rep in enumerate(_each(reports, scenario)):
        assert not rep["ok"] and rep["error"] == error, f"rank {rank}: {rep}"


def test_missing_shard_through_dcp_load_is_reported_on_every_rank(session):
    """Plain dcp.load: DCP gathers rank 1's SegmentError into a CheckpointException raised on both ranks."""
    _, reports = session
    for rank, rep in enumerate(_each(reports, "missing_shard_dcp")):
        assert not rep["ok"] and rep["error"] == "CheckpointException" and rep["inner"] == "SegmentError", rep
