"""What each rank runs in the distributed tests (tests/distributed) and `benchmarks/bench_dcp.py --scenarios`.

`prepare(directory)` (one process) exports the tiny Llama-like program and
writes every source: single file, sharded, external safetensors, a
`dcp.save` from one process, a copy with a shard missing, a copy with a
corrupted byte, and a model whose dimension 5 no even world size divides.
The reference values are torch's own: the eager state dict and logits,
saved with `torch.save`.

`session(rank, world_size, case)` runs every scenario on one rank and
returns, per scenario, either what it measured or the type of the error it
ended in, so one set of processes covers them all. Expected values come
from torch (`distribute_tensor` of the reference, eager logits), never from
pt2format's own output.
"""

from __future__ import annotations

import os
import shutil
import time

import torch

SOURCES = ("single", "sharded", "external", "saved1")


def placements_for(name: str, tensor_shape, world_size: int):
    """A mixed plan for the state-dict tests: Shard(1) for o/down projections, Shard(0) where it divides, else Replicate."""
    from torch.distributed.tensor import Replicate, Shard

    if len(tensor_shape) == 2 and ("o_proj" in name or "down_proj" in name) and tensor_shape[1] % world_size == 0:
        return [Shard(1)]
    if len(tensor_shape) >= 1 and tensor_shape[0] % world_size == 0:
        return [Shard(0)]
    return [Replicate()]


def prepare(directory: str) -> dict:
    import safetensors.torch

    import pt2format
    import pt2format.dcp
    import torch.distributed.checkpoint as dcp
    from dist_models import export_tiny_llama

    ep, ids, logits = export_tiny_llama()
    # Every state entry: parameters, buffers and tensor constants (the rotary inv_freq is a non-persistent buffer).
    state = {k: v.detach().clone() for k, v in ep.state_dict.items()}
    state.update({k: v.detach().clone() for k, v in ep.constants.items() if isinstance(v, torch.Tensor)})
    case = {"dir": directory}

    def at(*parts):
        path = os.path.join(directory, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    case["ref"] = at("ref.pt")
    torch.save({"state": state, "ids": ids, "logits": logits}, case["ref"])
    case["single"] = at("single", "model.pt2f")
    pt2format.save(ep, case["single"], progress=False)
    case["sharded"] = at("sharded", "model.pt2f")
    pt2format.save(ep, case["sharded"], progress=False, max_shard_size=40_000)
    case["external"] = at("external", "model.pt2f")
    safetensors.torch.save_file(state, at("external", "model.safetensors"))
    pt2format.save(ep, case["external"], progress=False, external_data=at("external", "model.safetensors"))
    # Saved by DCP from one process (no process group), the program from a weights=False load.
    case["saved1"] = at("saved1", "model.pt2f")
    skeleton = pt2format.load(case["single"], weights=False)
    dcp.save(state, storage_writer=pt2format.dcp.StorageWriter(case["saved1"], program=skeleton))
    # Broken copies, used by rank 1 only.
    shutil.copytree(os.path.dirname(case["sharded"]), at("missing"))
    shards = sorted(n for n in os.listdir(at("missing")) if n.endswith(".pt2shard"))
    os.remove(at("missing", shards[-1]))
    case["missing"] = at("missing", "model.pt2f")
    case["corrupt"] = at("corrupt", "model.pt2f")
    shutil.copy(case["single"], case["corrupt"])
    with pt2format.read(case["single"]) as f:
        row = f.package.tensors[[e.tensor for e in f.package.programs[0].state if e.name.endswith("lm_head.weight")][0]]
        st = f.package.storages[row.storage]
        pos = f.header.sections[1].offset + st.offset + st.size // 2
    with open(case["corrupt"], "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x40]))
    odd = torch.nn.Linear(6, 5)
    case["odd"] = at("odd", "odd.pt2f")
    pt2format.save(torch.export.export(odd, (torch.randn(2, 6),)), case["odd"], progress=False)
    case["out2"] = at("out2", "model.pt2f")
    case["mixed"] = at("mixed", "weights.pt2f")
    return case


def _run(results: dict, name: str, fn) -> None:
    from torch.distributed.checkpoint.api import CheckpointException

    from pt2format.loaders._sharded import first_failure

    start = time.perf_counter()
    try:
        results[name] = {"ok": True, **(fn() or {})}
    except (Exception, CheckpointException) as e:  # noqa: BLE001 - the parent asserts on the type
        inner = first_failure(e)
        results[name] = {"ok": False, "error": type(e).__name__, "inner": type(inner).__name__,
                         "message": str(e)[:400]}
    results[name]["seconds"] = round(time.perf_counter() - start, 2)


def _load_state(path: str, ref: dict, mesh, world_size: int) -> dict:
    """dcp.load into DTensors (mixed placements) and one plain tensor; compare with torch's own split of the reference."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor import distribute_tensor

    import pt2format.dcp

    names = sorted(ref)
    plain = names[0]
    state = {}
    for k in names:
        if k == plain:
            state[k] = torch.zeros_like(ref[k])
        else:
            state[k] = distribute_tensor(torch.zeros_like(ref[k]), mesh, placements_for(k, ref[k].shape, world_size))
    dcp.load(state, storage_reader=pt2format.dcp.StorageReader(path))
    for k in names:
        if k == plain:
            got, want = state[k], ref[k]
        else:
            got = state[k].to_local()
            want = distribute_tensor(ref[k], mesh, state[k].placements).to_local()
        if not torch.equal(got, want):
            raise AssertionError(f"{k}: local shard differs from torch's split of the reference")
    return {"tensors": len(names)}


def _load_sharded_tensor(path: str, ref: dict, world_size: int) -> dict:
    """dcp.load into a ShardedTensor (torch's older sharded type, row-chunked): each rank's shard equals those rows."""
    import warnings

    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed._shard.sharded_tensor import empty as sharded_empty
    from torch.distributed._shard.sharding_spec import ChunkShardingSpec

    import pt2format.dcp

    name = next(k for k in sorted(ref) if k.endswith("embed_tokens.weight"))
    spec = ChunkShardingSpec(dim=0, placements=[f"rank:{r}/cpu" for r in range(world_size)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ShardedTensor is deprecated in favour of DTensor; DCP still loads it
        st = sharded_empty(spec, *ref[name].shape)
    dcp.load({name: st}, storage_reader=pt2format.dcp.StorageReader(path))
    shard = st.local_shards()[0]
    begin, rows = shard.metadata.shard_offsets[0], shard.metadata.shard_sizes[0]
    if not torch.equal(shard.tensor, ref[name][begin:begin + rows]):
        raise AssertionError(f"rank {dist.get_rank()}: ShardedTensor shard differs from rows {begin}:{begin + rows}")
    return {"rows": rows}


def _tensor_parallel(case: dict, ref: dict, mesh) -> dict:
    from torch.distributed.tensor import DTensor, Shard

    import pt2format
    from dist_models import tp_plan

    module = pt2format.load_module(case["single"], device_mesh=mesh, placements=tp_plan())
    q = module.module.get_parameter("model.model.layers.0.self_attn.q_proj.weight")
    o = module.module.get_parameter("model.model.layers.0.self_attn.o_proj.weight")
    if not (isinstance(q, DTensor) and q.placements == (Shard(0),) and o.placements == (Shard(1),)):
        raise AssertionError(f"placements not applied: {type(q).__name__} {getattr(q, 'placements', None)}")
    with torch.no_grad():
        out = module(ref["ids"])
    return {"maxdiff": float((out - ref["logits"]).abs().max()), "q_local": list(q.to_local().shape),
            "q_global": list(q.shape)}


def _save(case: dict, ref: dict, mesh, world_size: int) -> dict:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor import distribute_tensor

    import pt2format
    import pt2format.dcp

    state = {k: distribute_tensor(v, mesh, placements_for(k, v.shape, world_size)) for k, v in ref.items()}
    zeros = {k: distribute_tensor(torch.zeros_like(v), mesh, placements_for(k, v.shape, world_size))
             for k, v in ref.items()}
    skeleton = pt2format.load(case["single"], weights=False)
    # A checkpoint of zeros first: the real save replaces its main file and shard files, as a training loop's does.
    for s in (zeros, state):
        dcp.save(s, storage_writer=pt2format.dcp.StorageWriter(case["out2"], program=skeleton))
    return {}


def mixed_state() -> dict:
    """Tensors for the replicated / plain / uneven save: the same values in every process (seeded generator)."""
    g = torch.Generator().manual_seed(0)
    return {"rep": torch.randn(6, 5, generator=g), "plain": torch.randn(7, generator=g),
            "uneven": torch.randn(5, 3, generator=g), "cols": torch.randn(4, 6, generator=g)}


def _save_mixed(case: dict, mesh) -> dict:
    """dcp.save of a Replicate DTensor, a plain tensor, a Shard(0) of 5 rows (uneven) and a Shard(1), no program."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import pt2format.dcp

    ref = mixed_state()
    state = {"rep": distribute_tensor(ref["rep"], mesh, [Replicate()]), "plain": ref["plain"],
             "uneven": distribute_tensor(ref["uneven"], mesh, [Shard(0)]),
             "cols": distribute_tensor(ref["cols"], mesh, [Shard(1)])}
    dcp.save(state, storage_writer=pt2format.dcp.StorageWriter(case["mixed"]))
    return {}


def session(rank: int, world_size: int, case: dict, only=None) -> dict:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard

    import pt2format
    import pt2format.dcp
    from dist_models import tp_plan

    mesh = init_device_mesh("cpu", (world_size,))
    ref = torch.load(case["ref"], weights_only=True)
    results: dict = {}

    def want(name):
        return only is None or name in only

    for src in SOURCES:
        if want(f"load:{src}"):
            _run(results, f"load:{src}", lambda: _load_state(case[src], ref["state"], mesh, world_size))
    if want("load:sharded_tensor"):
        _run(results, "load:sharded_tensor", lambda: _load_sharded_tensor(case["single"], ref["state"], world_size))
    if want("load:out2") and os.path.exists(case["out2"]):  # saved by another world size earlier
        _run(results, "load:out2", lambda: _load_state(case["out2"], ref["state"], mesh, world_size))
    if want("tensor_parallel"):
        _run(results, "tensor_parallel", lambda: _tensor_parallel(case, ref, mesh))
    if want("save"):
        _run(results, "save", lambda: _save(case, ref["state"], mesh, world_size))
    if want("save_mixed"):
        _run(results, "save_mixed", lambda: _save_mixed(case, mesh))
    mine = case["sharded"] if rank == 0 else case["missing"]
    if want("missing_shard"):
        _run(results, "missing_shard", lambda: pt2format.load_module(mine, device_mesh=mesh, placements=tp_plan()))
    if want("missing_shard_dcp"):
        _run(results, "missing_shard_dcp", lambda: dcp.load(
            {k: torch.zeros_like(v) for k, v in ref["state"].items()},
            storage_reader=pt2format.dcp.StorageReader(mine)))
    if want("checksum"):
        mine_c = case["single"] if rank == 0 else case["corrupt"]
        _run(results, "checksum", lambda: pt2format.load_module(mine_c, device_mesh=mesh, placements=tp_plan(),
                                                                verify_data=True))
    if want("indivisible"):
        _run(results, "indivisible", lambda: pt2format.load_module(case["odd"], device_mesh=mesh,
                                                                   placements={"weight": Shard(0)}))
    return results
